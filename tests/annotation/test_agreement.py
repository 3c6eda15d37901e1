"""Agreement of a campaign from its stored answers, against hand-computed α."""

from __future__ import annotations

import pytest

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
