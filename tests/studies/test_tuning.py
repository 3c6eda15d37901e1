"""Splits that cannot leak, juries and the calibration tuner, on a dataset imported from a
file with three annotators per output and three judges as metric columns (no model)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from scoring.stats import Coefficient, Level, correlate
from scoring.stats.dawid_skene import dawid_skene
from scoring.stats.jury import majority
from studies.models import Aspect, MetricRun, Output, SplitDocument, Study
from studies.services.tuning import registry
from studies.services.tuning.labels import HeldOutLabel, TuneLabels, held_out_labels
from studies.services.tuning.splits import make_split
from studies.services.tuning.tune import tune_judge
from studies.services.tuning.types import Tuned, Tuner
from tests.studies.judged_file import JUDGES, N_DOCS, N_SYSTEMS, judged_study, lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(cast, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    return judged_study(cast["owner"], tmp_path)


def command(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def run_id(label: str) -> int:
    return int(MetricRun.objects.get(label=label).pk)


def test_a_split_is_frozen_seeded_and_stratified(study):
    out = command("split", "--study", str(study.pk), "--dev", "0.2", "--test", "0.4", "--seed", "3")
    assert "tune 12, dev 6, test 12" in out and "stratified by COH" in out
    first = dict(SplitDocument.objects.values_list("document__doc_key", "part"))
    with pytest.raises(CommandError, match="already has a frozen split.*no run depends"):
        command("split", "--study", str(study.pk), "--seed", "4")
    assert dict(SplitDocument.objects.values_list("document__doc_key", "part")) == first
    command("split", "--study", str(study.pk), "--seed", "4", "--force")
    assert dict(SplitDocument.objects.values_list("document__doc_key", "part")) != first
    command("split", "--study", str(study.pk), "--dev", "0.2", "--seed", "3", "--force")
    assert dict(SplitDocument.objects.values_list("document__doc_key", "part")) == first


def test_the_split_shows_on_the_study_page_and_in_the_api(study, client, cast):
    client.force_login(cast["owner"])
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "No split yet" in page
    make_split(study, test=0.5, seed=1)
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert 'id="study-split"' in page and "tune 15" in page and "test 15" in page
    body = client.get(f"/api/studies/{study.pk}/").json()
    assert body["split"]["counts"] == {"tune": 15, "dev": 0, "test": 15}
    assert body["split"]["stratified_by"] == "COH" and body["split"]["seed"] == 1


def test_a_tuner_asking_for_a_test_label_gets_an_error_not_a_value(study):
    split = make_split(study, dev=0.2, test=0.4, seed=0)
    aspect = Aspect.objects.get(code="COH")
    labels = TuneLabels(split, aspect)
    test_outputs = sorted(held_out_labels(split, aspect, "test"))
    assert test_outputs and not set(test_outputs) & set(labels.outputs())
    with pytest.raises(HeldOutLabel, match="held out"):
        labels.human(test_outputs[:1])
    with pytest.raises(HeldOutLabel):  # one test output among tune ones spoils the request
        labels.human([*labels.outputs("tune")[:3], test_outputs[0]])
    with pytest.raises(HeldOutLabel):
        labels.outputs("test")
    with pytest.raises(HeldOutLabel):
        TuneLabels(split, aspect, parts=("tune", "test"))
    tune_only = TuneLabels(split, aspect, parts=("tune",))
    with pytest.raises(HeldOutLabel):
        tune_only.human(labels.outputs("dev")[:1])
    assert len(labels.human(labels.outputs("tune"))) == 12 * N_SYSTEMS


def test_a_registered_tuner_that_reads_a_test_label_fails_and_saves_nothing(study, monkeypatch):
    split = make_split(study, test=0.4, seed=0)
    aspect = Aspect.objects.get(code="COH")
    test_output = sorted(held_out_labels(split, aspect, "test"))[0]

    def peek(context):  # type: ignore[no-untyped-def]
        return Tuned(scores=context.labels.human([test_output]))

    monkeypatch.setitem(registry._TUNERS, "peek", Tuner("peek", "peeks", (), peek))
    before = MetricRun.objects.count()
    with pytest.raises(HeldOutLabel):
        tune_judge(MetricRun.objects.get(label="judge_a"), aspect, "peek")
    assert MetricRun.objects.count() == before


def judge_matrix(outputs: list[int]) -> np.ndarray:
    """Items × judges, from the import file (not the database)."""
    keyed = {(r["doc_id"], r["system_id"]): r["metrics"] for r in lines()}
    where = dict(Output.objects.filter(pk__in=outputs).values_list("pk", "document__doc_key"))
    system = dict(Output.objects.filter(pk__in=outputs).values_list("pk", "system_id"))
    return np.array([[keyed[(where[pk], system[pk])][j] for j in JUDGES] for pk in outputs])


@pytest.mark.parametrize("method", ["mean", "median", "majority", "dawid-skene"])
def test_a_jury_of_three_runs_equals_an_independent_computation(study, method):
    ids = ",".join(str(run_id(j)) for j in JUDGES)
    new = MetricRun.objects.get(
        pk=int(command("jury", "--runs", ids, "--aspect", "coherence", "--method", method).strip())
    )
    assert new.config["jury"] == {"method": method, "runs": [run_id(j) for j in JUDGES]}
    assert new.status == "succeeded" and new.config["aspect"] == "COH"
    got = dict(new.scores.values_list("output_id", "value"))
    outputs = sorted(got)
    assert len(outputs) == N_DOCS * N_SYSTEMS
    x = judge_matrix(outputs)
    if method == "mean":
        expected = x.mean(axis=1)
    elif method == "median":
        expected = np.median(x, axis=1)
    elif method == "majority":
        rounded = np.round(x)
        expected = np.array([min(set(r), key=lambda v: (-list(r).count(v), v)) for r in rounded])
        assert np.array_equal(expected, majority(x))
    else:
        rounded = np.round(x)
        values, codes = np.unique(rounded, return_inverse=True)
        items = np.repeat(np.arange(len(outputs)), 3)
        workers = np.tile(np.arange(3), len(outputs))
        expected = values[dawid_skene(items, workers, codes.ravel()).labels]
    assert np.allclose([got[pk] for pk in outputs], expected)


def test_a_weighted_jury_weighs_each_judge_by_its_tune_agreement(study):
    split = make_split(study, test=0.4, seed=2)
    aspect = Aspect.objects.get(code="COH")
    ids = [run_id(j) for j in JUDGES]
    new = MetricRun.objects.get(
        pk=int(
            command(
                "jury", "--runs", ",".join(map(str, ids)), "--aspect", "COH", "--method", "weighted"
            )
        )
    )
    tune = held_out_labels(split, aspect, "tune")
    outputs = sorted(tune)
    x = judge_matrix(outputs)
    y = np.array([tune[pk] for pk in outputs])
    rho = [
        correlate(x[:, j], y, level=Level.DATASET, coefficient=Coefficient.SPEARMAN).value
        for j in range(3)
    ]
    weights = new.config["jury"]["weights"]
    assert np.allclose([weights[str(pk)] for pk in ids], rho)
    assert new.config["split"] == split.pk
    every = sorted(new.scores.values_list("output_id", flat=True))
    expected = judge_matrix(every) @ np.array(rho) / sum(rho)
    got = dict(new.scores.values_list("output_id", "value"))
    assert np.allclose([got[pk] for pk in every], expected)
    with pytest.raises(CommandError, match="frozen split.*runs made from it: " + str(new.pk)):
        command("split", "--study", str(study.pk))


def test_calibration_is_fitted_on_tune_only_and_measured_on_test_only(study):
    split = make_split(study, dev=0.2, test=0.4, seed=5)
    aspect = Aspect.objects.get(code="COH")
    out = command(
        "tune_judge",
        "--run",
        str(run_id("judge_a")),
        "--aspect",
        "COH",
        "--tuner",
        "calibration",
        "--resamples",
        "300",
    )
    first, second = out.strip().splitlines()
    tuned = MetricRun.objects.get(pk=int(first))
    record = tuned.config["tuning"]
    assert record["tuner"] == "calibration" and record["method"] == "isotonic"
    assert record["start_run"] == run_id("judge_a") and tuned.config["split"] == split.pk
    assert record["tuned_on_documents"] == 12 and record["fitted_on_outputs"] == 12 * N_SYSTEMS
    # the map is the isotonic fit of the tune outputs alone: refit it independently
    from sklearn.isotonic import IsotonicRegression

    tune = held_out_labels(split, aspect, "tune")
    start = dict(MetricRun.objects.get(label="judge_a").scores.values_list("output_id", "value"))
    ids = sorted(tune)
    model = IsotonicRegression(out_of_bounds="clip").fit(
        [start[pk] for pk in ids], [tune[pk] for pk in ids]
    )
    got = dict(tuned.scores.values_list("output_id", "value"))
    every = sorted(got)
    assert np.allclose([got[pk] for pk in every], model.predict([start[pk] for pk in every]))
    # Δ on the test documents only: 12 documents, their outputs, as computed directly
    test = held_out_labels(split, aspect, "test")
    delta = record["test"]
    assert (delta["n_documents"], delta["n_outputs"]) == (12, 12 * N_SYSTEMS)
    docs = dict(Output.objects.filter(pk__in=test).values_list("pk", "document_id"))
    keys = sorted(test)
    values = [
        correlate(
            [run[pk] for pk in keys],
            [test[pk] for pk in keys],
            level=Level.SAMPLE,
            coefficient=Coefficient.SPEARMAN,
            docs=[docs[pk] for pk in keys],
        ).value
        for run in (start, got)
    ]
    assert delta["start"] == pytest.approx(values[0]) and delta["tuned"] == pytest.approx(values[1])
    assert delta["low"] <= delta["delta"] <= delta["high"]
    assert f"test Δ spearman (sample): {delta['delta']:+.4f}" in second
    assert "on 12 test documents" in second


def test_bad_requests_are_refused_naming_what_is_wrong(study):
    a, b = run_id("judge_a"), run_id("judge_b")
    with pytest.raises(
        CommandError, match="no study of this dataset has a split: run manage.py split"
    ):
        command("tune_judge", "--run", str(a), "--aspect", "COH", "--tuner", "calibration")
    with pytest.raises(CommandError, match="must leave some documents to tune on"):
        command("split", "--study", str(study.pk), "--dev", "0.5", "--test", "0.5")
    with pytest.raises(CommandError, match="at least two distinct runs"):
        command("jury", "--runs", f"{a},{a}", "--aspect", "COH", "--method", "mean")
    with pytest.raises(CommandError, match="no run 999999"):
        command("jury", "--runs", f"{a},999999", "--aspect", "COH", "--method", "mean")
    MetricRun.objects.filter(pk=b).update(status=MetricRun.Status.FAILED)
    with pytest.raises(CommandError, match=f"runs {b} have not succeeded"):
        command("jury", "--runs", f"{a},{b}", "--aspect", "COH", "--method", "median")
    with pytest.raises(CommandError, match="no study of this dataset has a split"):
        command(
            "jury", "--runs", f"{a},{run_id('judge_c')}", "--aspect", "COH", "--method", "weighted"
        )
