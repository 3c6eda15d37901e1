"""Pairwise judge runs through the normal run path: every pair of each document judged in
both orders (a tiny local model; fake judges that read the prompt where numbers must be
known), pair selection (all, k seeded, a campaign's), ties, sampled answers, the stored
preferences, the summary and agreement service, the run's page and API."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import pytest
from django.urls import reverse

from annotation.models import Campaign, Item, PairwiseJudgment
from scoring.lm.rating import RatingDistribution, RatingRequest
from studies.api.serializers.runs import RunCreateSerializer
from studies.management.commands.run_metric import Command
from studies.models import AllowedModel, Aspect, MetricRun, MetricScore, Output, Study
from studies.services.analysis import pairwise_judge as service
from studies.services.runs import (
    METRICS,
    RunError,
    RunRequest,
    execute_run,
    metric_choices,
    per_aspect,
    queue_for,
    start_run,
)
from tests.factories import UserFactory, import_jsonl
from tests.studies.conftest import SYSTEM_QUALITY, known_quality_records

pytestmark = pytest.mark.django_db


@pytest.fixture
def known_quality_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = known_quality_records()
    return import_jsonl(write_jsonl(records, name="judged.jsonl"), "pairs", cast["owner"])


def _shown(prompt: str) -> tuple[str, str]:
    found = re.findall(r"Output [AB]:\n\nSummary by (s\d)", prompt)
    assert len(found) == 2, prompt
    return found[0], found[1]


class Judge:
    """p(A) from the systems shown: 0.8 for the better one ("content"), or 0.7 whatever
    is shown ("position"); ties get ``tie`` of the mass."""

    def __init__(self, kind: str = "content", tie: float = 0.0) -> None:
        self.kind, self.tie = kind, tie
        self.seen: list[RatingRequest] = []

    def rating_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        self.seen.extend(requests)
        out = []
        for r in requests:
            a, b = _shown(r.prompt)
            p = (
                0.7
                if self.kind == "position"
                else 0.8
                if SYSTEM_QUALITY[a] > SYSTEM_QUALITY[b]
                else 0.2
            )
            probs = [p * (1 - self.tie), (1 - p) * (1 - self.tie), self.tie][: len(r.labels)]
            out.append(RatingDistribution(r.key, r.labels, tuple(probs), label_mass=0.5))
        return out


def _start(dataset, model, **options):  # type: ignore[no-untyped-def]
    request = RunRequest(metric="pairwise", aspect="coherence", model=model, **options)
    return start_run(dataset, request, enqueue=False, local_paths=True)


def _values(run: MetricRun) -> dict[tuple[str, str], float | None]:
    return {
        (s.output.document.doc_key, s.output.system_id): s.value
        for s in MetricScore.objects.filter(run=run).select_related("output__document")
    }


def test_the_registry_lists_the_pairwise_judge_everywhere_metrics_are_listed():
    assert "pairwise" in METRICS and ("pairwise", "Pairwise judge") in metric_choices()
    assert "pairwise" in RunCreateSerializer().fields["metric"].choices
    assert per_aspect("pairwise") and queue_for("pairwise") == "gpu"
    assert queue_for("pairwise", {"endpoint": {"id": 1}}) == "io"
    parser = Command().create_parser("manage.py", "run_metric")
    metric = next(a for a in parser._actions if a.dest == "metric")
    assert "pairwise" in metric.choices


def test_a_run_judges_every_pair_of_each_document_in_both_orders_on_the_local_engine(
    known_quality_dataset, long_context_tiny_model
):
    run = _start(known_quality_dataset, long_context_tiny_model)
    assert run.label == f"pairwise:{long_context_tiny_model.rsplit('/', 1)[-1]}:COH:all"
    assert (run.config["n_pairs"], run.config["n_requests"], run.total) == (9, 18, 9)
    coh = Aspect.objects.get(code="COH")
    assert run.config["aspect_definition"] == coh.definition and run.config["ties"] is False
    assert execute_run(run.pk, chunk_outputs=1) == "succeeded"
    scores = list(MetricScore.objects.filter(run=run).select_related("output__document"))
    assert len(scores) == 9 and not any(s.error for s in scores)
    by_doc: dict[str, float] = {}
    for s in scores:
        assert 0 < s.value < 1 and s.details["n_pairs"] == 2
        by_doc[s.output.document.doc_key] = by_doc.get(s.output.document.doc_key, 0) + s.value
        for pair in s.details["pairs"]:  # the pairs it leads: the other output has a higher id
            assert pair["vs"] > s.output_id and len(pair["ab"]) == len(pair["ba"]) == 2
            assert math.isclose(sum(pair["ab"]), 1.0) and math.isclose(sum(pair["ba"]), 1.0)
    # each pair's two preferences sum to one: a document's 3 pairs share 3 points over 2 each
    assert all(total * 2 == pytest.approx(3.0) for total in by_doc.values())
    assert sum(len(s.details["pairs"]) for s in scores) == 9
    assert execute_run(run.pk) == "not pending"


def test_stored_values_are_the_mean_preferences_over_both_orders(
    known_quality_dataset, long_context_tiny_model
):
    run = _start(known_quality_dataset, long_context_tiny_model)
    judge = Judge()
    assert execute_run(run.pk, model_factory=lambda r: judge) == "succeeded"
    assert len(judge.seen) == 18 and len({r.group for r in judge.seen}) == 3
    values = _values(run)
    # s1 beats both at 0.8; s0 loses to s1, beats s2; s2 loses both
    assert values[("d0", "s1")] == pytest.approx(0.8)
    assert values[("d0", "s0")] == pytest.approx(0.5)
    assert values[("d0", "s2")] == pytest.approx(0.2)
    biased = _start(known_quality_dataset, long_context_tiny_model)
    execute_run(biased.pk, model_factory=lambda r: Judge("position"))
    assert list(_values(biased).values()) == [pytest.approx(0.5)] * 9  # the orders cancel out


def test_k_sampled_pairs_are_seeded_and_ties_are_a_third_answer(
    known_quality_dataset, long_context_tiny_model
):
    run = _start(
        known_quality_dataset,
        long_context_tiny_model,
        pairs="k",
        pairs_per_doc=1,
        seed=4,
        ties=True,
    )
    assert run.label.endswith(":COH:k1:ties") and run.config["pairs_per_doc"] == 1
    assert (run.config["n_pairs"], run.config["n_requests"]) == (3, 6)
    judge = Judge(tie=0.5)
    execute_run(run.pk, model_factory=lambda r: judge)
    assert all(r.labels[-1].strip() == "C" and len(r.labels) == 3 for r in judge.seen)
    scores = list(MetricScore.objects.filter(run=run))
    judged = [s for s in scores if s.value is not None]
    assert len(judged) == 6 and all(
        s.error == "in none of the run's pairs" for s in scores if s.value is None
    )
    assert all(len(p["ab"]) == 3 for s in scores for p in s.details["pairs"])
    again = _start(
        known_quality_dataset,
        long_context_tiny_model,
        pairs="k",
        pairs_per_doc=1,
        seed=4,
        ties=True,
    )
    execute_run(again.pk, model_factory=lambda r: Judge(tie=0.5))
    assert {k for k, v in _values(again).items() if v is not None} == {
        k for k, v in _values(run).items() if v is not None
    }


def _campaign(dataset, cast, pairs, answers=()):  # type: ignore[no-untyped-def]
    """A pairwise campaign on document d0 with items (system a, system b), a's output
    first (items keep their outputs in id order), and answers (annotator, item index,
    choice)."""
    study = Study.objects.create(name="prefs", dataset=dataset, owner=cast["owner"])
    campaign = Campaign.objects.create(study=study, name="pairs", mode="pairwise")
    coh = Aspect.objects.get(code="COH")
    campaign.aspects.add(coh)
    out = {o.system_id: o for o in Output.objects.filter(document__doc_key="d0")}
    items = [
        Item.objects.create(
            campaign=campaign,
            document=out[a].document,
            output_a=out[a],
            output_b=out[b],
            system_key=f"{a} vs {b}",
            position=k,
        )
        for k, (a, b) in enumerate(pairs)
    ]
    for who, k, choice in answers:
        PairwiseJudgment.objects.create(
            item=items[k], aspect=coh, annotator=who, choice=choice, left_output=items[k].output_a
        )
    return campaign


def test_a_campaigns_pairs_are_frozen_and_only_its_documents_are_scored(
    known_quality_dataset, cast, long_context_tiny_model
):
    campaign = _campaign(known_quality_dataset, cast, [("s0", "s1")])
    run = _start(
        known_quality_dataset, long_context_tiny_model, pairs="campaign", campaign=campaign.pk
    )
    s0, s1 = (Output.objects.get(document__doc_key="d0", system_id=s).pk for s in ("s0", "s1"))
    assert run.config["campaign_pairs"] == [[s0, s1]]
    assert run.config["doc_keys"] == ["d0"] and run.total == 3
    assert run.config["campaign"]["id"] == campaign.pk and run.label.endswith(
        f":campaign{campaign.pk}"
    )
    execute_run(run.pk, model_factory=lambda r: Judge())
    values = _values(run)
    assert values == {
        ("d0", "s0"): pytest.approx(0.2),
        ("d0", "s1"): pytest.approx(0.8),
        ("d0", "s2"): None,
    }
    narrowed = _start(
        known_quality_dataset,
        long_context_tiny_model,
        pairs="campaign",
        campaign=campaign.pk,
        doc_keys=("d0", "d1"),
    )
    assert narrowed.config["doc_keys"] == ["d0"] and narrowed.total == 3
    with pytest.raises(RunError, match="no pairwise campaign #999"):
        _start(known_quality_dataset, long_context_tiny_model, pairs="campaign", campaign=999)
    with pytest.raises(RunError, match="Choose the pairwise campaign"):
        _start(known_quality_dataset, long_context_tiny_model, pairs="campaign")


def test_sampled_answers_need_a_sampler_and_say_so(known_quality_dataset, long_context_tiny_model):
    run = _start(
        known_quality_dataset,
        long_context_tiny_model,
        estimation="sampled",
        n_samples=3,
        limit_docs=1,
    )
    assert run.label.endswith(":sampled") and run.config["n_pairs"] == 3

    class Sampler:
        def sample(self, prompt, *, n, temperature, max_new_tokens, seed):  # type: ignore[no-untyped-def]
            a, b = _shown(prompt)
            return ["A" if SYSTEM_QUALITY[a] > SYSTEM_QUALITY[b] else "B"] * n

    assert execute_run(run.pk, model_factory=lambda r: Sampler()) == "succeeded"
    values = _values(run)
    assert values[("d0", "s1")] == 1.0 and values[("d0", "s2")] == 0.0
    assert all(s.details["sampled"] for s in MetricScore.objects.filter(run=run))
    plain = _start(known_quality_dataset, long_context_tiny_model, limit_docs=1)
    assert execute_run(plain.pk, model_factory=lambda r: Sampler()) == "failed"
    plain.refresh_from_db()
    assert "gives no probabilities" in plain.error


def test_the_summary_ranks_the_systems_and_measures_the_position_bias(
    known_quality_dataset, long_context_tiny_model
):
    run = _start(known_quality_dataset, long_context_tiny_model)
    execute_run(run.pk, model_factory=lambda r: Judge())
    found = service.summary(run, n_resamples=200)
    assert (found.n_pairs, found.n_documents, found.n_failed) == (9, 3, 0)
    assert [r.system for r in found.systems] == ["s1", "s0", "s2"]
    assert [r.win_rate for r in found.systems] == pytest.approx([0.8, 0.5, 0.2])
    assert sum(r.strength for r in found.systems) == pytest.approx(0.0, abs=1e-9)
    # every document gives the same wins, and three documents are too few to resample:
    # no zero-width intervals, and the report says why
    assert all(math.isnan(r.low) and math.isnan(r.high) for r in found.systems)
    assert "3 documents: too few to resample for intervals" in found.ranking_problem
    assert found.position_consistency == 1.0 and found.first_position_share == 0.5
    assert (found.n_first, found.n_second, found.first_position_p) == (9, 9, pytest.approx(1.0))

    biased = _start(known_quality_dataset, long_context_tiny_model)
    execute_run(biased.pk, model_factory=lambda r: Judge("position"))
    bias = service.summary(biased, n_resamples=50)
    assert bias.position_consistency == 0.0 and bias.first_position_share == 1.0
    assert bias.first_position_p == pytest.approx(2 * 0.5**18) and bias.mean_first == pytest.approx(
        0.7
    )


def test_agreement_with_likert_preferences_at_a_margin_and_with_a_campaign(
    known_quality_dataset, cast, long_context_tiny_model
):
    run = _start(known_quality_dataset, long_context_tiny_model)
    execute_run(run.pk, model_factory=lambda r: Judge())
    exact = service.human_agreement(run, "likert", n_resamples=100)
    assert exact.with_ties.value == 1.0 and exact.kappa.value == pytest.approx(1.0)
    assert (exact.n_items, exact.n_documents) == (9, 3)
    assert math.isnan(exact.human_with_ties.value)  # one import file: no second annotator
    # margin 1.5: only s1 vs s2 (Δ = 2) stays a preference; the judge never says tie
    wide = service.human_agreement(
        run, "likert:file:judged.jsonl", margin=1.5, n_resamples=50, interval="percentile"
    )
    assert wide.with_ties.value == pytest.approx(1 / 3) and wide.without_ties.value == 1.0
    assert wide.interval == "percentile" and wide.with_ties.low == wide.with_ties.high == 1 / 3
    with pytest.raises(service.PairwiseUnavailable, match="Unknown interval"):
        service.human_agreement(run, "likert", interval="normal")  # type: ignore[arg-type]

    ann1, ann2 = (UserFactory(username=n, role="annotator") for n in ("ann1", "ann2"))
    # items (s0, s1) and (s1, s2); the judge prefers s1 in both: b, then a
    answers = [(ann1, 0, "b"), (ann2, 0, "b"), (ann1, 1, "a"), (ann2, 1, "b")]
    campaign = _campaign(known_quality_dataset, cast, [("s0", "s1"), ("s1", "s2")], answers)
    found = service.human_agreement(run, f"pairwise:{campaign.pk}", n_resamples=50)
    assert found.n_items == 2 and found.with_ties.value == pytest.approx(3 / 4)
    assert found.human_with_ties.value == pytest.approx(1 / 2)
    sources = [value for value, _ in service.agreement_sources(run)]
    assert "likert" in sources and f"pairwise:{campaign.pk}" in sources
    with pytest.raises(service.PairwiseUnavailable, match="no pairwise campaign"):
        service.human_agreement(run, "pairwise:999")
    with pytest.raises(service.PairwiseUnavailable, match="No judged pair"):
        service.human_agreement(run, "likert:file:other.jsonl")


def test_the_run_page_the_report_page_and_the_api_show_the_pairs(
    client, cast, known_quality_dataset, long_context_tiny_model
):
    run = _start(known_quality_dataset, long_context_tiny_model)
    execute_run(run.pk, model_factory=lambda r: Judge())
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:run-detail", args=[run.pk])).content.decode()
    assert "9 pairs × 2 orders = 18 requests" in page
    assert f'hx-get="{reverse("studies:run-pairwise", args=[run.pk])}"' in page
    url = reverse("studies:run-pairwise", args=[run.pk])
    full = client.get(url, {"against": "likert", "margin": "0", "rule": "consistent"})
    text = full.content.decode()
    assert full.status_code == 200 and 'id="pairwise-systems"' in text and "<html" in text
    assert 'id="pairwise-agreement"' in text and "1.000" in text
    assert 'id="pairwise-no-human-pairs"' in text  # one import file: no human–human row
    fragment = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pairwise-report")
    assert b"<html" not in fragment.content and b'id="pairwise-report"' in fragment.content

    api = client.get(f"/api/runs/{run.pk}/pairwise/", {"against": "likert", "resamples": 50})
    body = api.json()
    assert api.status_code == 200 and body["summary"]["n_pairs"] == 9
    assert body["summary"]["systems"][0]["system"] == "s1"
    assert body["agreement"]["with_ties"]["value"] == 1.0
    assert body["agreement"]["human_with_ties"]["value"] is None  # NaN in JSON: null
    bad = client.get(f"/api/runs/{run.pk}/pairwise/", {"against": "nonsense"}).json()
    assert bad["agreement"] is None and "Unknown source" in bad["agreement_problem"]
    new = client.get(reverse("studies:run-new", args=[known_quality_dataset.pk])).content.decode()
    assert "all pairs: 9 pairs × 2 orders = 18 requests" in new


def test_the_api_starts_a_pairwise_run_with_its_options(
    client, cast, known_quality_dataset, long_context_tiny_model
):
    client.force_login(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    AllowedModel.objects.create(hub_id=long_context_tiny_model)  # a path resolves as a local model
    body = {
        "dataset": known_quality_dataset.pk,
        "metric": "pairwise",
        "aspects": [coh.pk],
        "model": long_context_tiny_model,
        "pairs": "k",
        "pairs_per_doc": 2,
        "ties": True,
    }
    response = client.post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 201, response.json()
    config = response.json()[0]["config"]
    assert (config["pairs"], config["pairs_per_doc"], config["ties"]) == ("k", 2, True)
    assert (config["n_pairs"], config["n_requests"]) == (6, 12)
    other = MetricRun.objects.exclude(metric="pairwise").first()
    if other is not None:
        assert client.get(f"/api/runs/{other.pk}/pairwise/").status_code == 409
