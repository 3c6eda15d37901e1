"""Columnar snapshots: the frame read from a dataset's snapshot equals the frame read
from its rows, cell by cell, for every way a page asks for one; a snapshot is written once
per data version, never trusted after the version moves, and the rows are read instead
whenever no snapshot can be had."""

from __future__ import annotations

import fcntl
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q

from scoring.stats import Aggregate
from studies.models import Aspect, Dataset, Document, Judgment, MetricScore, Output
from studies.services import queue
from studies.services.analysis import ceiling, dashboards, matrix_cost, snapshot
from studies.services.analysis.dashboards import NO_JUDGMENT, compute_and_cache, frame_for
from studies.services.analysis.frames import (
    JudgmentFilter,
    ScoreFrame,
    frame_from_rows,
    load_frame,
)
from studies.services.analysis.params import MatrixParams
from studies.services.analysis.snapshot import store
from studies.services.analysis.snapshot.layout import Identity
from studies.services.deletion import delete_dataset
from studies.services.imports import ImportOptions, import_file
from studies.tasks import write_snapshot
from tests.factories import MetricRunFactory, UserFactory

pytestmark = pytest.mark.django_db


def records(file: int, n_docs: int = 12, n_systems: int = 5) -> list[dict[str, object]]:
    """One file's records: ratings of two aspects (file 1) or of one with other
    ratings and a metric more (file 2), some outputs left unjudged."""
    rng = np.random.default_rng(file)
    found = []
    for d in range(n_docs):
        for s in range(n_systems):
            human = {"coherence": float(rng.integers(1, 6))}
            if file == 1 and (d + s) % 4:
                human["fluency"] = float(rng.integers(1, 6))
            metrics = {"good": round(human["coherence"] + float(rng.normal(0, 0.8)), 4)}
            if file == 1:
                metrics["noise"] = round(float(rng.normal()), 4)
            else:
                metrics["second"] = round(float(rng.normal()), 6)
            found.append(
                {
                    "doc_id": f"doc{d:02d}",
                    "system_id": f"sys{s}" if s != 3 else "Sys-B",  # upper case sorts first
                    "source": f"Source {d}.",
                    "references": [f"Ref {d}."],
                    "output": f"Output {d}-{s}.",
                    "human": human if file == 1 or d % 3 else {},
                    "metrics": metrics,
                }
            )
    return found


@pytest.fixture
def rich(write_jsonl, cast):  # type: ignore[no-untyped-def]
    """A dataset judged by two files and three annotator accounts (non-integer weights
    later), with a partial run, a score that failed, a run without scores and a
    document without outputs."""
    for file in (1, 2):
        path = write_jsonl(records(file), name=f"file{file}.jsonl")
        import_file(
            path,
            ImportOptions(
                dataset="rich",
                task="summarization",
                file_format="jsonl",
                file_name=path.name,
                owner=cast["owner"],
            ),
        )
    dataset = Dataset.objects.get(name="rich")
    coherence = Aspect.objects.get(code="COH")
    relevance = Aspect.objects.get(code="REL")
    outputs = list(Output.objects.filter(document__dataset=dataset).order_by("-pk"))
    annotators = [UserFactory(username=f"rater{k}") for k in range(3)]
    rng = np.random.default_rng(7)
    for k, output in enumerate(outputs):  # newest outputs first: ids not in output order
        for a, annotator in enumerate(annotators):
            if (k + a) % 3:
                Judgment.objects.create(
                    output=output,
                    aspect=coherence if a < 2 else relevance,
                    annotator=annotator,
                    value=float(rng.integers(1, 6)),
                )
    partial = MetricRunFactory(
        dataset=dataset, label="partial", kind="imported", status="succeeded"
    )
    MetricScore.objects.bulk_create(
        [
            MetricScore(run=partial, output=o, value=None if k == 4 else 0.1 * k, error="")
            if k != 4
            else MetricScore(run=partial, output=o, value=None, error="failed")
            for k, o in enumerate(outputs[:30])
        ]
    )
    MetricRunFactory(dataset=dataset, label="empty", kind="imported", status="succeeded")
    Document.objects.create(dataset=dataset, doc_key="doc-without-outputs", source="s")
    dataset.bump_data_version()
    dataset.refresh_from_db()
    return dataset, annotators


