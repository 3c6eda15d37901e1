"""HF wrapper invariants on tiny random causal models (``hf_tiny``; nothing is downloaded).

The fast path (shared prefix cached, targets as token trees or padded batches,
vocabulary projection only at target positions) must give the plain path's numbers: one
forward per request over the full text, as the GPTScore reference code does. Token
trees and whole documents packed into one forward: ``test_lm_hf_trees``; encoder-decoder
models: ``test_lm_hf_seq2seq``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import pytest
import torch

from scoring.lm import HFLanguageModel, TargetRequest, _causal, _causal_forward
from tests.scoring.hf_tiny import (
    SOURCES,
    TARGETS,
    TOL,
    assert_same,
    make_requests,
    padded_batches_only,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("layout", ["tree", "batches-1", "batches-8"])
def test_fast_path_gives_the_plain_paths_numbers_for_causal_models(
    causal_dir: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8 if layout == "batches-8" else 1)
    assert lm._causal is not None
    assert lm._causal.project_at_targets and lm._causal.prefix_cache  # the fast path is used
    assert _causal.tree_attention_works(lm._causal)  # probed once, before the spy below
    if layout != "tree":
        padded_batches_only(monkeypatch)
    requests = make_requests()
    prefixes: list[int] = []
    run_prefix = _causal_forward.run_prefix

    def spy(lm_: _causal.CausalModel, prefix: Sequence[int]) -> object:
        prefixes.append(len(prefix))
        return run_prefix(lm_, prefix)

    monkeypatch.setattr(_causal_forward, "run_prefix", spy)
    fast = lm.score_targets(requests)
    assert len(prefixes) == 4 and min(prefixes) > 5  # each shared prompt ran once
    by_key = {r.key: r for r in fast}
    assert by_key["same-1"].token_logprobs == by_key["open-1"].token_logprobs
    plain = lm.score_targets_plain(requests)
    assert_same(fast, plain)
    assert all(r.ok for r in fast)
    # The numbers depend on the context: a random model with flat logits would hide bugs.
    means = [r.mean for r in fast]
    assert max(means) - min(means) > 0.1  # type: ignore[operator]


def test_prompts_used_once_still_share_their_common_instruction(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    requests = [
        TargetRequest(i, source, TARGETS[i]) for i, source in enumerate(SOURCES)
    ]  # three prompts, once each, all opening with "Summarise: "
    prefixes: list[int] = []
    run_prefix = _causal_forward.run_prefix

    def spy(lm_: _causal.CausalModel, prefix: Sequence[int]) -> object:
        prefixes.append(len(prefix))
        return run_prefix(lm_, prefix)

    monkeypatch.setattr(_causal_forward, "run_prefix", spy)
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))
    assert len(prefixes) == 1 and prefixes[0] >= 2


def test_padding_changes_nothing_even_when_every_target_shares_one_batch(
    causal_dir: str, t5_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scoring.lm import _seq2seq

    monkeypatch.setattr(_causal_forward, "FORWARD_COST", 10**6)  # never split a batch
    padded_batches_only(monkeypatch)
    monkeypatch.setattr(_seq2seq, "FORWARD_COST", 10**6)
    requests = make_requests()
    for folder in (causal_dir, t5_dir):
        lm = HFLanguageModel(folder, batch_size=len(requests))
        assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_model_logits_fallback_gives_the_same_numbers(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=3)
    assert lm._causal is not None
    lm._causal = dataclasses.replace(lm._causal, project_at_targets=False)
    requests = make_requests()
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_plain_path_matches_a_direct_computation_including_the_first_target_token(
    gpt2_dir: str,
) -> None:
    lm = HFLanguageModel(gpt2_dir)
    prompt, target = SOURCES[0].rstrip(" ") + "\n", TARGETS[1]  # a clean boundary
    (result,) = lm.score_targets([TargetRequest("k", prompt, target)])
    tokenizer = lm.loaded.tokenizer
    ids = tokenizer(prompt + target)["input_ids"]
    n_prompt = len(tokenizer(prompt)["input_ids"])
    assert ids[:n_prompt] == tokenizer(prompt)["input_ids"]
    with torch.inference_mode():
        logits = lm.loaded.model(input_ids=torch.tensor([ids])).logits[0]
    logprobs = torch.log_softmax(logits.float(), -1)
    expected = [float(logprobs[t - 1, ids[t]]) for t in range(n_prompt, len(ids))]
    assert result.n_tokens == len(expected)
    assert result.token_logprobs == pytest.approx(expected, abs=TOL)


def test_results_come_back_in_request_order_whatever_the_batching(causal_dir: str) -> None:
    requests = make_requests()
    shuffled = requests[:]
    random.Random(7).shuffle(shuffled)
    lm = HFLanguageModel(causal_dir, batch_size=3)
    alone = {r.key: lm.score_targets([r])[0] for r in requests}
    together = lm.score_targets(shuffled)
    assert [r.key for r in together] == [r.key for r in shuffled]
    for result in together:
        assert result.token_logprobs == pytest.approx(alone[result.key].token_logprobs, abs=TOL)


def test_every_target_token_is_scored_on_a_clean_boundary(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir)
    tokenizer = lm.loaded.tokenizer
    prompt = "Article: the council met.\n"  # a newline ends a pre-token: a clean split
    results = lm.score_targets([TargetRequest(i, prompt, t) for i, t in enumerate(TARGETS)])
    for result, target in zip(results, TARGETS, strict=True):
        alone = tokenizer(target, add_special_tokens=False)["input_ids"]
        assert result.n_tokens == len(alone)


def test_a_token_straddling_the_boundary_counts_as_target(gpt2_dir: str) -> None:
    lm = HFLanguageModel(gpt2_dir)
    tokenizer = lm.loaded.tokenizer
    # The prompt ends with "the bud"; "get" continues the word, and BPE merges across
    # the boundary into "Ġbudget", which starts in the prompt and ends in the target.
    prompt, target = "The council approved the bud", "get on Tuesday."
    full = tokenizer(prompt + target, return_offsets_mapping=True)
    straddling = [a < len(prompt) < b for a, b in full["offset_mapping"]]
    assert any(straddling)  # the case under test really happens with this tokenizer
    first_target = straddling.index(True)
    (result,) = lm.score_targets([TargetRequest("k", prompt, target)])
    assert result.n_tokens == len(full["input_ids"]) - first_target


def test_bos_token_stays_in_front_and_an_empty_prompt_still_scores_the_first_token(
    causal_dir: str,
) -> None:
    lm = HFLanguageModel(causal_dir)
    assert lm._causal is not None
    tokenizer = lm.loaded.tokenizer
    (enc,) = _causal.tokenise(lm._causal, [TargetRequest("k", "", "Storm hits.")], None)
    assert isinstance(enc, _causal.CausalEncoding)
    assert enc.target_start == 1
    assert enc.ids[0] == tokenizer.bos_token_id  # the tokenizer's own BOS, or one put there
    alone = tokenizer("Storm hits.", add_special_tokens=False)["input_ids"]
    assert list(enc.ids[1:]) == alone
    fast = lm.score_targets([TargetRequest("k", "", "Storm hits.")])
    plain = lm.score_targets_plain([TargetRequest("k", "", "Storm hits.")])
    assert fast[0].n_tokens == len(alone)
    assert_same(fast, plain)


def test_long_prompts_are_cut_on_the_left_and_the_target_kept(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, max_length=40, batch_size=4)
    full = HFLanguageModel(causal_dir)
    requests = [TargetRequest(i, SOURCES[0], t) for i, t in enumerate(TARGETS[:4])]
    cut = lm.score_targets(requests)
    whole = full.score_targets(requests)
    assert_same(cut, lm.score_targets_plain(requests))
    assert lm._causal is not None
    for result, uncut, enc in zip(
        cut, whole, _causal.tokenise(lm._causal, requests, 40), strict=True
    ):
        assert isinstance(enc, _causal.CausalEncoding)
        assert result.ok and result.truncated and not uncut.truncated
        assert len(enc.ids) == 40
        assert result.n_tokens == uncut.n_tokens  # the target is intact
        # Fewer prompt tokens: the same target tokens get other probabilities.
        assert result.token_logprobs != pytest.approx(uncut.token_logprobs, abs=1e-3)
    # A BOS token survives the cut.
    bos = lm.loaded.tokenizer.bos_token_id
    encs = _causal.tokenise(lm._causal, requests, 40)
    if lm.loaded.tokenizer("x")["input_ids"][0] == bos:
        assert all(isinstance(e, _causal.CausalEncoding) and e.ids[0] == bos for e in encs)


def test_a_target_too_long_for_the_context_fails_alone(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, max_length=48, batch_size=8)
    long_target = " ".join(TARGETS)
    requests = [TargetRequest(i, SOURCES[1], t) for i, t in enumerate(TARGETS[4:8])]
    requests.insert(2, TargetRequest("long", SOURCES[1], long_target))
    results = lm.score_targets(requests)
    assert [r.key for r in results] == [r.key for r in requests]
    assert results[2].error is not None and "does not fit" in results[2].error
    assert results[2].mean is None and results[2].n_tokens == 0
    others = [r for r in requests if r.key != "long"]
    expected = lm.score_targets(others)
    for got, want in zip([r for r in results if r.key != "long"], expected, strict=True):
        assert got.ok and got.token_logprobs == pytest.approx(want.token_logprobs, abs=TOL)


def test_a_mixed_batch_keeps_every_good_result(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    requests = make_requests()
    bad = [
        TargetRequest("empty", SOURCES[0], ""),
        TargetRequest("not-text", SOURCES[0], None),  # type: ignore[arg-type]
    ]
    mixed = requests[:3] + bad[:1] + requests[3:7] + bad[1:] + requests[7:]
    results = lm.score_targets(mixed)
    assert [r.key for r in results] == [r.key for r in mixed]
    by_key = {r.key: r for r in results}
    assert by_key["empty"].error and by_key["empty"].mean is None
    assert by_key["not-text"].error and by_key["not-text"].mean is None
    good = lm.score_targets(requests)
    for want in good:
        assert by_key[want.key].token_logprobs == pytest.approx(want.token_logprobs, abs=TOL)


def test_a_failing_batched_forward_falls_back_to_one_by_one(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=4)
    requests = make_requests()
    expected = lm.score_targets_plain(requests)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("out of memory")

    padded_batches_only(monkeypatch)
    monkeypatch.setattr(_causal_forward, "run_batch", broken)
    assert_same(lm.score_targets(requests), expected)


def test_a_model_loads_once_per_process(gpt2_dir: str) -> None:
    first = HFLanguageModel(gpt2_dir, batch_size=2)
    second = HFLanguageModel(gpt2_dir, batch_size=16, max_length=50)
    assert first.loaded is second.loaded
    assert first.max_length == 128 and second.max_length == 50


def test_an_empty_list_gives_an_empty_list(gpt2_dir: str) -> None:
    lm = HFLanguageModel(gpt2_dir)
    assert lm.score_targets([]) == [] and lm.score_targets_plain([]) == []
