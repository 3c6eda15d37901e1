"""HF wrapper invariants on a tiny random encoder-decoder model (``hf_tiny``): the fast
path gives the plain path's numbers, which are transformers' own loss, and long prompts
are cut on the left."""

from __future__ import annotations

import pytest
import torch

from scoring.lm import HFLanguageModel, TargetRequest
from tests.scoring.hf_tiny import SOURCES, TARGETS, TOL, assert_same, make_requests

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("batch_size", [1, 8])
def test_fast_path_gives_the_plain_paths_numbers_for_seq2seq_models(
    t5_dir: str, batch_size: int
) -> None:
    lm = HFLanguageModel(t5_dir, batch_size=batch_size)
    assert lm.is_seq2seq
    requests = make_requests()
    fast = lm.score_targets(requests)
    plain = lm.score_targets_plain(requests)
    assert_same(fast, plain)
    means = [r.mean for r in fast]
    assert max(means) - min(means) > 0.1  # type: ignore[operator]
    tokenizer = lm.loaded.tokenizer
    for result, request in zip(fast, requests, strict=True):
        # Every label the tokenizer makes is scored, the closing </s> included.
        labels = tokenizer(request.target)["input_ids"]
        assert labels[-1] == tokenizer.eos_token_id
        assert result.n_tokens == len(labels)


def test_seq2seq_plain_path_matches_transformers_loss(t5_dir: str) -> None:
    lm = HFLanguageModel(t5_dir)
    tokenizer = lm.loaded.tokenizer
    request = TargetRequest("k", SOURCES[0], TARGETS[1])
    (result,) = lm.score_targets_plain([request])
    source = tokenizer(request.prompt, return_tensors="pt")
    labels = tokenizer(request.target, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        loss = lm.loaded.model(**source, labels=labels).loss
    assert result.mean == pytest.approx(-float(loss), abs=TOL)


def test_seq2seq_prompts_are_cut_on_the_left_and_long_targets_fail_alone(t5_dir: str) -> None:
    lm = HFLanguageModel(t5_dir, max_length=40, batch_size=8)
    requests = [TargetRequest(i, SOURCES[0], t) for i, t in enumerate(TARGETS[:3])]
    requests.append(TargetRequest("long", SOURCES[0], " ".join(TARGETS)))
    results = lm.score_targets(requests)
    assert_same(results, lm.score_targets_plain(requests))
    assert all(r.ok and r.truncated for r in results[:3])
    assert results[3].error is not None and results[3].mean is None
    whole = HFLanguageModel(t5_dir).score_targets(requests[:3])
    for cut, uncut in zip(results[:3], whole, strict=True):
        assert cut.n_tokens == uncut.n_tokens and not uncut.truncated
        assert cut.token_logprobs != pytest.approx(uncut.token_logprobs, abs=1e-3)