def assert_same(a: ScoreFrame, b: ScoreFrame) -> None:
    """Cell by cell, exactly (NaN where NaN)."""
    assert np.array_equal(a.output_ids, b.output_ids)
    assert np.array_equal(a.doc_codes, b.doc_codes)
    assert np.array_equal(a.system_codes, b.system_codes)
    assert a.doc_keys == b.doc_keys and a.system_names == b.system_names
    assert a.aspects == b.aspects and a.runs == b.runs
    assert a.human.shape == b.human.shape and a.metrics.shape == b.metrics.shape
    assert np.array_equal(a.human, b.human, equal_nan=True)
    assert np.array_equal(a.metrics, b.metrics, equal_nan=True)


def both(dataset: Dataset, **options: object) -> tuple[ScoreFrame, ScoreFrame]:
    columnar = load_frame(dataset, **options)  # type: ignore[arg-type]
    assert snapshot.current(dataset) is not None  # it was read from a snapshot
    return columnar, frame_from_rows(dataset, **options)  # type: ignore[arg-type]


def test_the_snapshot_frame_equals_the_row_frame_cell_by_cell(rich):
    dataset, annotators = rich
    columnar, rows = both(dataset)
    assert_same(columnar, rows)
    assert [a.code for a in columnar.aspects] == ["COH", "FLU", "REL"]
    assert {r.label for r in columnar.runs} >= {"good", "noise", "second", "partial", "empty"}
    assert "doc-without-outputs" not in columnar.doc_keys
    assert columnar.system_names[0] == "Sys-B"
    partial = columnar.run_index(next(r.pk for r in columnar.runs if r.label == "partial"))
    assert np.isfinite(columnar.metrics[:, partial]).sum() == 29  # the failed score: NaN
    # some outputs have several judgments of coherence (two files, two accounts)
    assert not np.array_equal(columnar.human[:, 0], np.round(columnar.human[:, 0]))


@pytest.mark.parametrize(
    "options",
    [
        {"aggregate": Aggregate.MEDIAN},
        {"only_runs": [], "only_aspects": []},
        {"judgments": JudgmentFilter.from_file("file2.jsonl")},
        {"judgments": JudgmentFilter.from_file("no-such-file.jsonl")},
        {"judgments": JudgmentFilter(NO_JUDGMENT)},
    ],
    ids=["median", "nothing", "one-file", "unknown-file", "no-judgment"],
)
def test_every_way_of_asking_gives_the_row_paths_numbers(rich, options):
    dataset, _ = rich
    assert_same(*both(dataset, **options))


def test_exclusions_weights_subsets_and_queries_give_the_row_paths_numbers(rich):
    dataset, annotators = rich
    coherence = Aspect.objects.get(code="COH")
    first, second, third = (u.pk for u in annotators)
    weights = {(first, coherence.pk): 0.37, (second, coherence.pk): 2.9, (third, 999): 5.0}
    some_run = dataset.runs.order_by("pk").values_list("pk", flat=True)[1]
    for options in (
        {"exclude_annotators": {first}},
        {"judgment_weights": weights},
        {"judgment_weights": weights, "exclude_annotators": {second}},
        {"only_runs": [some_run], "only_aspects": [coherence.pk]},
        {"judgments": JudgmentFilter(Q(annotator_id__in=[first, third]))},
        {"judgments": Q(value__gte=3)},  # a bare Q, as callers of load_frame may pass
    ):
        columnar, rows = both(dataset, **options)
        assert_same(columnar, rows)
    assert [a.code for a in columnar.aspects] == ["COH", "FLU", "REL"]


@pytest.mark.parametrize(
    "params",
    [
        MatrixParams(resamples=200),
        MatrixParams(level="system", coefficient="pearson", resamples=200),
        MatrixParams(level="dataset", coefficient="kendall", ci=False),
        MatrixParams(coefficient="acc23", tie_calibration=True, resamples=100),
        MatrixParams(source="file:file1.jsonl", resamples=100),
    ],
    ids=["sample-spearman", "system-pearson", "dataset-kendall", "acc23", "one-file"],
)
def test_the_cold_matrix_with_its_ceiling_is_the_same_on_either_path(rich, settings, params):
    dataset, _ = rich
    on = compute_and_cache(dataset, params)
    assert snapshot.current(dataset) is not None
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": False}
    off = compute_and_cache(dataset, params)
    on.pop("seconds"), off.pop("seconds")
    assert on == off
    assert any(entry["value"] is not None for entry in on["ceiling"]) or params.source


