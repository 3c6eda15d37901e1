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
    summary = _train("--dataset", "judged", "--aspect", "coherence", "--backbone", tiny_backbone,
                     "--epochs", "5", "--seed", "1")  # fmt: skip
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
    assert config["backbone"]["pooling"] == "last" and config["backbone"]["files"]["sha256"]
    assert {"torch", "transformers", "numpy"} <= set(config["versions"])
    assert "Rate the coherence" in config["target"]["instruction"]


def test_the_split_is_frozen_by_document_and_reproducible(judged, tiny_backbone):
    request = TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone, seed=7)
    first = create_job(request, enqueue=False)
    second = create_job(request, enqueue=False)
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
    multi = create_job(TrainingRequest(dataset="judged", aspect="COH", setup="multi",
                                       backbone=tiny_backbone), enqueue=False)  # fmt: skip
    cross = create_job(TrainingRequest(dataset="judged", aspect="COH", setup="cross",
                                       backbone=tiny_backbone), enqueue=False)  # fmt: skip
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
        _train("--dataset", "judged", "--aspect", "coherence", "--backbone", tiny_backbone,
               "--margin", "5")  # fmt: skip
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
    from studies.services.datasets import ImportOptions, import_file
    from tests.learned.conftest import records

    path = write_jsonl(records(), name="theirs.jsonl")
    import_file(path, ImportOptions(dataset="judged", task="summarization", file_format="jsonl",
                                    file_name=path.name, owner=cast["outsider"]))  # fmt: skip
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
    job = create_job(TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone,
                                     epochs=2), enqueue=False)  # fmt: skip
    assert execute_job(job.pk) == "succeeded"
    job.refresh_from_db()
    assert execute_job(job.pk) == "not pending"
    assert TrainedMetric.objects.get(pk=job.pk).checkpoint_sha256 == job.checkpoint_sha256


def test_a_cancelled_job_does_not_train(judged, tiny_backbone):
    job = create_job(
        TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone), enqueue=False
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
    )
    execute_job(first.pk)
    first.refresh_from_db()
    assert first.progress["seconds"]["feature_cache_hits"] == 0
    second = create_job(TrainingRequest(dataset="judged", aspect="COH", backbone=tiny_backbone,
                                        epochs=1, seed=3), enqueue=False)  # fmt: skip
    execute_job(second.pk)
    second.refresh_from_db()
    assert second.progress["seconds"]["feature_cache_hits"] == 48
