"""Training jobs through the service and ``train_metric``: the JSON summary, the frozen
configuration and split, the checkpoint, bad input that creates nothing, cancel, and a
second execution that does nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from learned.models import TrainedMetric
from learned.services.jobs import TrainingRequest, cancel_job, create_job
from learned.services.training import execute_job
from scoring.learned.checkpoint import sha256_of

pytestmark = pytest.mark.django_db


def _train(*args: str) -> dict[str, object]:
    from io import StringIO

    out = StringIO()
    call_command("train_metric", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_train_metric_prints_the_json_summary_last_and_stores_a_checked_checkpoint(
    judged, tiny_backbone
):
    summary = _train(
        "--dataset",
        "judged",
        "--aspect",
        "coherence",
        "--backbone",
        tiny_backbone,
        "--epochs",
        "5",
        "--seed",
        "1",
    )
    job = TrainedMetric.objects.get(pk=summary["model"])
    assert job.status == "succeeded" and job.setup == "single" and job.mode == "head"
    assert summary["pairs"] == {k: job.pairs[k] for k in ("train", "validation", "test")}
    assert all(summary["pairs"][k] > 0 for k in ("train", "validation", "test"))
    for side in ("base", "trained"):
        assert 0.0 <= summary["test"][side]["pairwise_accuracy"] <= 1.0
        assert -1.0 <= summary["test"][side]["spearman"] <= 1.0
    assert summary["seconds"] > 0
    path = Path(settings.DATA_DIR) / job.checkpoint
    assert path.is_file() and sha256_of(path) == job.checkpoint_sha256 and job.version == 1
    assert 1 <= len(job.curves) <= 5 and {"loss", "validation_accuracy"} <= set(job.curves[0])
    config = job.config
    assert (
        config["seed"] == 1 and config["margin"] == 0.5 and config["hyperparameters"]["epochs"] == 5
    )
    assert config["backbone"]["pooling"] == "last+answer" and config["backbone"]["files"]["sha256"]
    # no --layer: a frozen decoder's features come from 40% of its blocks (1 of the tiny 2)
    assert (config["backbone"]["layer"], config["backbone"]["layers"]) == (1, 2)
    assert {"torch", "transformers", "numpy"} <= set(config["versions"])
    assert "Rate the coherence" in config["target"]["instruction"]


def test_an_asked_layer_and_full_mode_keep_the_blocks_they_ask_for(judged, tiny_backbone):
    asked = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, layer=2),
        enqueue=False,
        local_paths=True,
    )
    full = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, mode="full"),
        enqueue=False,
        local_paths=True,
    )
    assert asked.config["backbone"]["layer"] == full.config["backbone"]["layer"] == 2


def test_the_split_is_frozen_by_document_and_reproducible(judged, tiny_backbone):
    request = TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, seed=7)
    first = create_job(request, enqueue=False, local_paths=True)
    second = create_job(request, enqueue=False, local_paths=True)
    parts = first.split["judged"]
    assert first.split == second.split
    assert [len(parts[p]) for p in ("train", "validation", "test")] == [10, 1, 1]
    assert set(parts["train"]).isdisjoint(parts["test"]) and set(parts["train"]).isdisjoint(
        parts["validation"]
    )
    assert first.test_docs() == parts["test"]
    # 6 pairs per document (scores 5, 4, 2, 1 all differ by more than 0.5)
    assert (first.pairs["train"], first.pairs["validation"], first.pairs["test"]) == (60, 6, 6)


def test_multi_and_cross_task_setups_train_on_other_aspects_and_test_on_the_target(
    judged, tiny_backbone
):
    multi = create_job(
        TrainingRequest(dataset="judged", aspect="COH", setup="multi", backbone=tiny_backbone),
        enqueue=False,
        local_paths=True,
    )
    cross = create_job(
        TrainingRequest(dataset="judged", aspect="COH", setup="cross", backbone=tiny_backbone),
        enqueue=False,
        local_paths=True,
    )
    assert [t["aspect"] for t in multi.config["tasks"]] == ["COH", "FLU"]
    assert [t["aspect"] for t in cross.config["tasks"]] == ["FLU"]
    assert multi.pairs["train"] == 120 and cross.pairs["train"] == 60 and cross.pairs["test"] == 6
    assert cross.config["tasks"][0]["instruction"] != cross.config["target"]["instruction"]


def test_too_few_pairs_says_how_many_and_why_and_creates_nothing(judged, tiny_backbone):
    with pytest.raises(
        CommandError,
        match=r"Too few preference pairs: 0 train pairs.*"
        r"0 ties dropped, 72 differing by no more than the margin 5",
    ):
        _train(
            "--dataset",
            "judged",
            "--aspect",
            "coherence",
            "--backbone",
            tiny_backbone,
            "--margin",
            "5",
        )
    assert not TrainedMetric.objects.exists()


def test_an_aspect_without_judgments_is_an_error_and_creates_nothing(judged, tiny_backbone):
    with pytest.raises(CommandError, match="has no judgments on judged"):
        _train("--dataset", "judged", "--aspect", "relevance", "--backbone", tiny_backbone)
    assert not TrainedMetric.objects.exists()


def test_the_dataset_and_aspect_are_found_among_the_owners_own(
    judged, cast, write_jsonl, tiny_backbone
):
    """Dataset names and aspect codes are unique per owner: an ambiguous name is an error
    naming both, and ``owner/name`` trains on that owner's dataset."""
    from studies.services.imports import ImportOptions, import_file
    from tests.learned.conftest import records

    path = write_jsonl(records(), name="theirs.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="judged",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=cast["outsider"],
        ),
    )
    with pytest.raises(
        CommandError, match=r"owner/judged.*outsider/judged|outsider/judged.*owner/judged"
    ):
        _train("--dataset", "judged", "--aspect", "coherence", "--backbone", tiny_backbone)
    assert not TrainedMetric.objects.exists()
    _train("--dataset", "outsider/judged", "--aspect", "coherence", "--backbone", tiny_backbone)
    assert TrainedMetric.objects.get().dataset.owner == cast["outsider"]