def test_a_snapshot_is_written_once_per_data_version(rich):
    dataset, _ = rich
    first = snapshot.ensure(dataset)
    assert snapshot.ensure(dataset).manifest["written_at"] == first.manifest["written_at"]
    assert first.version == dataset.data_version
    assert first.manifest["n_outputs"] == 60 and first.manifest["n_documents"] == 12
    assert write_snapshot(dataset.pk) == f"v{first.version} already written"


def test_a_moved_version_is_never_trusted_and_old_versions_go(rich, settings):
    dataset, _ = rich
    old = snapshot.ensure(dataset)
    output = Output.objects.filter(document__dataset=dataset).order_by("pk").first()
    coherence = Aspect.objects.get(code="COH")
    Judgment.objects.filter(output=output, aspect=coherence).delete()  # the signal bumps
    frame = load_frame(dataset)
    assert np.isnan(frame.human[0, frame.aspect_index(coherence.pk)])
    new = snapshot.current(dataset)
    assert new is not None and new.version > old.version
    assert old.path.is_dir()  # kept a while for readers that opened it
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOT_RETAIN_SECONDS": 0.0}
    assert snapshot.remove_old(Identity.of(dataset.pk, dataset.created_at, new.version)) == [
        old.path
    ]
    assert_same(load_frame(dataset), frame_from_rows(dataset))


def test_a_snapshot_of_a_version_above_the_databases_is_removed(rich):
    dataset, _ = rich
    written = snapshot.ensure(dataset)
    ahead = written.path.with_name(f"v{written.version + 5:012d}")
    ahead.mkdir()
    snapshot.remove_old(Identity.of(dataset.pk, dataset.created_at, written.version))
    assert not ahead.exists() and written.path.is_dir()


def test_data_changed_while_writing_is_written_again(rich, monkeypatch):
    dataset, _ = rich
    writes = []
    original = store.write_scores

    def changing(found: Dataset, path: Path) -> dict[str, object]:
        writes.append(path)
        if len(writes) == 1:  # another process adds a run's score meanwhile
            MetricScore.objects.filter(run__dataset=dataset).order_by("pk").first().delete()
        return original(found, path)

    monkeypatch.setattr(store, "write_scores", changing)
    written = snapshot.ensure(dataset)
    assert len(writes) == 2
    dataset.refresh_from_db()
    assert written.version == dataset.data_version
    assert_same(load_frame(dataset), frame_from_rows(dataset))


def test_rows_are_read_inside_an_uncommitted_transaction(rich):
    dataset, _ = rich
    with transaction.atomic():
        Output.objects.filter(document__dataset=dataset).order_by(
            "pk"
        ).first().judgments.all().delete()
        frame = load_frame(dataset)
        assert snapshot.current(dataset) is None  # nothing written from rows not committed
        assert_same(frame, frame_from_rows(dataset))


def test_rows_are_read_when_snapshots_are_off_or_cannot_be_written(rich, settings, tmp_path):
    dataset, _ = rich
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": False}
    assert_same(load_frame(dataset), frame_from_rows(dataset))
    assert write_snapshot(dataset.pk) == "snapshots off"
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": True, "SNAPSHOT_DIR": blocked}
    with pytest.raises(snapshot.SnapshotUnavailable, match="cannot write"):
        snapshot.ensure(dataset)
    assert_same(load_frame(dataset), frame_from_rows(dataset))


def test_a_reader_waits_for_the_writer_then_reads_the_rows(rich, settings):
    dataset, _ = rich
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOT_WAIT_SECONDS": 0.3}
    found = store.identity(dataset.pk)
    assert found is not None
    found.folder.mkdir(parents=True, exist_ok=True)
    with open(found.folder / ".lock", "a+b") as held:  # another process is writing
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(snapshot.SnapshotUnavailable, match="too long"):
            snapshot.ensure(dataset)
        assert_same(load_frame(dataset), frame_from_rows(dataset))
        fcntl.flock(held, fcntl.LOCK_UN)
    assert snapshot.ensure(dataset).version == dataset.data_version


