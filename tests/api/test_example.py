"""The API examples against a live server and a real worker: ``examples/api_example.py``
(plain ``requests``) and the README's snippet (the Python client, ``client/``), each
uploading, starting ROUGE and GPTScore (the default model, two documents), showing
progress and printing the correlations."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from studies.models import MetricRun
from studies.services.tokens import token_for
from tests.api.conftest import scored_records
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]


def test_the_readme_example_uploads_scores_waits_and_prints_the_table(
    live_server, celery_worker_process, cast, write_jsonl
):
    path = write_jsonl(scored_records(n_docs=3, systems=3), "example.jsonl")
    token = token_for(cast["owner"]).key
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "api_example.py"),
            "--url",
            live_server.url,
            "--token",
            token,
            "--file",
            str(path),
            "--dataset",
            "example",
            "--limit-docs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "import succeeded" in out
    assert "6/6" in out  # progress lines reach the end
    table = out.split("Spearman ρ, sample level, 3 documents")[1].splitlines()
    labels = [line.split()[0] for line in table[2:] if line.strip()]
    runs = MetricRun.objects.filter(dataset__name="example", kind="computed")
    assert runs.count() == 4 and set(runs.values_list("status", flat=True)) == {"succeeded"}
    assert {r.label.split()[0] for r in runs} <= set(labels)
    assert {"m_good", "m_noise"} <= set(labels)  # the file's own metrics, imported beside them
    assert "COH" in table[1] and "FLU" in table[1]


def readme_example() -> str:
    section = (ROOT / "docs" / "api.md").read_text()
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_snippet_runs_as_written(live_server, celery_worker_process, cast, write_jsonl):
    path = write_jsonl(scored_records(n_docs=2, systems=3), "outputs.jsonl")
    code = (
        readme_example()
        .replace("YOUR_TOKEN", token_for(cast["owner"]).key)
        .replace("http://127.0.0.1:8000", live_server.url)
        .replace('"outputs.jsonl"', repr(str(path)))
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "client" / "src"))  # as `pip install ./client`
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    assert any(line.startswith("rouge1") for line in printed)
    assert any(line.startswith("gptscore") and line.endswith(" 6 / 6") for line in printed)
    assert any(line.startswith("gptscore") and "None" not in line for line in printed), done.stdout
    assert set(
        MetricRun.objects.filter(dataset__name="my-outputs", kind="computed").values_list(
            "status", flat=True
        )
    ) == {"succeeded"}


def test_the_example_trains_a_learned_metric_and_scores_with_it(
    live_server, celery_worker_process, cast, write_jsonl
):
    from learned.models import TrainedMetric

    path = write_jsonl(scored_records(n_docs=12, systems=4, seed=2), "trainable.jsonl")
    token = token_for(cast["owner"]).key
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "api_example.py"),
            "--url",
            live_server.url,
            "--token",
            token,
            "--file",
            str(path),
            "--dataset",
            "trainable",
            "--limit-docs",
            "1",
            "--train",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    job = TrainedMetric.objects.get(dataset__name="trainable")
    assert job.status == "succeeded" and job.config["backbone"]["layer"] == 12
    assert f"training job {job.pk}: {job.pairs['train']} train pairs" in done.stdout
    accuracy = job.results["trained"]["pairwise_accuracy"]
    assert f"-> {accuracy:.3f} on 1 test documents" in done.stdout
    run = MetricRun.objects.get(dataset__name="trainable", metric="learned")
    assert run.status == "succeeded" and run.done == run.total == 4
