"""The card and the judge gate evaluate a tuned run (its configuration names a split) on
the split's test documents only, and say so; the API and the exports carry it."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from scoring.stats import Coefficient, Level, correlate
from studies.models import Aspect, Judgment, MetricRun, Output, SplitDocument
from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.analysis.report_card.gate import judge_gate
from studies.services.tuning.derived import run_scores
from studies.services.tuning.labels import held_out_labels
from studies.services.tuning.splits import make_split
from studies.services.tuning.tune import tune_judge
from tests.studies.judged_file import N_SYSTEMS, judged_study

pytestmark = pytest.mark.django_db
TEXT = "tuned on 15 documents; evaluated on 15 test documents"


@pytest.fixture
def tuned(cast, tmp_path):  # type: ignore[no-untyped-def]
    study = judged_study(cast["owner"], tmp_path)
    split = make_split(study, test=0.5, seed=1)
    start = MetricRun.objects.get(label="judge_b")
    aspect = Aspect.objects.get(code="COH")
    made = tune_judge(start, aspect, "calibration", resamples=50).run
    return split, start, made, aspect


def card_row(dataset, run_pk: int) -> dict:  # type: ignore[no-untyped-def, type-arg]
    card = compute_card(dataset, CardParams(aspects=("COH",), resamples=200))
    return next(r for r in card["rows"] if r["run"]["pk"] == run_pk)


def test_a_tuned_runs_card_row_is_a_computation_on_its_test_documents_only(tuned):
    split, start, made, aspect = tuned
    row = card_row(made.dataset, made.pk)
    assert row["run"]["tuned"] == {
        "split": split.pk,
        "tuned_on_documents": 15,
        "test_documents": 15,
        "replaced": False,
        "text": TEXT,
    }
    # an independent computation: the tuned scores against the mean human value, test only
    human = held_out_labels(split, aspect, "test")
    scores = run_scores(made)
    ids = sorted(pk for pk in human if pk in scores)
    docs = dict(Output.objects.filter(pk__in=ids).values_list("pk", "document_id"))
    expected = correlate(
        np.array([scores[pk] for pk in ids]),
        np.array([human[pk] for pk in ids]),
        level=Level.SAMPLE,
        coefficient=Coefficient.SPEARMAN,
        docs=[docs[pk] for pk in ids],
    ).value
    assert row["correlation"]["n_outputs"] == len(ids) == 15 * N_SYSTEMS
    assert row["correlation"]["value"] == pytest.approx(expected, abs=1e-9)
    plain = card_row(made.dataset, start.pk)
    assert plain["run"]["tuned"] is None and plain["correlation"]["n_outputs"] > len(ids)


def test_changing_a_tune_documents_label_changes_nothing_in_the_tuned_row(tuned):
    split, start, made, aspect = tuned
    before, before_start = card_row(made.dataset, made.pk), card_row(made.dataset, start.pk)
    tune_docs = SplitDocument.objects.filter(split=split, part="tune").values("document_id")
    changed = 0
    for judgment in Judgment.objects.filter(aspect=aspect, output__document_id__in=tune_docs)[:40]:
        judgment.value = 6 - judgment.value  # the scale turned round
        judgment.save(update_fields=["value"])
        changed += 1
    assert changed == 40
    made.dataset.bump_data_version()
    made.dataset.refresh_from_db()
    after, after_start = card_row(made.dataset, made.pk), card_row(made.dataset, start.pk)
    assert after == before
    # the start run is evaluated on every document: the same change moves its row
    assert after_start["correlation"]["value"] != before_start["correlation"]["value"]


def test_the_gate_checks_a_tuned_run_on_its_test_documents_and_says_so(tuned):
    split, start, made, aspect = tuned
    result = judge_gate(made.pk, "COH", min_lower_bound=-1.0, resamples=100)
    assert result.passed and f"run {made.pk} {TEXT}" in result.summary
    assert f"of the {15 * N_SYSTEMS} judged outputs" in result.summary
    plain = judge_gate(start.pk, "COH", min_lower_bound=-1.0, resamples=100)
    assert "tuned on" not in plain.summary
    assert f"of the {30 * N_SYSTEMS} judged outputs" in plain.summary
    compared = judge_gate(made.pk, "COH", against=start.pk, min_lower_bound=-1.0, resamples=100)
    assert TEXT in compared.summary and f"on the {15 * N_SYSTEMS} outputs both" in (
        compared.summary
    )
    # a replaced split: every document, and the summary says it is not held out
    make_split(split.study, test=0.5, seed=2, force=True)
    replaced = judge_gate(made.pk, "COH", min_lower_bound=-1.0, resamples=100)
    assert "since replaced" in replaced.summary
    assert f"of the {30 * N_SYSTEMS} judged outputs" in replaced.summary


def test_the_api_the_page_and_the_exports_carry_the_badge(tuned, client, cast):
    split, start, made, aspect = tuned
    client.force_login(cast["owner"])
    dataset = made.dataset.pk
    body = client.get(f"/api/datasets/{dataset}/report-card/", {"aspects": "COH"}).json()
    got = {r["run"]["pk"]: r["run"]["tuned"] for r in body["rows"]}
    assert got[made.pk]["text"] == TEXT and got[start.pk] is None
    page = client.get(f"/datasets/{dataset}/report-card/", {"aspects": "COH"}).content.decode()
    assert 'class="badge tuned"' in page and TEXT in page
    text = client.get(f"/datasets/{dataset}/report-card/export.csv", {"aspects": "COH"})
    lines = {r["run_id"]: r for r in csv.DictReader(io.StringIO(b"".join(text).decode()))}  # type: ignore[arg-type]
    assert lines[str(made.pk)]["tuned_on_documents"] == "15"
    assert lines[str(made.pk)]["evaluated_on_test_documents"] == "15"
    assert lines[str(start.pk)]["tuned_on_documents"] == ""
    tex = client.get(f"/datasets/{dataset}/report-card/export.tex", {"aspects": "COH"})
    assert r"$^{T}$" in b"".join(tex).decode()  # type: ignore[arg-type]