def test_an_import_asks_a_light_worker_for_the_snapshot(
    write_jsonl, cast, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(queue, "send", lambda name, *args, **kw: sent.append((name, *args)))
    path = write_jsonl(records(1, n_docs=3), name="small.jsonl")
    options = ImportOptions(
        dataset="small", task="summarization", file_format="jsonl", file_name=path.name
    )
    with django_capture_on_commit_callbacks(execute=True):
        import_file(path, replace(options, owner=cast["owner"]))
    dataset = Dataset.objects.get(name="small")
    assert (queue.WRITE_SNAPSHOT, dataset.pk) in sent
    assert write_snapshot(dataset.pk).startswith(f"v{dataset.data_version} written")
    assert write_snapshot(dataset.pk) == f"v{dataset.data_version} already written"


def test_frame_for_reads_the_snapshot_with_the_pages_options(rich):
    dataset, annotators = rich
    params = MatrixParams(source="file:file2.jsonl")
    frame = frame_for(dataset, params)
    assert snapshot.current(dataset) is not None
    rows = frame_from_rows(dataset, judgments=JudgmentFilter.from_file("file2.jsonl"))
    assert_same(frame, rows)
    assert asdict(params)["source"] == "file:file2.jsonl"


def test_a_deleted_datasets_snapshots_are_removed(rich, django_capture_on_commit_callbacks):
    dataset, _ = rich
    written = snapshot.ensure(dataset)
    with django_capture_on_commit_callbacks(execute=True):
        delete_dataset(dataset)
    assert not written.path.exists() and not written.path.parent.exists()


def test_the_task_for_a_dataset_deleted_meanwhile_removes_what_is_left(rich):
    dataset, _ = rich
    written = snapshot.ensure(dataset)
    pk = dataset.pk
    dataset.delete()  # not through the service: its snapshot stays behind
    assert written.path.exists()
    assert write_snapshot(pk) == "dataset gone"
    assert not written.path.exists()


def test_the_pages_sizes_and_sources_come_from_the_manifest_as_from_the_rows(
    rich, settings, django_assert_max_num_queries
):
    dataset, _ = rich
    snapshot.ensure(dataset)
    with django_assert_max_num_queries(4):  # the identity, documents, runs: no scan
        from_manifest = matrix_cost.matrix_size(dataset)
    sources = dashboards._judgment_sources(dataset)
    assert {"file:file1.jsonl", "file:file2.jsonl"} <= {value for value, _ in sources}
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": False}
    cache.clear()  # the sizes are cached per data version
    assert snapshot.current(dataset) is None  # off: not even a written one is read
    assert matrix_cost.matrix_size(dataset) == from_manifest
    assert dashboards._judgment_sources(dataset) == sources


def test_the_ceilings_judgments_are_the_same_on_either_path_with_an_annotator_left_out(
    rich, settings
):
    dataset, annotators = rich
    frame = load_frame(dataset)
    left_out = {annotators[1].pk}
    on = ceiling.judgment_table(dataset, frame, left_out)
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": False}
    off = ceiling.judgment_table(dataset, frame, left_out)
    assert on[1] == off[1] == ["rater0", "rater2", "file file1.jsonl", "file file2.jsonl"]
    assert np.array_equal(on[0], off[0])
    assert on[0].shape[0] == Judgment.objects.exclude(annotator__in=left_out).count()


def test_imported_raters_are_annotators_of_their_own_on_either_path(rich, write_jsonl, settings):
    """A file's raters (one named like an account) are annotators apart from the file's
    other raters, the accounts and the other files, read alike from both paths."""
    dataset, annotators = rich
    lines = []
    for line in records(1)[:20]:
        raters = {"rater0": float(len(lines) % 5 + 1), "zed": 3.0}
        if len(lines) % 2:
            raters["amy"] = 2.0
        lines.append({**line, "human": {}, "annotators": {"coherence": raters}})
    path = write_jsonl(lines, name="raters.jsonl")
    options = ImportOptions(
        dataset="rich",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=dataset.owner,
    )
    import_file(path, options)
    dataset.refresh_from_db()
    columnar, rows = both(dataset)
    assert_same(columnar, rows)
    on = ceiling.judgment_table(dataset, columnar, set())
    settings.CONCORDIA = {**settings.CONCORDIA, "SNAPSHOTS": False}
    off = ceiling.judgment_table(dataset, rows, set())
    assert (
        on[1]
        == off[1]
        == [
            "rater0",
            "rater1",
            "rater2",
            "file file1.jsonl",
            "file file2.jsonl",
            "amy (raters.jsonl)",
            "rater0 (raters.jsonl)",
            "zed (raters.jsonl)",
        ]
    )
    assert np.array_equal(on[0], off[0])
    per_code = np.bincount(on[0][:, 2].astype(np.int64), minlength=8)
    assert per_code[5:].tolist() == [10, 20, 20]
