"""The default model (SmolLM2-135M-Instruct) on CPU, against stored reference numbers.

The converted copy comes from `python manage.py install_model`, which the test command
(`python3 manage.py runtests`) runs first; its folder is CONCORDIA_MODEL_DIR (default
data/models). Only the SummEval file is optional: it lives beside the repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scoring.lm import HFLanguageModel, TargetRequest, _causal

ROOT = Path(__file__).resolve().parents[2]
SUMMEVAL = ROOT.parent / "shared" / "data" / "summeval.jsonl"
MODEL = (
    Path(os.environ.get("CONCORDIA_MODEL_DIR") or ROOT / "data" / "models")
    / "smollm2-135m-instruct"
)
DOC = "dm-test-e06ff0eb7c4fa4416fda84a9a239b15480c5a9d9"
INSTRUCTION = "Generate a fluent and grammatical summary for the following text: "
# Mean token log-probabilities of the document's first four outputs, from the plain path.
REFERENCE_MEANS = [-1.9328, -1.3936, -1.1171, -1.3935]

pytestmark = pytest.mark.skipif(not SUMMEVAL.is_file(), reason="../shared/data is not here")


@pytest.fixture(scope="module")
def model_dir() -> Path:
    assert (MODEL / "config.json").is_file(), (
        f"the default model is not at {MODEL}: run `python manage.py install_model`"
    )
    return MODEL


def test_the_default_model_gives_the_stored_numbers_on_both_paths(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    rows = [row for row in rows if row["doc_id"] == DOC][:4]
    requests = [
        TargetRequest(row["system_id"], f"{INSTRUCTION}{row['source']}\nTl;dr ", row["output"])
        for row in rows
    ]
    lm = HFLanguageModel(model_dir, batch_size=8, device="cpu")
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    plain = lm.score_targets_plain(requests)
    tree = lm.score_targets(requests)  # one token tree of the four outputs
    monkeypatch.setattr(_causal, "tree_attention_works", lambda lm: False)
    fast_8 = lm.score_targets(requests)  # one padded batch of targets of different lengths
    lm.batch_size = 1
    fast_1 = lm.score_targets(requests)
    for a, t in zip(fast_8, tree, strict=True):
        assert t.token_logprobs == pytest.approx(a.token_logprobs, abs=1e-4)
    assert len({r.n_tokens for r in plain}) > 1  # padding is exercised
    for a, a1, b, want in zip(fast_8, fast_1, plain, REFERENCE_MEANS, strict=True):
        assert a1.token_logprobs == pytest.approx(a.token_logprobs, abs=1e-4)
        assert a.ok and b.ok and a.n_tokens == b.n_tokens
        assert (
            max(abs(x - y) for x, y in zip(a.token_logprobs, b.token_logprobs, strict=True)) <= 1e-4
        )
        assert b.mean == pytest.approx(want, abs=1e-3)
