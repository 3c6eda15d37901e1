"""GPTScore runs: frozen configuration, claiming, chunked writes, resume, cancel, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring.lm import FakeLanguageModel
from studies.models import Aspect, MetricRun, MetricScore
from studies.services.runs import (
    RunError,
    RunRequest,
    cancel_run,
    execute_run,
    resume_run,
    start_run,
)
from tests.conftest import record
from tests.factories import import_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_docs_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    records = [
        record(f"d{d}", f"s{s}", output=f"Output {s} about the budget {d}.")
        for d in range(4)
        for s in range(3)
    ]
    return import_jsonl(write_jsonl(records), "runs", cast["owner"])


def test_start_run_freezes_template_aspect_version_model_and_versions(
    four_docs_dataset, tiny_model, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = start_run(
            four_docs_dataset,
            RunRequest(aspect="coherence", model=tiny_model, dimension="src-hypo"),
            local_paths=True,
        )
    assert len(callbacks) == 1 and run.status == "pending" and run.total == 12
    config = run.config
    assert (
        config["template"]["text"]
        == "Generate a coherent summary for the following text: {src}\n\nTl;dr"
    )
    assert config["aspect"] == "COH" and config["aspect_version"] == 1
    assert run.aspect_version == Aspect.objects.get(code="COH").current_version()
    assert config["model_files"]["sha256"] and config["versions"]["torch"].startswith("2.")
    assert run.label == f"gptscore:{Path(tiny_model).name}:IST:src_hypo:COH"


def test_a_run_on_a_tiny_model_scores_every_output_once_and_a_second_call_writes_nothing(
    four_docs_dataset, tiny_model
):
    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", model=tiny_model, batch_size=2),
        enqueue=False,
        local_paths=True,
    )
    assert execute_run(run.pk, chunk_outputs=3) == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.done, run.total) == ("succeeded", 12, 12)
    scores = list(MetricScore.objects.filter(run=run))
    assert len(scores) == 12 and all(s.value is not None and s.value < 0 for s in scores)
    assert all(s.details["src_hypo"]["n_tokens"][0] > 0 for s in scores)
    assert run.timings["tokens_per_s"] > 0
    assert execute_run(run.pk) == "not pending"
    assert MetricScore.objects.filter(run=run).count() == 12


def test_a_failing_document_marks_its_outputs_and_the_run_goes_on(four_docs_dataset, tiny_model):
    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", model=tiny_model),
        enqueue=False,
        local_paths=True,
    )
    calls = {"n": 0}

    class Crashing(FakeLanguageModel):
        def score_targets(self, requests):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == 3:
                raise MemoryError("worker ran out of memory")
            return super().score_targets(requests)

    assert execute_run(run.pk, model_factory=lambda r: Crashing(), chunk_outputs=3) == "succeeded"
    run.refresh_from_db()
    errors = MetricScore.objects.filter(run=run, value__isnull=True)
    assert errors.count() == 3 and "MemoryError" in errors.first().error
    assert MetricScore.objects.filter(run=run, value__isnull=False).count() == 9


def test_run_resumes_after_a_crash_without_losing_or_repeating_scores(
    four_docs_dataset, tiny_model
):
    other = start_run(
        four_docs_dataset,
        RunRequest(aspect="FLU", model=tiny_model),
        enqueue=False,
        local_paths=True,
    )

    def dies_after_two_chunks(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            if model.calls >= 2:
                raise SystemExit(
                    "killed"
                )  # not an Exception: the task dies as a killed worker would
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        return model

    with pytest.raises(SystemExit):
        execute_run(other.pk, model_factory=dies_after_two_chunks, chunk_outputs=3)
    other.refresh_from_db()
    assert other.status == "running" and other.done == 6
    kept = dict(MetricScore.objects.filter(run=other).values_list("output_id", "value"))
    assert resume_run(other, force=True, enqueue=False)
    assert (
        execute_run(other.pk, model_factory=lambda r: FakeLanguageModel(), chunk_outputs=3)
        == "succeeded"
    )
    after = dict(MetricScore.objects.filter(run=other).values_list("output_id", "value"))
    assert len(after) == 12 and all(after[k] == v for k, v in kept.items())


def test_cancel_stops_a_run_between_chunks(four_docs_dataset, tiny_model):
    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", model=tiny_model),
        enqueue=False,
        local_paths=True,
    )

    def cancelling(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            cancel_run(MetricRun.objects.get(pk=r.pk))
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        return model

    assert execute_run(run.pk, model_factory=cancelling, chunk_outputs=3) == "cancelled"
    run.refresh_from_db()
    assert run.status == "cancelled" and MetricScore.objects.filter(run=run).count() == 3


def test_a_run_cancelled_and_resumed_while_its_worker_scores_never_scores_as_pending(
    four_docs_dataset, tiny_model
):
    """Cancel then Resume before the worker reached the end of its document: the run is
    PENDING again; the worker must stop there (its resume message starts the run afresh,
    RUNNING), not score on while every page says "Pending"."""
    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", model=tiny_model),
        enqueue=False,
        local_paths=True,
    )
    statuses_while_scoring: list[str] = []

    def cancel_and_resume(r):  # type: ignore[no-untyped-def]
        model = FakeLanguageModel()
        original = model.score_targets

        def score(requests):  # type: ignore[no-untyped-def]
            statuses_while_scoring.append(MetricRun.objects.get(pk=r.pk).status)
            if len(statuses_while_scoring) == 1:
                cancel_run(MetricRun.objects.get(pk=r.pk))
                assert resume_run(MetricRun.objects.get(pk=r.pk), enqueue=False)
            return original(requests)

        model.score_targets = score  # type: ignore[method-assign]
        return model

    assert execute_run(run.pk, model_factory=cancel_and_resume, chunk_outputs=3) == "cancelled"
    run.refresh_from_db()
    assert run.status == "pending" and MetricScore.objects.filter(run=run).count() == 3
    assert statuses_while_scoring == ["running"]  # nothing scored under "pending"
    # the resume message: the run is RUNNING while it scores the rest, and ends complete
    assert execute_run(run.pk, model_factory=cancel_and_resume, chunk_outputs=3) == "succeeded"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.done == run.total == 12
    assert set(statuses_while_scoring) == {"running"}


def test_a_setting_without_a_template_is_refused_clearly(four_docs_dataset, tiny_model):
    with pytest.raises(RunError, match="No GPTScore IST template for summarization × INT"):
        start_run(four_docs_dataset, RunRequest(aspect="INT", model=tiny_model), local_paths=True)
    with pytest.raises(RunError, match="IDM needs"):
        start_run(
            four_docs_dataset,
            RunRequest(aspect="COH", setting="IDM", k=0, model=tiny_model),
            local_paths=True,
        )
    assert MetricRun.objects.filter(kind="computed").count() == 0


def test_idm_and_avg_f_runs_record_k_seed_and_both_templates(four_docs_dataset, tiny_model):
    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", setting="IDM", k=2, seed=5, dimension="avg-f", model=tiny_model),
        enqueue=False,
        local_paths=True,
    )
    assert run.config["k"] == 2 and run.config["seed"] == 5
    assert (
        "{ref}" in run.config["template"]["text"]
        and run.config["reverse_template"]["target"] == "{ref}"
    )
    assert execute_run(run.pk, model_factory=lambda r: FakeLanguageModel()) == "succeeded"
    assert MetricScore.objects.filter(run=run, value__isnull=False).count() == 12


def test_a_run_freezes_its_precision_and_records_the_engine_it_scored_with(
    four_docs_dataset, tiny_model, client, cast
):
    import torch

    run = start_run(
        four_docs_dataset,
        RunRequest(aspect="COH", model=tiny_model, precision="exact"),
        enqueue=False,
        local_paths=True,
    )
    assert run.config["precision"] == "exact"
    assert execute_run(run.pk) == "succeeded"
    run.refresh_from_db()
    (engine,) = run.provenance["engines"]
    assert (engine["device"], engine["dtype"], engine["precision"]) == ("cpu", "float32", "exact")
    assert engine["torch"] == torch.__version__ and engine["tree_attention"] is True
    client.force_login(cast["owner"])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Precision exact: scored in <strong>exact</strong> (float32 on cpu" in page
    assert "scored by different engines" not in page

    # resumed on a worker that scores differently: both engines are kept, and the page says so
    from studies.services.runs.core import record_engine

    record_engine(run, {**engine, "device": "cuda:0", "dtype": "bfloat16", "precision": "fast"})
    record_engine(run, {**engine, "device": "cuda:0", "dtype": "bfloat16", "precision": "fast"})
    run.refresh_from_db()
    assert [e["precision"] for e in run.provenance["engines"]] == ["exact", "fast"]
    assert "scored by different engines" in client.get(f"/runs/{run.pk}/").content.decode()


def test_an_unknown_precision_is_refused_and_saves_nothing(four_docs_dataset, tiny_model):
    with pytest.raises(RunError, match="Unknown precision 'half'"):
        start_run(
            four_docs_dataset,
            RunRequest(aspect="COH", model=tiny_model, precision="half"),
            enqueue=False,
            local_paths=True,
        )
    assert not MetricRun.objects.filter(metric="gptscore").exists()


def test_every_metric_a_request_may_name_has_one_runner():
    from studies.services.runs import METRICS
    from studies.services.runs.registry import runner, runners

    assert set(METRICS) == set(runners())  # the request's list and the table agree
    for metric in METRICS:
        found = runner(metric)
        assert found is not None and callable(found.build) and callable(found.prepare), metric
    assert runner("nonsense") is None
