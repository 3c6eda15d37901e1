"""The binary XSum-faithfulness file of ../shared/data end to end with the real default
model, locally: a G-Eval label run and a yes/no run on two documents, then the report
card: the G-Eval row's MCC, κ, TPR/TNR each with its interval (or NaN with its reason,
never a silent number), the prevalence corrected by Rogan–Gladen and the ECE from the
stored p(positive); the yes/no judge's log-odds labelled through a threshold chosen on
cross-fitted document halves; ``judge_gate`` naming MCC and exiting 0/1 by the bound, 2
on ``--against``. (The same run through the real vLLM server equals the local one:
tests/studies/test_served_label_runs.py.)"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from studies.models import Dataset, MetricRun
from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, execute_run, start_run
from tests.conftest import SHARED_DATA

XSUMFAITH = SHARED_DATA / "xsumfaith.jsonl"
N_DOCS, PER_DOC = 2, 2  # two summaries of each 800-word article: seconds each, a shared CPU

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not XSUMFAITH.is_file(), reason=f"{XSUMFAITH} is absent"),
]


@pytest.fixture
def xsumfaith(cast: dict[str, Any], tmp_path: Path) -> Dataset:
    lines, docs = [], []
    for raw in XSUMFAITH.read_text().splitlines():
        doc = json.loads(raw)["doc_id"]
        if doc not in docs:
            if len(docs) == N_DOCS:
                break
            docs.append(doc)
        if sum(json.loads(line)["doc_id"] == doc for line in lines) < PER_DOC:
            lines.append(raw)
    path = tmp_path / "xsumfaith.jsonl"
    path.write_text("\n".join(lines) + "\n")
    options = ImportOptions(
        dataset="xsumfaith",
        task="summarization",
        file_format="jsonl",
        file_name=path.name,
        owner=cast["owner"],
        create_aspects=True,
    )
    import_file(path, options)  # type: ignore[arg-type]
    return Dataset.objects.get(name="xsumfaith")


def _shown(estimate: dict[str, Any] | None) -> None:
    """A value inside its interval, or no value and the reason why."""
    assert estimate is not None
    if estimate["value"] is None:
        assert estimate["reason"], estimate
    else:
        assert math.isfinite(estimate["value"]) and estimate["low"] is not None
        assert estimate["low"] - 1e-12 <= estimate["value"] <= estimate["high"] + 1e-12


def _gate(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("judge_gate", *args, "--resamples", "200", stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_a_geval_label_run_and_a_yes_no_run_on_the_shared_binary_file_fill_the_card(
    xsumfaith: Dataset,
) -> None:
    runs = {}
    for metric, extra in (("geval", {"steps": "none"}), ("yesno", {})):
        run = start_run(xsumfaith, RunRequest(metric=metric, aspect="faithful", **extra))  # type: ignore[arg-type]
        assert execute_run(run.pk) == "succeeded"
        runs[metric] = MetricRun.objects.get(pk=run.pk)
    assert runs["geval"].config["labels"] == ["0", "1"]

    card = compute_card(xsumfaith, CardParams(resamples=200))
    rows = {r["run"]["metric"]: r for r in card["rows"] if r["aspect"]["kind"] == "binary"}
    found = rows["geval"]["labels"]
    assert found["problem"] is None and found["primary"] == "mcc"
    assert "threshold" not in found  # its scores are the labels' positions
    for name in ("mcc", "kappa", "tpr", "tnr"):
        _shown(found["judge"][name])
    for name in ("human", "judge", "corrected"):
        _shown(found["prevalence"][name])
    calibration = found["calibration"]
    assert calibration["problem"] is None and calibration["n_items"] > 0
    _shown(calibration["ece"])
    assert sum(b["n"] for b in calibration["bins"]) == calibration["n_pairs"]

    yesno = rows["yesno"]["labels"]
    assert yesno["threshold"]["split"] == "cross-fitted document halves (seed 0)"
    assert len(yesno["threshold"]["thresholds"]) == 2  # one cut per half
    for cut in yesno["threshold"]["thresholds"]:  # a cut, or why a half gives none
        assert (cut["value"] is None) == bool(cut["reason"]) and cut["describe"]

    geval = str(runs["geval"].pk)
    code, out = _gate("--run", geval, "--aspect", "faithful", "--min-lower-bound=-1")
    assert "MCC" in out and code == (0 if found["judge"]["mcc"]["value"] is not None else 1)
    mcc = found["judge"]["mcc"]
    code, out = _gate("--run", geval, "--aspect", "faithful", "--min-lower-bound=0.999")
    assert "MCC" in out and code == (0 if mcc["value"] is not None and mcc["low"] >= 0.999 else 1)
    code, out = _gate("--run", geval, "--aspect", "faithful", "--against", str(runs["yesno"].pk))
    assert code == 2 and "--against" in out
