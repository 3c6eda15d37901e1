"""Tiny random models for the HF wrapper's tests (nothing is downloaded), the requests
they score, and the check that two paths give the same numbers.

The fixtures that build the models once per session are in ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

from scoring.lm import TargetRequest, TargetScore, _causal
from scoring.lm._tree import Pack

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


def tiny_tokenizer(bos: bool, eos_after: bool) -> transformers.PreTrainedTokenizerFast:
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


def save(model: object, tokenizer: object, folder: object) -> str:
    model.save_pretrained(folder)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(folder)  # type: ignore[attr-defined]
    return str(folder)


def build_gpt2(folder: Path) -> str:
    """GPT-2 shape: no BOS token, learned positions, 128-token context."""
    tokenizer = tiny_tokenizer(bos=False, eos_after=False)
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
    return save(model, tokenizer, folder)


def build_llama(folder: Path) -> str:
    """Llama shape (the default model's): BOS token, RoPE, grouped-query attention."""
    tokenizer = tiny_tokenizer(bos=True, eos_after=False)
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
    return save(model, tokenizer, folder)


def build_t5(folder: Path) -> str:
    """T5 shape: prompt to the encoder, target (with its closing </s>) to the decoder."""
    tokenizer = tiny_tokenizer(bos=False, eos_after=True)
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
    return save(model, tokenizer, folder)


def make_requests() -> list[TargetRequest]:
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


def assert_same(fast: list[TargetScore], plain: list[TargetScore]) -> float:
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


def padded_batches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take the fast path's other branch: padded batches instead of token trees."""
    monkeypatch.setattr(_causal, "tree_attention_works", lambda lm: False)


def count_blocks(tree: Pack) -> int:
    """How many blocks (documents, or parts of one) a packed row holds."""
    return sum(1 for depth in tree.depths if depth == 0)
