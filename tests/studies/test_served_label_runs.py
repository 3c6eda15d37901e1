"""A G-Eval label run on a binary dataset from ../shared/data (XSum faithfulness, its
``faithful`` aspect created by the import: labels 0 / 1), with the default model, run
locally and on the REAL vLLM server (tests/served.py) as an endpoint: equal within 1e-3
per output, each score the predicted label's position."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command

from studies.models import Dataset, MetricScore
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, execute_run, start_run
from tests.served import Served

pytestmark = [
    # transactional: the run's heartbeat thread writes while the run scores
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored", "allow_loopback"),
    pytest.mark.served,
]
ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CONCORDIA_SHARED_DATA") or ROOT.parent / "shared" / "data")
XSUMFAITH = SHARED / "xsumfaith.jsonl"
N_OUTPUTS = 3  # one document's first outputs (a 1,000-token article; a shared CPU)


@pytest.fixture
def xsumfaith(cast, tmp_path) -> Dataset:  # type: ignore[no-untyped-def]
    if not XSUMFAITH.is_file():
        pytest.skip(f"{XSUMFAITH} is absent (the shared data folder is not on this machine)")
    lines = XSUMFAITH.read_text().splitlines()[:N_OUTPUTS]
    path = tmp_path / "xsumfaith.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert len({json.loads(line)["doc_id"] for line in lines}) == 1
    options = ImportOptions(
        dataset="xsumfaith",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=cast["owner"],
        create_aspects=True,
    )
    import_file(path, options)
    return Dataset.objects.get(name="xsumfaith")


def test_a_geval_label_run_on_the_endpoint_equals_the_local_run(
    xsumfaith: Dataset, vllm_server: Served
) -> None:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO("sk-concordia-labels-1\n"))
        call_command(
            "endpoint",
            "add",
            "vllm",
            "--base-url",
            vllm_server.base_url,
            "--model-id",
            vllm_server.model_id,
            "--api-key-stdin",
            "--owner",
            "owner",
            "--timeout",
            "300",
            stdout=out,
        )
    runs = {}
    for where, extra in (("local", {}), ("served", {"endpoint": "vllm"})):
        request = RunRequest(metric="geval", aspect="faithful", steps="none", **extra)  # type: ignore[arg-type]
        run = start_run(xsumfaith, request, enqueue=False)
        assert run.config["labels"] == ["0", "1"] and run.config["positive"] == "1"
        assert execute_run(run.pk) == "succeeded"
        runs[where] = {s.output_id: s for s in MetricScore.objects.filter(run=run)}
    here, there = runs["local"], runs["served"]
    assert len(here) == len(there) == N_OUTPUTS and set(here) == set(there)
    worst = 0.0
    for key, a in here.items():
        b = there[key]
        assert a.error == b.error == "", (a.error, b.error)
        assert a.value in (0.0, 1.0) and a.details["label"] == ["0", "1"][int(a.value)]
        worst = max(worst, abs(a.details["p_positive"] - b.details["p_positive"]))
        if abs(a.details["p_positive"] - 0.5) > 1e-3:
            assert a.value == b.value
    print(f"\nG-Eval label run, local vs endpoint: max |Δp_positive| {worst:.2e}")
    assert worst <= 1e-3, worst
