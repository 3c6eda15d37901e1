"""HF wrapper invariants on tiny random models built here (nothing is downloaded).

The fast path (shared prefix cached, targets as token trees or padded batches,
vocabulary projection only at target positions) must give the plain path's numbers: one forward per request
over the full text, as the GPTScore reference code does.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator, Sequence

import pytest
import torch
import transformers

from scoring.lm import HFLanguageModel, TargetRequest, TargetScore, _causal, _tree_attention

TOL = 1e-4

CORPUS = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Local schools will receive more money for teachers and books.",
    "Critics said the plan raises taxes while services get worse.",
    "Summarise the following article in one sentence. Tl;dr",
    "The storm closed roads and schools across the region for two days.",
    "Officials expect repairs to cost millions and take several weeks.",
]

SOURCES = [
    "Summarise: The council approved the new budget on Tuesday after a long debate "
    "about taxes, schools and roads. Critics said services would get worse.\nTl;dr ",
    "Summarise: The storm closed roads and schools across the region for two days, "
    "and officials expect repairs to cost millions.\nTl;dr ",
    "Summarise: Teachers welcomed more money for books.\nTl;dr ",
]
TARGETS = [
    "The budget passed.",
    "After a long debate the council approved a budget that critics say raises taxes.",
    "Schools get money.",
    "Council approves budget; critics warn services will get worse while taxes rise.",
    "Roads closed.",
    "A storm shut roads and schools for two days and repairs will cost millions of dollars.",
    "Repairs will take weeks.",
    "Teachers are happy.",
    "Money for books and teachers was welcomed by local schools after the vote.",
    "Taxes rise",
]


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread; more only contend with other processes."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tokenizer(bos: bool, eos_after: bool) -> transformers.PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on CORPUS; optional BOS in front or EOS after."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "</s>", "<s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(CORPUS, trainer)
    if bos:
        raw.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", raw.token_to_id("<s>"))]
        )
    elif eos_after:
        raw.post_processor = processors.TemplateProcessing(
            single="$A </s>", special_tokens=[("</s>", raw.token_to_id("</s>"))]
        )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def _save(model: object, tokenizer: object, folder: object) -> str:
    model.save_pretrained(folder)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(folder)  # type: ignore[attr-defined]
    return str(folder)


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """GPT-2 shape: no BOS token, learned positions, 128-token context."""
    tokenizer = _tokenizer(bos=False, eos_after=False)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=128,
        n_embd=32,
        n_layer=2,
        n_head=2,
        initializer_range=0.4,  # peaked logits, so a wrong context shows in the numbers
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = transformers.GPT2LMHeadModel(config)
    return _save(model, tokenizer, tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Llama shape (the default model's): BOS token, RoPE, grouped-query attention."""
    tokenizer = _tokenizer(bos=True, eos_after=False)
    torch.manual_seed(1)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.4,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = transformers.LlamaForCausalLM(config)
    return _save(model, tokenizer, tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """T5 shape: prompt to the encoder, target (with its closing </s>) to the decoder."""
    tokenizer = _tokenizer(bos=False, eos_after=True)
    torch.manual_seed(2)
    config = transformers.T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        initializer_factor=1.0,
        decoder_start_token_id=tokenizer.pad_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = transformers.T5ForConditionalGeneration(config)
    return _save(model, tokenizer, tmp_path_factory.mktemp("t5"))


@pytest.fixture(params=["gpt2", "llama"])
def causal_dir(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_dir"))


def _requests() -> list[TargetRequest]:
    """Several prompts with targets of different lengths, plus a prompt used once."""
    out = []
    for i, target in enumerate(TARGETS):
        prompt = SOURCES[0] if i < 4 else SOURCES[1] if i < 8 else SOURCES[2]
        out.append(TargetRequest(key=f"out-{i}", prompt=prompt, target=target))
    out.append(TargetRequest(key="single", prompt="Headline: ", target="Storm hits town."))
    # The prompt ends mid-word, so BPE merges across the boundary differently per target:
    # the shared prefix must come from the full encodings, not the prompt's own.
    cut = "Summarise: The council approved the bud"
    out.append(TargetRequest(key="merge-1", prompt=cut, target="get on Tuesday."))
    out.append(TargetRequest(key="merge-2", prompt=cut, target="dy system and taxes."))
    out.append(TargetRequest(key="merge-3", prompt=cut, target=" budget, finally."))
    # Outputs that open with the same sentence (as extractive systems do), one that is
    # that sentence alone, and two systems with the very same output (scored once).
    opening = "The council approved the new budget on Tuesday after a long debate."
    for key, target in [
        ("open-1", opening + " Critics said taxes rise."),
        ("open-2", opening + " Local schools will receive more money."),
        ("open-3", opening),
        ("open-4", "The council approved the new budget."),
        ("same-1", opening + " Critics said taxes rise."),
    ]:
        out.append(TargetRequest(key=key, prompt=SOURCES[2], target=target))
    return out


def _assert_same(fast: list[TargetScore], plain: list[TargetScore]) -> float:
    """Fast and plain agree per token within TOL; returns the largest difference."""
    worst = 0.0
    assert [r.key for r in fast] == [r.key for r in plain]
    for a, b in zip(fast, plain, strict=True):
        assert a.error == b.error
        assert a.n_tokens == b.n_tokens == len(a.token_logprobs)
        assert a.truncated == b.truncated
        for x, y in zip(a.token_logprobs, b.token_logprobs, strict=True):
            worst = max(worst, abs(x - y))
        if a.ok:
            assert a.mean == pytest.approx(b.mean, abs=TOL)
            assert a.sum == pytest.approx(b.sum, abs=TOL * a.n_tokens)
    assert worst <= TOL
    return worst


def _padded_batches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take the fast path's other branch: padded batches instead of token trees."""
    monkeypatch.setattr(_causal, "tree_attention_works", lambda lm: False)


@pytest.mark.parametrize("layout", ["tree", "batches-1", "batches-8"])
def test_fast_path_gives_the_plain_paths_numbers_for_causal_models(
    causal_dir: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8 if layout == "batches-8" else 1)
    assert lm._causal is not None
    assert lm._causal.project_at_targets and lm._causal.prefix_cache  # the fast path is used
    assert _causal.tree_attention_works(lm._causal)  # probed once, before the spy below
    if layout != "tree":
        _padded_batches_only(monkeypatch)
    requests = _requests()
    prefixes: list[int] = []
    run_prefix = _causal._run_prefix

    def spy(lm_: _causal.CausalModel, prefix: Sequence[int]) -> object:
        prefixes.append(len(prefix))
        return run_prefix(lm_, prefix)

    monkeypatch.setattr(_causal, "_run_prefix", spy)
    fast = lm.score_targets(requests)
    assert len(prefixes) == 4 and min(prefixes) > 5  # each shared prompt ran once
    by_key = {r.key: r for r in fast}
    assert by_key["same-1"].token_logprobs == by_key["open-1"].token_logprobs
    plain = lm.score_targets_plain(requests)
    _assert_same(fast, plain)
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
    run_prefix = _causal._run_prefix

    def spy(lm_: _causal.CausalModel, prefix: Sequence[int]) -> object:
        prefixes.append(len(prefix))
        return run_prefix(lm_, prefix)

    monkeypatch.setattr(_causal, "_run_prefix", spy)
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))
    assert len(prefixes) == 1 and prefixes[0] >= 2


