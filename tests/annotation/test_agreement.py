"""Agreement of a campaign from its stored answers, against hand-computed α."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.services import agreement, answers, assignment
from studies.models import Aspect

pytestmark = pytest.mark.django_db


def answer(campaign, user, by_position: dict[int, object]) -> None:  # type: ignore[no-untyped-def]
    aspect = Aspect.objects.get(code="COH").pk
    while (lease := assignment.claim_next(campaign, user)) is not None:
        value = by_position[lease.item.position]
        if campaign.is_pairwise:  # given as a/b: answer with the side it was shown on
            value = (
                {"a": "left", "b": "right"}[value]
                if lease.left_is_a
                else {"a": "right", "b": "left"}[value]
            )
        answers.submit(lease.pk, user, {aspect: value})


def test_likert_alpha_is_ordinal_and_matches_the_hand_computation(make_campaign, annotators):
    # the same data as the statistics test: α = 7/9 ordinal (6/11 nominal)
    campaign = make_campaign(
        overlap=2,
        selection="random",
        sample_size=3,
        aspect_codes=("COH",),
        annotators=annotators[:2],
    )
    answer(campaign, annotators[0], {0: 1, 1: 2, 2: 3})
    answer(campaign, annotators[1], {0: 1, 1: 3, 2: 3})
    result = agreement.compute_agreement(campaign, resamples=50)
    coh = result["aspects"][0]
    assert coh["level"] == "ordinal" and coh["alpha"] == pytest.approx(7 / 9)
    assert (coh["n_units"], coh["n_answers"]) == (3, 6)
    assert coh["pairs"] == [
        {"a": "annotator", "b": "ann2", "rho": pytest.approx(0.8660254), "n": 3}
    ]


def test_pairwise_alpha_is_nominal_on_the_canonical_choice(make_campaign, annotators):
    # A: a a b b, B: a b b b → α = 8/15 whatever sides each annotator saw
    campaign = make_campaign(
        mode="pairwise",
        overlap=2,
        selection="random",
        sample_size=4,
        aspect_codes=("COH",),
        annotators=annotators[:2],
    )
    answer(campaign, annotators[0], {0: "a", 1: "a", 2: "b", 3: "b"})
    answer(campaign, annotators[1], {0: "a", 1: "b", 2: "b", 3: "b"})
    coh = agreement.compute_agreement(campaign, resamples=50)["aspects"][0]
    assert coh["level"] == "nominal" and coh["alpha"] == pytest.approx(8 / 15)


def test_a_large_campaign_is_left_to_a_worker_once(make_campaign, annotators, monkeypatch):
    campaign = make_campaign(overlap=1, aspect_codes=("COH",))
    answer(campaign, annotators[0], dict.fromkeys(range(12), 3))
    sent: list[int] = []
    from annotation import tasks
    from studies.services import queue

    monkeypatch.setattr(queue, "send", lambda name, *args: sent.append((name, *args)))
    monkeypatch.setattr(agreement, "INLINE_LIMIT", 5)
    assert agreement.available_agreement(campaign) is None
    assert agreement.available_agreement(campaign) is None
    assert sent == [("annotation.tasks.compute_agreement", campaign.pk)]
    assert tasks.compute_agreement_task(campaign.pk).startswith("12 answers")
    assert agreement.available_agreement(campaign)["n_answers"] == 12


def test_a_new_answer_shows_the_latest_agreement_while_a_worker_computes_it_again(
    make_campaign, annotators, cast, client, monkeypatch
):
    """Issue 43: the campaign page computed α and MACE in the request after every answer
    (7–8.5 s under load); it shows the latest result, marked, and a worker computes the
    new one, once per data version."""
    from annotation import tasks
    from studies.services import queue

    campaign = make_campaign(overlap=2, aspect_codes=("COH",))
    answer(campaign, annotators[0], dict.fromkeys(range(12), 3))
    first = agreement.available_agreement(campaign)  # small, never computed: in the request
    assert first is not None and first["n_answers"] == 12 and "stale" not in first
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args: sent.append((name, *args)))

    def in_a_request(*args, **kwargs):  # type: ignore[no-untyped-def]
        pytest.fail("the agreement was computed in the request")

    monkeypatch.setattr(agreement, "compute_agreement", in_a_request)
    lease = assignment.claim_next(campaign, annotators[1])
    answers.submit(lease.pk, annotators[1], {Aspect.objects.get(code="COH").pk: 4})
    shown = agreement.available_agreement(campaign)
    assert shown is not None and shown["stale"] and shown["n_answers"] == 12
    assert shown["n_answers_now"] == 13
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="agreement-stale"' in page and "Computed on 12 answers; there are 13 now" in page
    api = client.get(f"/api/campaigns/{campaign.pk}/agreement/")
    assert api.status_code == 202 and api.json()["agreement"]["stale"] is True
    assert sent == [("annotation.tasks.compute_agreement", campaign.pk)]  # asked once
    monkeypatch.undo()
    assert tasks.compute_agreement_task(campaign.pk).startswith("13 answers")
    fresh = agreement.available_agreement(campaign)
    assert fresh is not None and fresh["n_answers"] == 13 and "stale" not in fresh
