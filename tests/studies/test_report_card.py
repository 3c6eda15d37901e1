"""The judge report card's service: each row's numbers against the statistics computed
from the raw rows, its verdicts for judges of known quality, and what it says when the
data cannot answer."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats.alttest import alt_test
from scoring.stats.consistency import self_consistency
from scoring.stats.judge_agreement import pointwise_agreement
from studies.services.analysis.dashboards import compute_and_cache
from studies.services.analysis.report_card import CardParams, compute_card
from tests.studies.report_card_data import SCALE, add_pairwise_run, raw_answers

pytestmark = pytest.mark.django_db


def rows_by_label(card):  # type: ignore[no-untyped-def]
    return {(r["run"]["label"], r["aspect"]["code"]): r for r in card["rows"]}


def test_a_judge_built_from_the_annotators_mean_passes_and_a_noisy_one_fails(panel):
    card = compute_card(panel.dataset, CardParams(resamples=200))
    rows = rows_by_label(card)
    mean, noisy = rows[("mean judge", "COH")], rows[("noisy judge", "COH")]
    assert mean["alt_test"]["passed"] and mean["verdict"]["code"] == "can"
    assert mean["verdict"]["text"].startswith("can replace annotators for coherence here")
    assert "ε=0.2" in mean["verdict"]["text"]
    assert not noisy["alt_test"]["passed"] and noisy["verdict"]["code"] == "cannot"
    assert "fails the alternative-annotator test at ε=0.2" in noisy["verdict"]["text"]
    # the alt-test on the raw rows: the mean judge's own scores (they lie on the scale)
    answers, names, _, ids = raw_answers(panel.dataset, "COH")
    judge = {pk: float(np.nanmean(answers[:, k])) for k, pk in enumerate(ids)}
    expected = alt_test(
        judge,
        {n: dict(zip(ids, answers[a], strict=True)) for a, n in enumerate(names)},
        epsilon=0.2,
        metric="neg_rmse",
    )
    assert mean["alt_test"]["winning_rate"] == pytest.approx(expected.winning_rate)
    assert mean["alt_test"]["advantage_probability"] == pytest.approx(
        expected.advantage_probability
    )
    assert mean["alt_test"]["n_items_with_three"] == 40 == expected.n_items_with_three


def test_agreement_puts_the_judge_on_the_annotators_scale_and_says_how(panel):
    card = compute_card(panel.dataset, CardParams(resamples=50))
    rows = rows_by_label(card)
    answers, _, docs, _ = raw_answers(panel.dataset, "COH")
    mean = rows[("mean judge", "COH")]["agreement"]
    assert mean["binning"] == "rounded" and mean["scale"] == SCALE
    rounded = np.floor(np.nanmean(answers, axis=0) + 0.5)  # half-way: up
    expected = pointwise_agreement(rounded, answers, docs, SCALE)
    assert mean["kappa"]["value"] == pytest.approx(expected.quadratic_kappa.value)
    assert mean["ac1"]["value"] == pytest.approx(expected.gwet_ac1.value)
    assert mean["alpha"]["value"] == pytest.approx(expected.krippendorff_alpha.value)
    assert mean["human_kappa"]["value"] == pytest.approx(expected.human_quadratic_kappa.value)
    # the annotators' own intervals are computed once per aspect, and every row shows them
    humans = {
        tuple(r["agreement"]["human_kappa"].values())
        for r in card["rows"]
        if r["aspect"]["code"] == "COH"
    }
    assert len(humans) == 1 and None not in next(iter(humans))
    assert mean["kappa"]["low"] <= mean["kappa"]["value"] <= mean["kappa"]["high"]
    noisy = rows[("noisy judge", "COH")]["agreement"]
    assert noisy["binning"] == "as_is" and noisy["kappa"]["value"] < mean["kappa"]["value"]


def test_the_correlation_interval_is_the_matrix_cells_at_95_and_narrower_at_90(panel):
    params = CardParams(level="dataset", coefficient="pearson", resamples=200)
    card = compute_card(panel.dataset, params)
    matrix = compute_and_cache(panel.dataset, params.matrix_params)
    cell = next(
        c
        for col in matrix["columns"]
        if col["aspect"]["code"] == "COH"
        for c in col["cells"]
        if c["run"] == panel.noisy.pk
    )
    row = rows_by_label(card)[("noisy judge", "COH")]["correlation"]
    assert (row["value"], row["low"], row["high"]) == pytest.approx(
        (cell["value"], cell["low"], cell["high"])
    )
    coh = next(c for c in matrix["ceiling"] if c["aspect"] == "COH")
    assert row["ceiling"] == pytest.approx(coh["value"])
    narrow = compute_card(panel.dataset, CardParams(**{**params.__dict__, "confidence": 0.9}))
    inner = rows_by_label(narrow)[("noisy judge", "COH")]["correlation"]
    assert row["low"] <= inner["low"] <= inner["high"] <= row["high"]


def test_too_few_annotators_say_how_many_items_there_are_and_what_is_missing(panel):
    card = compute_card(panel.dataset, CardParams(aspects=("FLU",), resamples=20))
    assert {r["aspect"]["code"] for r in card["rows"]} == {"FLU"}
    row = rows_by_label(card)[("mean judge", "FLU")]
    alt = row["alt_test"]
    assert alt["problem"] == "no_items" and alt["n_items_with_three"] == 0
    assert "at least 3 annotators" in alt["message"]
    assert row["verdict"]["code"] == "unclear"
    assert "needs items judged by at least three annotators" in row["verdict"]["text"]
    assert "(0 items have three or more)" in row["verdict"]["text"]
    assert row["correlation"]["ceiling"] is None  # one annotator: no ceiling
    assert card["aspects"][0]["n_annotators"] == 1


def test_judges_exclude_sentinels_and_baselines_unless_asked(panel):
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20))
    labels = {r["run"]["label"] for r in card["rows"]}
    assert "rouge1" not in labels and "length" not in labels and "mean judge" in labels
    every = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20, all_runs=True))
    labels = {r["run"]["label"] for r in every["rows"]}
    assert "rouge1" in labels and "length" not in labels  # a sentinel never gets a row
    # a G-Eval run prompted for coherence gets no fluency row
    both = compute_card(panel.dataset, CardParams(resamples=20))
    geval = [r["aspect"]["code"] for r in both["rows"] if r["run"]["metric"] == "geval"]
    assert geval == ["COH", "COH"]


def test_a_sampled_judges_self_consistency_comes_from_its_stored_answers(panel):
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20))
    row = next(r for r in card["rows"] if r["run"]["pk"] == panel.sampled.pk)
    expected = self_consistency(panel.counts, SCALE)
    found = row["self_consistency"]
    assert found["icc1"] == pytest.approx(expected.icc1)
    assert found["icck"] == pytest.approx(expected.icck)
    assert found["mean_within_sd"] == pytest.approx(expected.mean_within_sd)
    assert found["n_samples"] == 400 and found["k"] == pytest.approx(10)
    assert rows_by_label(card)[("mean judge", "COH")]["self_consistency"] is None


def test_cost_and_time_are_per_thousand_outputs(panel):
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20))
    served = next(r for r in card["rows"] if r["run"]["pk"] == panel.sampled.pk)["cost"]
    assert served["source"] == "served" and served["outputs"] == 40
    assert served["requests"] == pytest.approx(1000.0)
    assert served["tokens"] == pytest.approx(32000 * 25)
    assert served["cost"] == pytest.approx(20.0) and served["seconds"] == pytest.approx(2000.0)
    imported = rows_by_label(card)[("mean judge", "COH")]["cost"]
    assert imported["source"] is None


def test_a_prompt_variant_shows_the_change_in_correlation_and_the_rank_changes(panel):
    card = compute_card(panel.dataset, CardParams(level="dataset", aspects=("COH",), resamples=100))
    row = next(r for r in card["rows"] if r["run"]["pk"] == panel.sampled.pk)
    prompt = row["prompt"]
    assert prompt["against"]["pk"] == panel.variant.pk and prompt["comparable"]
    assert prompt["changed"] == ["aspect definition v2 → v1"] and prompt["also"] == []
    other = next(r for r in card["rows"] if r["run"]["pk"] == panel.variant.pk)
    assert prompt["value"] == pytest.approx(row["correlation"]["value"])
    assert prompt["against_value"] == pytest.approx(other["correlation"]["value"])
    assert prompt["delta"] == pytest.approx(prompt["value"] - prompt["against_value"])
    assert prompt["low"] <= prompt["delta"] <= prompt["high"]
    for change in prompt["rank_changes"]:
        assert change["rank"] != change["against_rank"]


def test_a_variant_that_differs_in_more_than_its_prompt_says_so(panel):
    panel.variant.config = {**panel.variant.config, "model": "another-model"}
    panel.variant.save()
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20))
    prompt = next(r for r in card["rows"] if r["run"]["pk"] == panel.sampled.pk)["prompt"]
    assert prompt["also"] == ["model"] and not prompt["comparable"]


def test_a_judge_no_better_than_a_sentinel_cannot_replace_annotators(panel):
    # the length sentinel, made a perfect copy of the mean judge: nothing beats it
    for score in panel.length.scores.all():
        score.value = panel.mean.scores.get(output_id=score.output_id).value
        score.save()
    panel.dataset.bump_data_version()
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=100))
    row = rows_by_label(card)[("mean judge", "COH")]
    assert row["sentinel"]["fails"]["label"] == "length"
    assert row["verdict"]["code"] == "cannot" and "sentinel length" in row["verdict"]["text"]


def test_a_pairwise_judges_row_shows_its_position_consistency_and_first_position_bias(panel):
    from studies.services.analysis.pairwise_judge import summary

    run = add_pairwise_run(panel)
    card = compute_card(panel.dataset, CardParams(aspects=("COH",), resamples=20))
    row = next(r for r in card["rows"] if r["run"]["pk"] == run.pk)
    position = row["position"]
    assert position["n_pairs"] == 80 and position["n_consistent"] == 40
    assert position["position_consistency"] == pytest.approx(0.5)
    assert (position["n_first"], position["n_second"]) == (120, 40)
    assert position["first_position_share"] == pytest.approx(0.75)
    expected = summary(run, n_resamples=1)
    assert position["first_position_p"] == pytest.approx(expected.first_position_p)
    assert position["first_position_p"] < 1e-6
    assert (
        "mind its position bias: 0.75 of its verdicts go to the output shown first"
        in (row["verdict"]["text"])
    )
    others = [r for r in card["rows"] if r["run"]["pk"] != run.pk]
    assert all(r["position"] is None for r in others)
