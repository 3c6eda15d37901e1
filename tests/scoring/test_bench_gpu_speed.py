"""bench/gpu_speed.py cannot rot unnoticed: its whole code runs here on a tiny CPU model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def gpu_speed(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))
    import gpu_speed

    return gpu_speed


@pytest.mark.parametrize("tree_rows", [None, 3])
def test_the_gpu_benchmark_runs_end_to_end_on_a_tiny_cpu_model(
    gpu_speed: Any, capsys: pytest.CaptureFixture[str], tree_rows: int | None
) -> None:
    extra = [] if tree_rows is None else ["--tree-rows", str(tree_rows)]
    tables = gpu_speed.main(["--cpu-smoke", *extra])
    rows = tables.rows
    assert [(r.size, r.precision) for r in rows] == [("tiny", "fast"), ("tiny", "exact")]
    for row in rows:
        assert row.outputs_per_s > 0 and row.baseline_per_s > 0 and row.floor_share > 0
    exact = rows[1]
    assert exact.max_delta <= 1e-4  # the packed engine equals the plain path in float32
    printed = capsys.readouterr().out
    assert "ratio" in printed and "tiny   exact" in printed
    assert f"attention blocks of {tree_rows or 'all (dense mask)'} rows" in printed
    # The seq2seq and rating paths, fast against plain, with their fallbacks counted.
    paths = {(p.path, p.precision): p for p in tables.paths}
    assert set(paths) == {
        (path, precision) for path in ("seq2seq", "rating") for precision in ("fast", "exact")
    }
    for found in paths.values():
        assert found.fast_per_s > 0 and found.plain_per_s > 0 and found.fallbacks == {}
    assert (
        paths["seq2seq", "exact"].max_delta <= 1e-4 and paths["rating", "exact"].max_delta <= 1e-4
    )
    assert "fallback rows" in printed


def test_the_benchmark_reports_a_fast_path_that_falls_back(
    gpu_speed: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scoring.lm import _seq2seq

    def broken(*args: object) -> object:
        raise RuntimeError("expected mat1 and mat2 to have the same dtype")

    monkeypatch.setattr(_seq2seq, "_run_batch", broken)
    tables = gpu_speed.main(["--cpu-smoke", "--paths", "seq2seq", "--precisions", "exact"])
    (found,) = tables.paths
    assert tables.rows == [] and found.fallbacks == {"padded decoder batches": 6}
    assert found.identical and "same dtype" in found.errors["padded decoder batches"]
    assert "same dtype" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: it would run")
def test_without_a_gpu_the_benchmark_says_so_and_measures_nothing(
    gpu_speed: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu_speed.main([]) == gpu_speed.Tables([], [])
    assert "needs a CUDA GPU" in capsys.readouterr().out


def test_the_baseline_gathers_each_outputs_tokens_like_one_full_forward(gpu_speed: Any) -> None:
    from scoring.lm import TargetRequest

    tokenizer = gpu_speed._tokenizer(True)
    model = gpu_speed._build("tiny", "float32", "cpu", len(tokenizer))
    from scoring.lm import hf

    lm = hf.causal_model(model, tokenizer, "cpu")
    requests = [TargetRequest(0, "Article: the storm.\n", "Roads closed for two days.")]
    (found,) = gpu_speed.baseline(lm, requests, 32)
    context = tokenizer(requests[0].prompt)["input_ids"]
    output = tokenizer(requests[0].target, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([context + output])).logits[0]
    logprobs = torch.log_softmax(logits.float(), -1)
    expected = [float(logprobs[len(context) + k - 1, t]) for k, t in enumerate(output)]
    assert found == pytest.approx(expected, abs=1e-4)