def test_padding_changes_nothing_even_when_every_target_shares_one_batch(
    causal_dir: str, t5_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scoring.lm import _seq2seq

    monkeypatch.setattr(_causal, "FORWARD_COST", 10**6)  # never split a batch
    _padded_batches_only(monkeypatch)
    monkeypatch.setattr(_seq2seq, "FORWARD_COST", 10**6)
    requests = _requests()
    for folder in (causal_dir, t5_dir):
        lm = HFLanguageModel(folder, batch_size=len(requests))
        _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_model_logits_fallback_gives_the_same_numbers(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=3)
    assert lm._causal is not None
    lm._causal = dataclasses.replace(lm._causal, project_at_targets=False)
    requests = _requests()
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


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
    requests = _requests()
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
    _assert_same(fast, plain)


def test_long_prompts_are_cut_on_the_left_and_the_target_kept(causal_dir: str) -> None:
    lm = HFLanguageModel(causal_dir, max_length=40, batch_size=4)
    full = HFLanguageModel(causal_dir)
    requests = [TargetRequest(i, SOURCES[0], t) for i, t in enumerate(TARGETS[:4])]
    cut = lm.score_targets(requests)
    whole = full.score_targets(requests)
    _assert_same(cut, lm.score_targets_plain(requests))
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
    requests = _requests()
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
    requests = _requests()
    expected = lm.score_targets_plain(requests)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("out of memory")

    _padded_batches_only(monkeypatch)
    monkeypatch.setattr(_causal, "_run_batch", broken)
    _assert_same(lm.score_targets(requests), expected)


def test_a_failing_tree_forward_falls_back_to_padded_batches(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=4)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    requests = _requests()
    expected = lm.score_targets_plain(requests)
    batches: list[int] = []
    run_batch = _causal._run_batch

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("out of memory")

    def counted(lm_: _causal.CausalModel, batch: Sequence[object], *rest: object) -> object:
        batches.append(len(batch))
        return run_batch(lm_, batch, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_run_pack", broken)
    monkeypatch.setattr(_causal, "_run_batch", counted)
    _assert_same(lm.score_targets(requests), expected)
    assert batches  # the padded batches did the work


@pytest.mark.parametrize("pack_tokens", [1, 7, 40])
def test_token_trees_split_into_small_packs_give_the_same_numbers(
    causal_dir: str, pack_tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    lm._causal = dataclasses.replace(lm._causal, pack_tokens=pack_tokens)
    packs: list[tuple[int, int]] = []
    run_pack = _causal._run_pack

    def counted(lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object) -> object:
        packs.append((len(tree), len(tree.members)))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_run_pack", counted)
    requests = _requests()
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))
    assert len(packs) >= 4  # the groups, split further
    # a pack holds several targets only within budget; a longer target is alone
    assert all(nodes <= pack_tokens for nodes, members in packs if members > 1)
    if pack_tokens == 1:
        assert all(members == 1 for _, members in packs)


def test_openings_shared_by_several_outputs_are_computed_once(
    llama_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(llama_dir, batch_size=8)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    nodes: list[int] = []
    run_pack = _causal._run_pack

    def counted(lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object) -> object:
        nodes.append(len(tree))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_run_pack", counted)
    opening = "The council approved the new budget on Tuesday after a long debate."
    requests = [
        TargetRequest(k, SOURCES[0], opening + tail)
        for k, tail in enumerate([" Critics said taxes rise.", " Schools get money.", ""])
    ]
    fast = lm.score_targets(requests)
    _assert_same(fast, lm.score_targets_plain(requests))
    fed = sum(r.n_tokens for r in fast)  # about what padded rows would feed
    assert len(nodes) == 1 and nodes[0] < fed - 20  # the opening's tokens once, not thrice


def test_a_model_that_ignores_the_tree_mask_is_caught_by_the_probe(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None
    run_pack = _causal._run_pack

    def ordinary_mask(
        lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object
    ) -> list[list[float]]:
        # What attention that ignores a custom mask computes: each node sees every
        # earlier node of the row, siblings' branches included (positions still given).
        chain = dataclasses.replace(tree, parents=list(range(-1, len(tree) - 1)))
        return run_pack(lm_, chain, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_TREE_OK", type(_causal._TREE_OK)())
    monkeypatch.setattr(_causal, "_run_pack", ordinary_mask)
    assert not _causal.tree_attention_works(lm._causal)
    requests = _requests()
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_a_model_loads_once_per_process(gpt2_dir: str) -> None:
    first = HFLanguageModel(gpt2_dir, batch_size=2)
    second = HFLanguageModel(gpt2_dir, batch_size=16, max_length=50)
    assert first.loaded is second.loaded
    assert first.max_length == 128 and second.max_length == 50


def test_an_empty_list_gives_an_empty_list(gpt2_dir: str) -> None:
    lm = HFLanguageModel(gpt2_dir)
    assert lm.score_targets([]) == [] and lm.score_targets_plain([]) == []


# -- encoder-decoder ----------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 8])
def test_fast_path_gives_the_plain_paths_numbers_for_seq2seq_models(
    t5_dir: str, batch_size: int
) -> None:
    lm = HFLanguageModel(t5_dir, batch_size=batch_size)
    assert lm.is_seq2seq
    requests = _requests()
    fast = lm.score_targets(requests)
    plain = lm.score_targets_plain(requests)
    _assert_same(fast, plain)
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
    _assert_same(results, lm.score_targets_plain(requests))
    assert all(r.ok and r.truncated for r in results[:3])
    assert results[3].error is not None and results[3].mean is None
    whole = HFLanguageModel(t5_dir).score_targets(requests[:3])
    for cut, uncut in zip(results[:3], whole, strict=True):
        assert cut.n_tokens == uncut.n_tokens and not uncut.truncated
        assert cut.token_logprobs != pytest.approx(uncut.token_logprobs, abs=1e-3)


# -- whole documents packed into one forward ------------------------------------------


def _roots(tree: _causal.Pack) -> int:
    """How many blocks (documents, or parts of one) a packed row holds."""
    return sum(1 for depth in tree.depths if depth == 0)


@pytest.mark.parametrize("budget", [1, 90, 160, 10**6])
def test_documents_packed_together_give_the_plain_paths_numbers(
    causal_dir: str, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8, doc_pack_tokens=budget)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    forwards: list[tuple[int, int]] = []  # (nodes, blocks) per packed forward
    run_pack = _causal._run_pack

    def counted(lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object) -> object:
        forwards.append((len(tree), _roots(tree)))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    def no_prefix(*args: object) -> None:
        raise AssertionError("a packed forward computes its documents' prefixes itself")

    monkeypatch.setattr(_causal, "_run_pack", counted)
    monkeypatch.setattr(_causal, "_run_prefix", no_prefix)
    requests = _requests()  # five prompts of different lengths, shared and single
    fast = lm.score_targets(requests)
    monkeypatch.undo()
    _assert_same(fast, lm.score_targets_plain(requests))
    assert all(nodes <= budget for nodes, blocks in forwards if blocks > 1)
    if budget == 1:  # every sequence alone: one block per forward
        assert all(blocks == 1 for _, blocks in forwards)
        assert len(forwards) == len({(r.prompt, r.target) for r in requests})
    elif budget == 10**6:  # every document in one forward
        assert len(forwards) == 1 and forwards[0][1] == 5  # four prompts, one pool
    else:  # several forwards, some carrying two documents or more
        assert len(forwards) > 1 and max(blocks for _, blocks in forwards) >= 2


def test_documents_scored_one_call_each_give_the_same_numbers_packed_or_not(
    causal_dir: str,
) -> None:
    packed = HFLanguageModel(causal_dir, batch_size=8, doc_pack_tokens=4096)
    cached = HFLanguageModel(causal_dir, batch_size=8)
    assert cached._causal is not None and cached._causal.doc_pack_tokens == 0  # CPU default
    requests = _requests()
    for prompt in dict.fromkeys(r.prompt for r in requests):
        document = [r for r in requests if r.prompt == prompt]
        _assert_same(packed.score_targets(document), cached.score_targets(document))


def test_a_failing_packed_forward_falls_back_to_each_documents_padded_batches(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=4, doc_pack_tokens=4096)
    requests = _requests()
    expected = lm.score_targets_plain(requests)
    run_pack = _causal._run_pack

    def broken_when_packed(lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object) -> object:
        if _roots(tree) > 1:
            raise RuntimeError("out of memory")
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_run_pack", broken_when_packed)
    _assert_same(lm.score_targets(requests), expected)


def test_a_model_that_ignores_the_mask_is_not_packed(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8, doc_pack_tokens=4096)
    assert lm._causal is not None
    run_pack = _causal._run_pack
    packed_probe: list[bool] = []

    def blocks_ignored(
        lm_: _causal.CausalModel, tree: _causal.Pack, *rest: object
    ) -> list[list[float]]:
        # Only the packed layout is broken: later blocks see the earlier ones' nodes.
        if _roots(tree) > 1:
            packed_probe.append(True)
            roots = [node for node, depth in enumerate(tree.depths) if depth == 0]
            parents = list(tree.parents)
            for root in roots[1:]:
                parents[root] = root - 1
            tree = dataclasses.replace(tree, parents=parents)
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_TREE_OK", type(_causal._TREE_OK)())
    monkeypatch.setattr(_causal, "_run_pack", blocks_ignored)
    assert not _causal.tree_attention_works(lm._causal)
    assert packed_probe  # the probe tried the packed layout
    requests = _requests()
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_the_ancestor_matrix_is_the_same_built_from_ranges_or_row_by_row() -> None:
    from scoring.lm._tree import ancestor_matrix, concatenate, pack

    sequences = [[1, 2, 3], [1, 2, 4, 5], [1, 6], [7], [1, 2, 3, 8]]
    forest = concatenate([*pack(sequences, 4), *pack(sequences[:2], 100)])
    fast = ancestor_matrix(forest)
    # Inserted out of order, a subtree is not contiguous and the rows are built one by one.
    scattered = _causal.Pack()
    for member, seq in enumerate([[1, 2], [3], [1, 4]]):
        scattered.add(member, seq)
    for tree in (forest, scattered):
        expected = torch.zeros((len(tree), len(tree)), dtype=torch.bool)
        for node in range(len(tree)):
            walk = node
            while walk >= 0:
                expected[node, walk] = True
                walk = tree.parents[walk]
        got = fast if tree is forest else ancestor_matrix(tree)
        assert torch.equal(got, expected)
    assert not fast[len(forest) - 1, 0]  # the second block sees nothing of the first


# -- blocked tree attention (each block of nodes against only the keys it may see) ----


def _blocked(lm: HFLanguageModel, rows: int, doc_pack_tokens: int = 0) -> _causal.CausalModel:
    assert lm._causal is not None
    assert lm._causal.tree_rows == _tree_attention.CPU_TREE_ROWS  # the CPU default, installed
    return dataclasses.replace(lm._causal, tree_rows=rows, doc_pack_tokens=doc_pack_tokens)


def _without_a_root_key(real: Callable[..., list[_tree_attention.Block]]) -> Callable[..., object]:
    """Blocks that forget one key a row needs (the first node after the prefix)."""

    def broken(tree: _causal.Pack, prefix_len: int, *rest: object) -> object:
        return [
            dataclasses.replace(
                b,
                keys=b.keys[b.keys != prefix_len],
                mask=b.mask[
                    ...,
                    torch.cat(
                        [
                            torch.ones(prefix_len, dtype=torch.bool),
                            b.keys[prefix_len:] != prefix_len,
                        ]
                    ),
                ],
            )
            for b in real(tree, prefix_len, *rest)
        ]

    return broken


@pytest.mark.parametrize(("rows", "doc_pack_tokens"), [(1, 0), (2, 0), (5, 0), (2, 160), (3, 4096)])
def test_blocked_tree_attention_gives_the_plain_paths_numbers(
    causal_dir: str, rows: int, doc_pack_tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    blocked = _blocked(lm, rows, doc_pack_tokens)
    assert _causal.tree_attention_works(blocked) and _causal.tree_rows_used(blocked) == rows
    requests = _requests()
    plain = lm.score_targets_plain(requests)
    made: list[int] = []
    real = _tree_attention.blocks

    def counted(*args: object) -> list[_tree_attention.Block]:
        found = real(*args)  # type: ignore[arg-type]
        made.append(len(found))
        return found

    monkeypatch.setattr(_tree_attention, "blocks", counted)
    _assert_same(_causal.score_fast(blocked, requests, 8), plain)
    assert made and max(made) > 1  # packs were cut into several blocks
    # The blocks are what the layers use: drop one key and the numbers move.
    monkeypatch.setattr(_tree_attention, "blocks", _without_a_root_key(real))
    wrong = _causal.score_fast(blocked, requests, 8)
    assert (
        max(
            abs(a - b)
            for f, p in zip(wrong, plain, strict=True)
            for a, b in zip(f.token_logprobs, p.token_logprobs, strict=True)
        )
        > 1e-3
    )


def test_blocks_that_fail_the_probe_leave_the_dense_mask(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None
    monkeypatch.setattr(_causal, "_TREE_OK", type(_causal._TREE_OK)())
    monkeypatch.setattr(_causal, "_BLOCKS_OK", type(_causal._BLOCKS_OK)())
    monkeypatch.setattr(_tree_attention, "blocks", _without_a_root_key(_tree_attention.blocks))
    assert _causal.tree_attention_works(lm._causal)  # the dense mask passed
    assert _causal.tree_rows_used(lm._causal) == 0 and lm.provenance()["tree_rows"] == 0
    requests = _requests()
    _assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_the_run_records_the_block_size(causal_dir: str) -> None:
    record = HFLanguageModel(causal_dir).provenance()
    assert record["tree_rows"] == _tree_attention.CPU_TREE_ROWS
    assert record["attention"] == "sdpa"  # the blocks are SDPA calls
