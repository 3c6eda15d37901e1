"""A tuned run's evidence page and API resource (issue 40): the candidates, the chosen one,
the test Δ with its interval exactly as ``tune_judge`` printed it, the overfitting gap and
the cost; access as the run's; no page for a run no tuner made."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from scoring.stats import Coefficient, Level, correlate
from studies.models import Aspect, MetricRun, Output, Study
from studies.services.tuning.derived import run_scores, spent_between
from studies.services.tuning.evidence import candidates, cost, tuning_evidence
from studies.services.tuning.labels import held_out_labels
from studies.services.tuning.splits import make_split
from tests.studies.judged_file import N_SYSTEMS, judged_study

pytestmark = pytest.mark.django_db
PRINTED = re.compile(
    r"test Δ (?P<statistic>.+?): (?P<delta>[+-][\d.]+) \[(?P<low>[+-][\d.]+), "
    r"(?P<high>[+-][\d.]+)\] \((?P<level>\d+)% paired bootstrap by document, "
    r"(?P<resamples>\d+) resamples; start (?P<start>-?[\d.]+) → tuned (?P<tuned>-?[\d.]+) on "
    r"(?P<documents>\d+) test documents, (?P<outputs>\d+) outputs; tune (?P<tune>-?[\d.]+), "
    r"gap (?P<gap>[+-][\d.]+)\)"
)


@pytest.fixture
def study(cast, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    return judged_study(cast["owner"], tmp_path)


@pytest.fixture
def tuned(study):  # type: ignore[no-untyped-def]
    """A calibration of judge_b on a tune/test split, and what tune_judge printed."""
    split = make_split(study, test=0.5, seed=3)
    start = MetricRun.objects.get(label="judge_b")
    out = StringIO()
    call_command(
        "tune_judge",
        "--run",
        str(start.pk),
        "--aspect",
        "COH",
        "--tuner",
        "calibration",
        "--resamples",
        "300",
        stdout=out,
    )
    first, second = out.getvalue().strip().splitlines()
    printed = PRINTED.search(second)
    assert printed, second
    return split, start, MetricRun.objects.get(pk=int(first)), printed


def login(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def spearman_on(ids: list[int], scores: dict[int, float], human: dict[int, float]) -> float:
    docs = dict(Output.objects.filter(pk__in=ids).values_list("pk", "document_id"))
    return float(
        correlate(
            [scores[pk] for pk in ids],
            [human[pk] for pk in ids],
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
            docs=[docs[pk] for pk in ids],
        ).value
    )


def test_the_api_shows_the_candidates_the_delta_as_printed_and_the_gap(tuned, cast):
    split, start, made, printed = tuned
    body = login(cast["owner"]).get(f"/api/runs/{made.pk}/tuning/").json()
    assert (body["run"], body["tuner"], body["start_run"]) == (made.pk, "calibration", start.pk)
    assert body["start_label"] == "judge_b" and body["split"] == split.pk
    assert body["options"] == {"method": "auto", "gold": "humans"} and body["seed"] == 0
    fitted = {
        "label": "method=isotonic",
        "settings": {"method": "isotonic"},
        "dev": None,
        "chosen": True,
        "examples": [],
    }
    assert body["candidates"] == [fitted] and body["chosen"] == fitted
    assert body["dev"] is None and body["tuned_on_documents"] == 15
    # the Δ with its interval: what the command printed, to its four places
    test = body["test"]
    for name in ("delta", "low", "high"):
        assert f"{test[name]:+.4f}" == printed[name], name
    for name in ("start", "tuned"):
        assert f"{test[name]:.4f}" == printed[name], name
    assert test["statistic"] == printed["statistic"] == "spearman (sample)"
    assert (test["level"], test["resamples"]) == (int(printed["level"]), 300) == (95, 300)
    assert test["low"] <= test["delta"] <= test["high"]
    assert (test["n_documents"], test["n_outputs"]) == (15, 15 * N_SYSTEMS)
    # the gap: the tuned judge on the tune documents (computed here) minus on test
    aspect = Aspect.objects.get(code="COH")
    scores = run_scores(made)
    tune_human = held_out_labels(split, aspect, "tune")
    test_human = held_out_labels(split, aspect, "test")
    on_tune = spearman_on(sorted(tune_human), scores, tune_human)
    on_test = spearman_on(sorted(test_human), scores, test_human)
    gap = body["gap"]
    assert gap["tune"] == pytest.approx(on_tune) and gap["test"] == pytest.approx(on_test)
    assert gap["tune_gap"] == pytest.approx(on_tune - on_test)
    assert f"{gap['tune_gap']:+.4f}" == printed["gap"] and f"{gap['tune']:.4f}" == printed["tune"]
    assert gap["dev"] is None and gap["dev_gap"] is None
    # calibration prompts no judge: no requests, no cost
    assert body["cost"]["source"] is None and body["cost"]["cost"] is None
    assert body["provenance"]["method"] == "isotonic" and "params" in body["provenance"]


def test_the_page_shows_the_same_and_the_run_page_links_to_it(tuned, cast):
    split, start, made, printed = tuned
    owner = login(cast["owner"])
    page = owner.get(f"/runs/{made.pk}/tuning/")
    assert page.status_code == 200
    html = page.content.decode()
    interval = f"{printed['delta']} [{printed['low']}, {printed['high']}]"
    assert interval in html and "spearman (sample)" in html
    assert "method=isotonic" in html and "<strong>chosen</strong>" in html
    assert f"gap (tune − test) <strong>{printed['gap']}</strong>" in html
    assert "tuned on 15 documents" in html and "no judge was prompted" in html
    assert f"on {printed['documents']} test documents" in html
    assert f'href="/runs/{made.pk}/tuning/"' in owner.get(f"/runs/{made.pk}/").content.decode()
    assert "/tuning/" not in owner.get(f"/runs/{start.pk}/").content.decode()


def test_a_run_no_tuner_made_has_no_tuning_page(tuned, cast):
    _, start, _, _ = tuned
    owner = login(cast["owner"])
    assert owner.get(f"/runs/{start.pk}/").status_code == 200
    assert owner.get(f"/runs/{start.pk}/tuning/").status_code == 404
    response = owner.get(f"/api/runs/{start.pk}/tuning/")
    assert response.status_code == 404 and "not made by a tuner" in response.json()["detail"]
    assert tuning_evidence(start) is None


@pytest.mark.parametrize("role", ["outsider", "annotator", "admin", None])
def test_the_tuning_page_and_api_answer_each_role_as_the_run_does(tuned, cast, role):
    _, _, made, _ = tuned
    client = login(cast[role]) if role else Client()
    page, run_page = (client.get(f"/runs/{made.pk}/{tail}") for tail in ("tuning/", ""))
    api, run_api = (client.get(f"/api/runs/{made.pk}/{tail}") for tail in ("tuning/", ""))
    assert page.status_code == run_page.status_code
    assert api.status_code == run_api.status_code
    want = {"outsider": (404, 404), "annotator": (403, 403), "admin": (200, 200)}
    if role is None:
        assert page.status_code == 302 and "/login/" in page["Location"]
        assert api.status_code in (401, 403)
    else:
        assert (page.status_code, api.status_code) == want[role]


def test_a_few_shot_record_names_its_candidates_and_the_chosen_one():
    record = {
        "options": {"k": "1,2", "selection": "auto", "encoder": ""},
        "k": 2,
        "selection": "worst",
        "candidates": [
            {"k": 1, "selection": "random", "examples": [5], "dev": 0.1},
            {"k": 2, "selection": "random", "examples": [5, 9], "dev": None},
            {"k": 2, "selection": "worst", "examples": [7, 3], "dev": 0.4},
            {"k": 2, "selection": "worst", "examples": [7, 3], "dev": 0.4},
        ],
    }
    found = candidates(record)
    assert [c["label"] for c in found] == [
        "k=1, selection=random",
        "k=2, selection=random",
        "k=2, selection=worst",
        "k=2, selection=worst",
    ]
    assert [c["chosen"] for c in found] == [False, False, True, False]  # the first of equals
    assert [c["dev"] for c in found] == [0.1, None, 0.4, 0.4]
    assert found[2]["examples"] == [7, 3] and found[2]["settings"] == {"k": 2, "selection": "worst"}


def test_the_cost_is_a_served_judges_spending_while_tuning_none_for_a_local_one():
    before = {"requests": 10, "prompt_tokens": 1000, "completion_tokens": 50, "cost": 0.5}
    after = {
        "requests": 14,
        "prompt_tokens": 1600,
        "completion_tokens": 58,
        "cache_hits": 2,
        "cost": 0.75,
        "latencies_ms": [1.0],
    }
    spent = spent_between(before, after)
    assert spent["requests"] == 4 and spent["prompt_tokens"] == 600
    assert spent["completion_tokens"] == 8 and spent["cache_hits"] == 2
    assert spent["cost"] == pytest.approx(0.25)
    assert spent_between(after, after) == {}
    served = cost(MetricRun(usage=spent), {"judge_requests": 6})
    assert served == {
        "source": "served",
        "judge_requests": 6,
        "requests": 4,
        "prompt_tokens": 600,
        "completion_tokens": 8,
        "tokens": 608,
        "cache_hits": 2,
        "cost": pytest.approx(0.25),
    }
    local = cost(MetricRun(usage={}), {"judge_requests": 6})
    assert local["source"] == "local" and local["cost"] is None and local["requests"] is None
    assert cost(MetricRun(usage={}), {})["source"] is None


def test_the_alt_test_before_and_after_is_the_cards_on_the_test_documents(tuned, cast):
    """The start run's test on the test documents, computed here from its scores and the
    three annotators' judgments; the tuned run's is its row of the report card (which
    evaluates a tuned run on test only); the page shows both."""
    from scoring.stats.alttest import alt_test, neg_rmse_plain
    from studies.models import Judgment
    from studies.services.analysis.report_card import CardParams, compute_card
    from studies.services.analysis.report_card.evidence import MIN_ANNOTATORS, MIN_ITEMS

    split, start, run, _ = tuned
    recorded = tuning_evidence(run)["alt_test"]
    test_ids = sorted(held_out_labels(split, Aspect.objects.get(code="COH"), "test"))
    assert recorded["documents"] == len(
        {o.document_id for o in Output.objects.filter(pk__in=test_ids)}
    )
    answers: dict[str, dict[int, float]] = {}
    for output, who, value in Judgment.objects.filter(
        output_id__in=test_ids, aspect__code="COH"
    ).values_list("output_id", "rater", "value"):
        answers.setdefault(who, {})[output] = float(value)
    judge = {pk: v for pk, v in run_scores(start).items() if pk in set(test_ids)}
    by_hand = alt_test(
        judge,
        answers,
        epsilon=recorded["start"]["epsilon"],
        metric=neg_rmse_plain,
        min_annotators_per_item=MIN_ANNOTATORS,
        min_items=MIN_ITEMS,
    )
    assert recorded["start"]["problem"] is None and by_hand.problem is None
    assert recorded["start"]["passed"] == by_hand.passed
    assert recorded["start"]["winning_rate"] == pytest.approx(by_hand.winning_rate)
    card = compute_card(start.dataset, CardParams(resamples=300))
    (row,) = [r for r in card["rows"] if r["run"]["pk"] == run.pk]
    assert row["run"]["tuned"]["test_documents"] == recorded["documents"]
    for key in ("passed", "winning_rate", "advantage_probability", "problem"):
        assert recorded["tuned"][key] == row["alt_test"][key], key
    page = login(cast["owner"]).get(f"/runs/{run.pk}/tuning/").content.decode()
    table = page[page.index('id="tuning-alt-test"') :]
    assert 'data-side="start"' in table and 'data-side="tuned"' in table
    api = login(cast["owner"]).get(f"/api/runs/{run.pk}/tuning/").json()
    assert api["alt_test"]["start"]["passed"] == by_hand.passed
