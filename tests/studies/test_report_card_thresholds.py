"""A numeric judge (log-odds, as the yes/no judge gives) on a binary aspect: the report
card labels its outputs through a threshold chosen on the study's split (its tune
documents) and evaluates it on the test documents only, or, without a split, on
cross-fitted document halves; the threshold never sees the labels of the documents it
is evaluated on, and the card (page, API, CSV, LaTeX) names the split and how many
documents it was evaluated on."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient
from sklearn.metrics import matthews_corrcoef

from studies.models import Aspect, Dataset, Judgment, MetricRun, Study
from studies.services.analysis.report_card import (
    CardParams,
    compute_card,
    split_params,
    to_csv,
    to_latex,
)
from studies.services.analysis.report_card.thresholds import declared_split
from studies.services.imports import ImportOptions, import_file
from studies.services.tuning.splits import make_split

pytestmark = pytest.mark.django_db

N_DOCS, SYSTEMS, RATERS = 30, ("s1", "s2", "s3"), ("a1", "a2", "a3")


def _lines() -> list[dict[str, Any]]:
    rng = np.random.default_rng(11)
    lines = []
    for d in range(N_DOCS):
        for s in SYSTEMS:
            truth = int(rng.random() < 0.55)
            lines.append(
                {
                    "doc_id": f"d{d:02d}",
                    "system_id": s,
                    "source": f"Source {d}.",
                    "references": [f"Reference {d}."],
                    "output": f"Output of {s} for {d}.",
                    "annotators": {
                        "faithful": {r: truth if rng.random() < 0.85 else 1 - truth for r in RATERS}
                    },
                    "metrics": {"logodds": round(float(2.0 * truth - 1.0 + rng.normal()), 6)},
                }
            )
    return lines


@pytest.fixture
def judged(tmp_path: Path, cast: dict[str, Any]) -> tuple[Dataset, list[dict[str, Any]], Aspect]:
    lines = _lines()
    path = tmp_path / "thresholds.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    options = ImportOptions(
        dataset="thresholds",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        create_aspects=True,
        owner=cast["owner"],
    )
    import_file(path, options)  # type: ignore[arg-type]
    faithful = Aspect.objects.get(name__iexact="faithful")
    assert faithful.kind == "binary"
    return Dataset.objects.get(name="thresholds"), lines, faithful


def _labels(dataset: Dataset, aspect: Aspect, params: CardParams | None = None) -> dict[str, Any]:
    dataset.refresh_from_db()
    params = params or CardParams(resamples=100).on_split(*split_params(dataset))
    card = compute_card(dataset, params)
    row = next(
        r
        for r in card["rows"]
        if r["run"]["metric"] == "logodds" and r["aspect"]["code"] == aspect.code
    )
    found: dict[str, Any] = row["labels"]
    return found


def _flip(dataset: Dataset, aspect: Aspect, docs: set[str]) -> None:
    """Every annotator's label on these documents' outputs turned to the other one."""
    rows = list(Judgment.objects.filter(aspect=aspect, output__document__doc_key__in=docs))
    for judgment in rows:
        judgment.value = 1.0 - judgment.value
    Judgment.objects.bulk_update(rows, ["value"])
    dataset.bump_data_version()


def _pairs(lines: list[dict[str, Any]], docs: set[str], cut: dict[str, Any], positive: int):  # type: ignore[no-untyped-def]
    """(annotator label, the cut's label) pooled over the outputs of ``docs``."""
    humans, judged = [], []
    for line in lines:
        if line["doc_id"] not in docs:
            continue
        score = line["metrics"]["logodds"]
        above = score > cut["value"] if cut["higher_is_positive"] else score < cut["value"]
        for answer in line["annotators"]["faithful"].values():
            humans.append(answer)
            judged.append(positive if above else 1 - positive)
    return np.array(humans), np.array(judged)


def test_the_threshold_is_chosen_on_the_studys_tune_documents_and_evaluated_on_test(judged, cast):
    dataset, lines, faithful = judged
    study = Study.objects.create(name="Split study", dataset=dataset, owner=cast["owner"])
    split = make_split(study, test=0.4, seed=3, aspect=faithful)
    parts = dict(split.documents.values_list("document__doc_key", "part"))
    tune = {k for k, p in parts.items() if p == "tune"}
    test = {k for k, p in parts.items() if p == "test"}
    assert split_params(dataset) == (study.pk, split.created_at.isoformat())

    found = _labels(dataset, faithful)
    assert found["problem"] is None and found["kind"] == "binary"
    cut = found["threshold"]
    assert cut["split_kind"] == "study" and f"study {study.pk} (Split study)" in cut["split"]
    assert "tune documents" in cut["split"] and len(cut["thresholds"]) == 1
    assert cut["n_documents_chosen_on"] == len(tune)
    assert cut["n_documents_evaluated"] == len(test)
    assert cut["n_outputs_evaluated"] == len(test) * len(SYSTEMS)
    # the statistics are those of the cut's labels on the test documents alone
    positive = faithful.label_codes()[faithful.positive]
    h, j = _pairs(lines, test, cut["thresholds"][0], positive)
    assert np.asarray(found["confusion"]).sum() == len(h)
    assert found["judge"]["mcc"]["value"] == pytest.approx(matthews_corrcoef(h, j), abs=1e-12)
    assert found["judge"]["mcc"]["value"] > 0.3  # log-odds that follow the truth

    # the test documents' labels, all turned over: the threshold is the same, the MCC not
    _flip(dataset, faithful, test)
    flipped = _labels(dataset, faithful)
    assert flipped["threshold"]["thresholds"] == cut["thresholds"]
    assert flipped["judge"]["mcc"]["value"] < 0
    # the tune documents' labels turned over: the threshold follows them
    _flip(dataset, faithful, tune)
    again = _labels(dataset, faithful)
    assert again["threshold"]["thresholds"] != cut["thresholds"]
    assert again["threshold"]["thresholds"][0]["higher_is_positive"] is False


def test_without_a_split_the_halves_are_cross_fitted_and_each_cut_never_sees_its_half(judged):
    dataset, lines, faithful = judged
    assert split_params(dataset) == (None, "")
    found = _labels(dataset, faithful)
    cut = found["threshold"]
    assert cut["split_kind"] == "halves" and cut["split"] == "cross-fitted document halves (seed 0)"
    assert len(cut["thresholds"]) == 2
    assert cut["n_documents_evaluated"] == cut["n_documents_chosen_on"] == N_DOCS
    assert np.asarray(found["confusion"]).sum() == len(lines) * len(RATERS)
    keys = sorted({line["doc_id"] for line in lines})
    folds = declared_split(keys, None, 0).folds
    first = {k for k, on in zip(keys, folds[0].chosen_on, strict=True) if on}
    positive = faithful.label_codes()[faithful.positive]
    h0, j0 = _pairs(lines, set(keys) - first, cut["thresholds"][0], positive)
    h1, j1 = _pairs(lines, first, cut["thresholds"][1], positive)
    h, j = np.concatenate([h0, h1]), np.concatenate([j0, j1])
    assert found["judge"]["mcc"]["value"] == pytest.approx(matthews_corrcoef(h, j), abs=1e-12)

    # the labels of the half the first cut labels: that cut stays, the other one moves
    _flip(dataset, faithful, set(keys) - first)
    flipped = _labels(dataset, faithful)["threshold"]["thresholds"]
    assert flipped[0] == cut["thresholds"][0] and flipped[1] != cut["thresholds"][1]


def test_the_page_api_and_exports_name_the_split_and_the_evaluated_documents(judged, cast, client):
    dataset, _, faithful = judged
    study = Study.objects.create(name="Split study", dataset=dataset, owner=cast["owner"])
    make_split(study, test=0.4, seed=3, aspect=faithful)
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:study-report-card", args=[study.pk])).content.decode()
    note = page.split('class="muted card-label-threshold"')[1].split("</small>")[0]
    assert f"threshold chosen on the tune documents of study {study.pk}" in note
    found = _labels(dataset, faithful)
    n = found["threshold"]["n_documents_evaluated"]
    assert f"evaluated on {n} other documents" in note and 0 < n < N_DOCS
    assert "positive when score" in note  # the cut itself, in the title

    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = api.get(f"/api/studies/{study.pk}/report-card/").json()
    row = next(r for r in body["rows"] if r["labels"] and r["labels"].get("threshold"))
    assert row["labels"]["threshold"]["split_kind"] == "study"
    assert row["labels"]["threshold"]["n_documents_evaluated"] == n

    card = compute_card(dataset, CardParams(resamples=100).on_split(*split_params(dataset)))
    exported = list(csv.DictReader(io.StringIO(to_csv(card))))
    line = next(r for r in exported if r["threshold_split"])
    assert f"study {study.pk}" in line["threshold_split"]
    assert line["threshold_documents_evaluated"] == str(n)
    assert f"chosen on the tune documents of study {study.pk}" in to_latex(card)


def test_judge_gate_thresholds_a_numeric_judge_as_the_card_does(judged):
    dataset, _, faithful = judged
    run = MetricRun.objects.get(dataset=dataset, metric="logodds")
    mcc = _labels(dataset, faithful)["judge"]["mcc"]["value"]

    def gate(bound: str) -> tuple[int, str]:
        out = io.StringIO()
        args = ("--run", str(run.pk), "--aspect", "faithful", "--min-lower-bound", bound)
        try:
            call_command("judge_gate", *args, "--resamples", "200", stdout=out)
        except CommandError as exc:
            return exc.returncode, out.getvalue() + str(exc)
        return 0, out.getvalue()

    code, out = gate("0.1")
    assert code == 0 and f"MCC {mcc:.3f} [" in out
    assert "threshold chosen on cross-fitted document halves (seed 0)" in out
    assert f"evaluated on {N_DOCS} other documents" in out
    code, out = gate("0.95")
    assert code == 1 and "below 0.95" in out
