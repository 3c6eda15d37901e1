"""The client end to end against a live server and a real Celery worker: upload, import,
ROUGE runs waited for with progress, correlations equal to scipy's on the stored scores and
judgments, and the exports; then an import the worker refuses, named line by line."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from statistics import mean

import pytest
from concordia_client import Conflict, ImportFailed, Run
from scipy import stats

from studies.models import Dataset, Judgment, MetricScore
from tests.client.conftest import overlapping_records
from tests.conftest import record

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def stored(run_id: int, dataset_id: int, code: str) -> list[tuple[str, float, float]]:
    """(doc key, metric score, judgment) of each output, read from the database."""
    scores = dict(MetricScore.objects.filter(run_id=run_id).values_list("output_id", "value"))
    judged = Judgment.objects.filter(output__document__dataset_id=dataset_id, aspect__code=code)
    return [
        (doc, scores[output], value)
        for output, doc, value in judged.values_list(
            "output_id", "output__document__doc_key", "value"
        )
    ]


def test_upload_score_wait_correlate_and_export_through_the_client(
    api, celery_worker_process, write_jsonl, tmp_path
):
    records = overlapping_records(n_docs=4, systems=3)
    job = api.upload(write_jsonl(records, "council.jsonl"), dataset="council")
    assert job.status == "succeeded" and job.problems == []
    assert job.summary["outputs"] == {"created": 12, "updated": 0}
    dataset = api.dataset(job.dataset)
    assert (dataset.name, dataset.task, dataset.n_documents) == ("council", "summarization", 4)
    assert [d.id for d in api.datasets(name="council")] == [dataset.id]

    runs = api.start_run(dataset, "rouge")
    assert sorted(run.metric for run in runs) == ["rouge1", "rouge2", "rougeL"]
    seen: list[Run] = []
    ended = api.wait_for_runs(runs, progress=seen.append, timeout=120)
    assert [run.id for run in ended] == [run.id for run in runs]
    assert all(run.status == "succeeded" and run.done == run.total == 12 for run in ended)
    for run in runs:  # each poll's progress, never going back, up to the total
        done = [state.done for state in seen if state.id == run.id]
        assert done == sorted(done) and done[-1] == 12

    # the scores: the client's list, its CSV export and the database agree
    rouge1 = next(run for run in ended if run.metric == "rouge1")
    scores = {score.output: score.value for score in api.run_scores(rouge1)}
    assert scores == dict(
        MetricScore.objects.filter(run_id=rouge1.id).values_list("output", "value")
    )
    exported = csv.DictReader(io.StringIO(api.export_run_scores(rouge1, "csv")))
    assert {int(row["output"]): float(row["value"]) for row in exported} == pytest.approx(scores)

    # dataset level: Pearson over all outputs, as scipy computes it from the stored rows
    matrix = api.correlations(dataset, level="dataset", coef="pearson", ci=False)
    assert matrix.coefficient_label.startswith("Pearson") and matrix.n_outputs == 12
    for run in ended:
        for code in ("COH", "FLU"):
            _, x, y = zip(*stored(run.id, dataset.id, code), strict=True)
            expected = stats.pearsonr(x, y).statistic
            assert matrix.value(run.id, code) == pytest.approx(expected, abs=1e-9), (run, code)
    assert matrix.value(rouge1.label, "COH") > 0.5  # coherence follows the kept words

    # sample level (the defaults): Spearman within each document, then averaged
    sample = api.correlations(dataset)
    by_doc = defaultdict(list)
    for doc, x, y in stored(rouge1.id, dataset.id, "COH"):
        by_doc[doc].append((x, y))
    expected = mean(
        stats.spearmanr(*zip(*pairs, strict=True)).statistic for pairs in by_doc.values()
    )
    assert sample.value(rouge1.id, "COH") == pytest.approx(expected, abs=1e-9)
    assert sample.params["level"] == "sample" and sample.cell(rouge1.id, "COH").low is not None

    # the table's exports hold the same numbers
    as_json = json.loads(
        api.export_correlations(dataset, "json", level="dataset", coef="pearson", ci=False)
    )
    assert [[c["value"] for c in col["cells"]] for col in as_json["columns"]] == [
        [c.value for c in col.cells] for col in matrix.columns
    ]
    rows = csv.DictReader(
        io.StringIO(api.export_correlations(dataset, level="dataset", coef="pearson", ci=False))
    )
    table = matrix.table()
    for row in rows:
        if row["run"] in table:
            assert float(row["COH"]) == pytest.approx(table[row["run"]]["COH"], abs=1e-6)
    assert "\\toprule" in api.export_correlations(
        dataset, "tex", level="dataset", coef="pearson", ci=False
    )

    # the judge report card (the ROUGE runs are baselines: asked for with runs="all")
    card = api.report_card(dataset, level="dataset", coef="pearson", runs="all", sort="corr")
    rows = {(r["run"]["pk"], r["aspect"]["code"]): r for r in card["rows"]}
    assert set(rows) == {(run.id, code) for run in ended for code in ("COH", "FLU")}
    for run in ended:
        assert rows[(run.id, "COH")]["correlation"]["value"] == pytest.approx(
            matrix.value(run.id, "COH"), abs=1e-9
        )
    assert [r["run"]["pk"] for r in card["rows"]] == [
        r["run"]["pk"] for r in sorted(card["rows"], key=lambda r: -r["correlation"]["value"])
    ]
    with pytest.raises(Conflict):  # a ROUGE run has no pairs
        api.pairwise(rouge1)

    # the dataset's export: the file's judgments and the run's scores, streamed to a file
    path = api.export_dataset(dataset, "jsonl", to=tmp_path / "council-out.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {(r["doc_id"], r["system_id"]): r["human"]["coherence"] for r in lines} == {
        (r["doc_id"], r["system_id"]): r["human"]["coherence"] for r in records
    }
    by_key = {
        (s.doc_key, s.system_id): s.value for s in api.run_scores(rouge1) if s.value is not None
    }
    assert {(r["doc_id"], r["system_id"]): r["metrics"][rouge1.label] for r in lines} == by_key
    judgments = api.judgments(dataset=dataset, aspect_code="FLU")
    assert len(judgments) == 12 and {j.source for j in judgments} == {"import"}
    assert sorted(j.value for j in judgments) == sorted(r["human"]["fluency"] for r in records)
    assert [j for j in api.jobs() if j.title.endswith("on council")] == []  # all done
    renamed = api.rename_run(runs[0], "ROUGE-1, council")
    assert renamed.label == "ROUGE-1, council" and api.run(runs[0]).label == renamed.label
    with pytest.raises(Conflict):
        api.rename_run(runs[1], "ROUGE-1, council")


def test_a_file_the_worker_refuses_raises_import_failed_naming_each_line(
    api, celery_worker_process, write_jsonl, settings
):
    settings.API_SYNC_IMPORT_MAX_BYTES = 0  # never imported in the request: the worker does it
    path = write_jsonl(
        [record("d1", "s1"), '{"doc_id": "d1", "system_id": ', record("d2", "s1", output=5)],
        "broken.jsonl",
    )
    job = api.upload(path, dataset="broken", wait=False)
    assert job.status == "pending" and job.original_name == "broken.jsonl"
    with pytest.raises(ImportFailed) as raised:
        api.wait_for_import(job, timeout=60)
    assert [(p.line, p.field) for p in raised.value.problems] == [(2, ""), (3, "output")]
    assert "line 2" in str(raised.value) and raised.value.job.status == "failed"
    assert not Dataset.objects.filter(name="broken").exists()  # nothing was written