def test_a_backbone_that_cannot_be_loaded_is_an_error_and_creates_nothing(judged, tmp_path):
    (tmp_path / "broken").mkdir()
    with pytest.raises(CommandError, match="cannot be loaded"):
        _train(
            "--dataset", "judged", "--aspect", "coherence", "--backbone", str(tmp_path / "broken")
        )
    assert not TrainedMetric.objects.exists()


def test_executing_a_job_twice_trains_once(judged, tiny_backbone):
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=2),
        enqueue=False,
        local_paths=True,
    )
    assert execute_job(job.pk) == "succeeded"
    job.refresh_from_db()
    assert execute_job(job.pk) == "not pending"
    assert TrainedMetric.objects.get(pk=job.pk).checkpoint_sha256 == job.checkpoint_sha256


def test_a_cancelled_job_does_not_train(judged, tiny_backbone):
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone),
        enqueue=False,
        local_paths=True,
    )
    assert cancel_job(job)
    assert execute_job(job.pk) == "not pending"
    assert TrainedMetric.objects.get(pk=job.pk).status == "cancelled"


def test_the_second_job_reads_the_features_from_the_cache(
    judged, tiny_backbone, settings, tmp_path
):
    settings.DATA_DIR = tmp_path  # an empty feature cache
    first = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=1),
        enqueue=False,
        local_paths=True,
    )
    execute_job(first.pk)
    first.refresh_from_db()
    assert first.progress["seconds"]["feature_cache_hits"] == 0
    second = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, epochs=1, seed=3),
        enqueue=False,
        local_paths=True,
    )
    execute_job(second.pk)
    second.refresh_from_db()
    assert second.progress["seconds"]["feature_cache_hits"] == 48


def test_weights_that_cannot_be_loaded_fail_the_job_with_the_reason(
    judged, tiny_backbone, tmp_path
):
    """The job is planned from the backbone's configuration files (a page waits for
    that); the worker loads the weights, and broken ones end the job FAILED, saying why."""
    import shutil

    folder = tmp_path / "broken-weights"
    shutil.copytree(tiny_backbone, folder)
    (folder / "model.safetensors").write_bytes(b"not a model")
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=str(folder)),
        enqueue=False,
        local_paths=True,
    )
    assert execute_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and "cannot be loaded" in job.error and not job.checkpoint


def test_a_backbone_that_changed_since_the_job_was_planned_fails_the_job(
    judged, tiny_backbone, tmp_path
):
    import shutil

    folder = tmp_path / "changing"
    shutil.copytree(tiny_backbone, folder)
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=str(folder)),
        enqueue=False,
        local_paths=True,
    )
    assert job.config["backbone"]["max_length"] == 512
    settings_file = folder / "tokenizer_config.json"
    settings_file.write_text(
        json.dumps({**json.loads(settings_file.read_text()), "model_max_length": 64})
    )
    assert execute_job(job.pk) == "failed"
    job.refresh_from_db()
    assert (
        "loaded differently from the job's plan (max_length 512 (planned) vs 64 (loaded))"
        in job.error
    )


def test_the_shell_may_name_any_path_and_a_web_request_may_not(judged, tiny_backbone, cast):
    from learned.services.data import TrainingError

    request = TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone)
    with pytest.raises(TrainingError, match="Unknown model") as refused:
        create_job(request, enqueue=False)
    assert refused.value.field == "backbone" and not TrainedMetric.objects.exists()
    with pytest.raises(TrainingError, match="no dataset 'judged'") as hidden:
        create_job(request, user=cast["outsider"], enqueue=False, local_paths=True)
    assert hidden.value.field == "dataset" and not TrainedMetric.objects.exists()
    assert (
        create_job(request, user=cast["owner"], enqueue=False, local_paths=True).created_by
        == cast["owner"]
    )
