"""Blocked tree attention (scoring/lm/_tree_attention.py) against one dense masked SDPA
call: the same numbers, over fewer keys."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from scoring.lm import _tree_attention
from scoring.lm._tree import Pack, ancestor_matrix, concatenate, pack


def _bushy_pack(seed: int, documents: int = 1) -> Pack:
    """Tries of random continuations sharing openings (several documents side by side
    when ``documents`` > 1, as _doc_packs lays them out)."""
    rng = random.Random(seed)
    tries = []
    for _ in range(documents):
        openings = [[rng.randrange(50) for _ in range(rng.randrange(1, 6))] for _ in range(4)]
        sequences = [
            rng.choice(openings) + [rng.randrange(50) for _ in range(rng.randrange(1, 12))]
            for _ in range(12)
        ]
        (tree,) = pack(sequences, 10**6)
        tries.append(tree)
    return tries[0] if documents == 1 else concatenate(tries)


def _dense(tree: Pack, prefix_len: int) -> torch.Tensor:
    mask = torch.zeros((1, 1, len(tree), prefix_len + len(tree)))
    mask[0, 0, :, prefix_len:].masked_fill_(~ancestor_matrix(tree), torch.finfo(torch.float32).min)
    return mask


@pytest.mark.parametrize("rows", [1, 3, 16, 1000])
@pytest.mark.parametrize(
    ("heads", "kv_heads", "native_gqa"), [(4, 4, True), (6, 2, True), (6, 2, False)]
)
@pytest.mark.parametrize(("prefix_len", "documents"), [(9, 1), (0, 1), (0, 3)])
def test_blocks_give_the_dense_masked_attention(
    rows: int,
    heads: int,
    kv_heads: int,
    native_gqa: bool,
    prefix_len: int,
    documents: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not native_gqa:  # the GPU branch: key and value heads repeated before SDPA
        monkeypatch.setattr(_tree_attention, "NATIVE_GQA_DEVICES", ())
    tree = _bushy_pack(rows + heads + prefix_len, documents)
    torch.manual_seed(rows)
    size = len(tree)
    query = torch.randn(1, heads, size, 8)
    key = torch.randn(1, kv_heads, prefix_len + size, 8)
    value = torch.randn(1, kv_heads, prefix_len + size, 8)
    mask = _dense(tree, prefix_len)
    groups = heads // kv_heads
    expected = torch.nn.functional.scaled_dot_product_attention(
        query, key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1), attn_mask=mask
    ).transpose(1, 2)
    blocks = _tree_attention.blocks(tree, prefix_len, rows, ancestor_matrix(tree), torch.float32)
    module = SimpleNamespace(num_key_value_groups=groups, is_causal=True)
    found, _ = _tree_attention.attention(module, query, key, value, mask, tree_blocks=blocks)
    assert found.shape == expected.shape == (1, size, heads, 8)
    assert torch.allclose(found, expected, atol=1e-6)
    # Without blocks it is transformers' SDPA on the dense mask.
    dense, _ = _tree_attention.attention(module, query, key, value, mask)
    assert torch.allclose(dense, expected, atol=1e-6)


def test_a_block_sees_the_prefix_and_exactly_its_rows_ancestors() -> None:
    tree = _bushy_pack(7)
    ancestors = ancestor_matrix(tree)
    prefix_len, rows = 5, 4
    blocks = _tree_attention.blocks(tree, prefix_len, rows, ancestors, torch.float32)
    assert [(b.start, b.end) for b in blocks] == [
        (s, min(len(tree), s + rows)) for s in range(0, len(tree), rows)
    ]
    total_keys = 0
    for block in blocks:
        seen = {
            i for j in range(block.start, block.end) for i in range(len(tree)) if ancestors[j, i]
        }
        assert block.keys.tolist() == list(range(prefix_len)) + sorted(i + prefix_len for i in seen)
        visible = block.mask[0, 0] == 0  # row r may see key k
        for r, j in enumerate(range(block.start, block.end)):
            allowed = [True] * prefix_len + [bool(ancestors[j, i]) for i in sorted(seen)]
            assert visible[r].tolist() == allowed
        total_keys += (block.end - block.start) * len(block.keys)
    # Against the dense call's len(tree) x (prefix + len(tree)) scores, far fewer.
    assert total_keys < 0.6 * len(tree) * (prefix_len + len(tree))


def test_rows_below_one_are_refused() -> None:
    tree = _bushy_pack(1)
    with pytest.raises(ValueError, match="at least 1"):
        _tree_attention.blocks(tree, 0, 0, ancestor_matrix(tree), torch.float32)


def test_only_sdpa_models_are_switched_and_the_switch_is_recorded_as_sdpa() -> None:
    import transformers

    def model(attention: str) -> transformers.LlamaForCausalLM:
        config = transformers.LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
        )
        built = transformers.LlamaForCausalLM(config).eval()
        built.set_attn_implementation(attention)
        return built

    sdpa, eager = model("sdpa"), model("eager")
    ids = torch.tensor([[1, 5, 9, 3, 7]])
    with torch.inference_mode():
        before = sdpa(input_ids=ids).logits
    assert _tree_attention.install(sdpa) and _tree_attention.install(sdpa)  # idempotent
    assert sdpa.config._attn_implementation == _tree_attention.NAME
    assert _tree_attention.kernel(sdpa) == "sdpa"
    with torch.inference_mode():  # a forward without blocks is SDPA's, unchanged
        assert torch.equal(sdpa(input_ids=ids).logits, before)
    assert not _tree_attention.install(eager)
    assert _tree_attention.kernel(eager) == "eager"
    assert _tree_attention.default_rows("cpu") == _tree_attention.CPU_TREE_ROWS
    assert _tree_attention.default_rows("cuda:0") == 0


def test_a_layer_with_a_position_bias_goes_to_transformers_sdpa() -> None:
    tree = _bushy_pack(3)
    torch.manual_seed(3)
    size = len(tree)
    query, key, value = (torch.randn(1, 2, size, 8) for _ in range(3))
    mask = _dense(tree, 0)
    bias = torch.randn(1, 2, size, size)
    module = SimpleNamespace(num_key_value_groups=1, is_causal=True)
    blocks = _tree_attention.blocks(tree, 0, 2, ancestor_matrix(tree), torch.float32)
    found, _ = _tree_attention.attention(
        module, query, key, value, mask, tree_blocks=blocks, position_bias=bias
    )
    expected = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask + bias
    ).transpose(1, 2)
    assert torch.allclose(found, expected, atol=1e-6)


def test_a_model_transformers_cannot_switch_is_not_counted_as_switched() -> None:
    import transformers

    config = transformers.FalconConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2
    )
    model = transformers.FalconForCausalLM(config).eval()
    model.set_attn_implementation("sdpa")
    switched = _tree_attention.install(model)
    assert switched == _tree_attention.installed(model)
    assert switched == (model.config._attn_implementation == _tree_attention.NAME)
