"""Scores read from a served endpoint's top-k alone on the report card (issue 37, item 2):
each flagged score's range from its bounds (exact, against every corner of the bounds),
the card's flag, and a verdict that says whether the flagged scores could change it, on
the page, the API and the exports."""

from __future__ import annotations

import csv
import io
import itertools
import json

import numpy as np
import pytest
from django.urls import reverse

from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.analysis.report_card.pieces.top_k import alternatives, score_range
from tests.studies.report_card_data import add_top_k_run

pytestmark = pytest.mark.django_db


def corners(details):  # type: ignore[no-untyped-def]
    """The weighted score at every corner of the bounds' box (each outside label at 0 or
    at its bound), by brute force."""
    mass = details["label_mass"]
    read = {
        k: p * mass for k, p in details["distribution"].items() if k not in details["outside_top_k"]
    }
    outside = list(details["outside_top_k"].items())
    for chosen in itertools.product((False, True), repeat=len(outside)):
        weights = dict(read) | {k: b for (k, b), on in zip(outside, chosen, strict=True) if on}
        total = sum(weights.values())
        yield sum(float(k) * w for k, w in weights.items()) / total


@pytest.mark.parametrize("seed", range(6))
def test_a_flagged_scores_range_is_the_extremes_over_every_corner_of_its_bounds(seed):
    rng = np.random.default_rng(seed)
    labels = [str(v) for v in range(1, 11)]  # a 1-10 scale
    outside = set(rng.choice(labels, size=4, replace=False))
    read = rng.dirichlet(np.ones(len(labels) - len(outside)))
    probs = dict(zip([lab for lab in labels if lab not in outside], read, strict=True))
    details = {
        "distribution": {lab: float(probs.get(lab, 0.0)) for lab in labels},
        "outside_top_k": {lab: float(rng.uniform(0.001, 0.3)) for lab in outside},
        "label_mass": float(rng.uniform(0.3, 1.0)),
        "weighting": "prob",
    }
    low, high = score_range(details)
    every = list(corners(details))
    assert low == pytest.approx(min(every)) and high == pytest.approx(max(every))
    stored = sum(float(k) * p for k, p in details["distribution"].items())
    assert low - 1e-9 <= stored <= high + 1e-9  # the stored score: every label at 0


def test_an_argmax_score_may_become_an_outside_label_only_past_the_top_read_label():
    details = {
        "distribution": {"1": 0.0, "2": 0.7, "3": 0.3, "4": 0.0},
        "outside_top_k": {"1": 0.05, "4": 0.5},
        "label_mass": 0.6,  # the top read label holds 0.42: only "4" could pass it
        "weighting": "argmax",
        "argmax": 2.0,
    }
    assert score_range(details) == (2.0, 4.0)


def test_the_moved_scores_go_against_or_toward_the_annotators_ranks():
    human = np.array([1.0, 2.0, 3.0, 4.0])
    metric = np.array([1.5, 2.5, 3.5, 4.5])
    found = alternatives(metric, human, None, {0: (1.0, 4.9), 3: (1.2, 4.6)})
    # the lowest by the annotators: against puts it highest, toward lowest; the highest: reverse
    assert found["against"][0] == 4.9 and found["toward"][0] == 1.0
    assert found["against"][3] == 1.2 and found["toward"][3] == 4.6
    assert list(found["against"][1:3]) == [2.5, 3.5]  # unflagged scores stay


def row_of(card, run):  # type: ignore[no-untyped-def]
    (row,) = [r for r in card["rows"] if r["run"]["pk"] == run.pk]
    return row


def test_narrow_bounds_are_flagged_and_the_verdict_says_they_cannot_change_it(panel):
    run = add_top_k_run(panel, bound=0.002, every=4)  # 10 of the 40 outputs
    row = row_of(compute_card(panel.dataset, CardParams(resamples=200)), run)
    top = row["top_k"]
    assert (top["scores"], top["of"]) == (10, 40) and not top["could_change"]
    assert top["verdicts"] == {"against": "can", "toward": "can"}
    assert row["verdict"]["code"] == "can"
    assert "10 of its 40 scores were read from the endpoint's top-k" in row["verdict"]["text"]
    assert "at either end of their bounds the verdict stays" in row["verdict"]["text"]
    against, toward = top["primary"]["against"]["value"], top["primary"]["toward"]["value"]
    # recomputed at both ends: within the narrow bounds' reach of the stored correlation
    assert against == pytest.approx(row["correlation"]["value"], abs=0.05)
    assert toward == pytest.approx(row["correlation"]["value"], abs=0.05)
    # the other judges carry no flag
    others = [r for r in compute_card(panel.dataset, CardParams(resamples=50))["rows"]]
    assert sum(1 for r in others if r["top_k"]) == 1


def test_wide_bounds_could_change_the_verdict_and_the_card_and_exports_say_so(panel, client, cast):
    run = add_top_k_run(panel, bound=1.0, label_mass=0.2)  # every output: nearly anything
    row = row_of(compute_card(panel.dataset, CardParams(resamples=200)), run)
    top = row["top_k"]
    assert top["scores"] == 40 and top["could_change"] and row["verdict"]["code"] == "can"
    assert top["verdicts"]["against"] == "cannot"
    assert top["primary"]["against"]["value"] < 0 < row["correlation"]["value"]
    assert top["primary"]["toward"]["value"] > top["primary"]["against"]["value"]
    text = row["verdict"]["text"]
    assert "flagged scores could change this verdict: 40 of its 40 scores" in text
    assert "against the annotators" in text and "'cannot'" in text

    client.force_login(cast["owner"])
    url = reverse("studies:dataset-report-card", args=[panel.dataset.pk])
    body = client.get(url, {"aspects": "COH"}).content.decode()
    assert "⚑ 40 / 40" in body and "could change the verdict" in body
    export = reverse("studies:dataset-report-card-export", args=[panel.dataset.pk, "csv"])
    lines = list(
        csv.DictReader(io.StringIO(client.get(export, {"aspects": "COH"}).content.decode()))
    )
    (flagged,) = [line for line in lines if line["run_id"] == str(run.pk)]
    assert flagged["top_k_only_scores"] == "40" and flagged["top_k_verdict_against"] == "cannot"
    assert "flagged scores could change this verdict" in flagged["verdict_text"]
    assert all(line["top_k_only_scores"] == "" for line in lines if line is not flagged)
    json_export = reverse("studies:dataset-report-card-export", args=[panel.dataset.pk, "json"])
    rows = json.loads(client.get(json_export, {"aspects": "COH"}).content)["rows"]
    (api_row,) = [r for r in rows if r["run"]["pk"] == run.pk]
    assert api_row["top_k"]["could_change"] is True
