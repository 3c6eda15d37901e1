"""A pairwise judge run against imported human preferences (a small pairs file): the
agreement with and without ties on the service, the run's report page, the API and the
report card; each rater of the file an annotator of their own."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from django.urls import reverse

from scoring.lm.rating import RatingDistribution, RatingRequest
from studies.models import Dataset, MetricRun
from studies.services.analysis import pairwise_judge as service
from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.runs import RunRequest, execute_run, start_run
from tests.factories import import_jsonl
from tests.studies.conftest import SYSTEM_QUALITY, known_quality_records

pytestmark = pytest.mark.django_db


def _import(path, cast) -> None:  # type: ignore[no-untyped-def]
    import_jsonl(path, "prefs", cast["owner"])


@pytest.fixture
def human_pairs_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    outputs = known_quality_records()
    _import(write_jsonl(outputs, name="judged.jsonl"), cast)
    # per document: (s0, s1) both say b; (s2, s1) ann1 b, ann2 tie; (s0, s2) both say a
    answers = [("s0", "s1", "b", "b"), ("s2", "s1", "b", "tie"), ("s0", "s2", "a", "a")]
    pairs = [
        {
            "doc_id": f"d{d}",
            "source": f"The council approved budget {d} after a long debate.",
            "system_a": a,
            "output_a": f"Summary by {a} of budget {d}.",
            "system_b": b,
            "output_b": f"Summary by {b} of budget {d}.",
            "aspect": "coherence",
            "annotator": rater,
            "winner": winner,
        }
        for d in range(3)
        for a, b, first, second in answers
        for rater, winner in (("ann1", first), ("ann2", second))
    ]
    _import(write_jsonl(pairs, name="human_pairs.jsonl"), cast)
    return Dataset.objects.get(name="prefs")


class Judge:
    """p(A) = 0.8 when the output shown first is the better one, else 0.2."""

    def rating_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        out = []
        for r in requests:
            a, b = re.findall(r"Output [AB]:\n\nSummary by (s\d)", r.prompt)
            p = 0.8 if SYSTEM_QUALITY[a] > SYSTEM_QUALITY[b] else 0.2
            out.append(RatingDistribution(r.key, r.labels, (p, 1 - p)[: len(r.labels)], 0.5))
        return out


@pytest.fixture
def run(human_pairs_dataset, long_context_tiny_model) -> MetricRun:  # type: ignore[no-untyped-def]
    request = RunRequest(metric="pairwise", aspect="coherence", model=long_context_tiny_model)
    found = start_run(human_pairs_dataset, request, enqueue=False, local_paths=True)
    execute_run(found.pk, model_factory=lambda r: Judge())
    return MetricRun.objects.get(pk=found.pk)


def test_the_judge_agrees_with_imported_pairs_with_and_without_ties(run):
    sources = dict(service.agreement_sources(run))
    assert "pairs" in sources and "pairs:human_pairs.jsonl" in sources
    found = service.human_agreement(run, "pairs", n_resamples=50, interval="percentile")
    # 18 answers, the judge never says tie: ann2's three ties are its only misses
    assert (found.n_items, found.n_documents) == (9, 3)
    assert found.with_ties.value == pytest.approx(15 / 18)
    assert found.without_ties.value == 1.0
    # the two raters are two annotators: they agree on 6 items of 9, on every sided one
    assert found.human_with_ties.value == pytest.approx(6 / 9)
    assert found.human_without_ties.value == 1.0
    one_file = service.human_agreement(run, "pairs:human_pairs.jsonl", n_resamples=20)
    assert one_file.with_ties.value == found.with_ties.value
    with pytest.raises(service.PairwiseUnavailable, match="No judged pair"):
        service.human_agreement(run, "pairs:other.jsonl", n_resamples=20)


def test_the_report_page_the_api_and_the_card_read_the_imported_pairs(client, cast, run):
    client.force_login(cast["owner"])
    url = reverse("studies:run-pairwise", args=[run.pk])
    page = client.get(url, {"against": "pairs", "interval": "percentile"}).content.decode()
    assert 'id="pairwise-agreement"' in page and "0.833" in page
    api = client.get(f"/api/runs/{run.pk}/pairwise/", {"against": "pairs", "resamples": 50})
    body = api.json()
    assert api.status_code == 200, body
    assert body["agreement"]["with_ties"]["value"] == pytest.approx(15 / 18)
    assert body["agreement"]["without_ties"]["value"] == 1.0
    card = compute_card(run.dataset, CardParams(resamples=20))
    row = next(r for r in card["rows"] if r["run"]["pk"] == run.pk)
    assert row["human_pairs"]["with_ties"]["value"] == pytest.approx(15 / 18)
    assert row["human_pairs"]["human_without_ties"]["value"] == 1.0
