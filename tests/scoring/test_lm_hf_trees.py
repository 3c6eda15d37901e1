"""Token trees on tiny random causal models (``hf_tiny``): a document's continuations as
tries against its prefix cache, whole documents packed into one forward, blocked tree
attention, and the probe that falls back to padded batches where a model ignores the mask.
Every layout must give the plain path's numbers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest
import torch

from scoring.lm import HFLanguageModel, TargetRequest, _causal, _causal_forward, _tree_attention
from scoring.lm._tree import Pack
from tests.scoring.hf_tiny import SOURCES, assert_same, count_blocks, make_requests

pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_failing_tree_forward_falls_back_to_padded_batches(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=4)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    requests = make_requests()
    expected = lm.score_targets_plain(requests)
    batches: list[int] = []
    run_batch = _causal_forward.run_batch

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("out of memory")

    def counted(lm_: _causal.CausalModel, batch: Sequence[object], *rest: object) -> object:
        batches.append(len(batch))
        return run_batch(lm_, batch, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal_forward, "run_pack", broken)
    monkeypatch.setattr(_causal_forward, "run_batch", counted)
    assert_same(lm.score_targets(requests), expected)
    assert batches  # the padded batches did the work


@pytest.mark.parametrize("pack_tokens", [1, 7, 40])
def test_token_trees_split_into_small_packs_give_the_same_numbers(
    causal_dir: str, pack_tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    lm._causal = dataclasses.replace(lm._causal, pack_tokens=pack_tokens)
    packs: list[tuple[int, int]] = []
    run_pack = _causal_forward.run_pack

    def counted(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> object:
        packs.append((len(tree), len(tree.members)))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal_forward, "run_pack", counted)
    requests = make_requests()
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))
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
    run_pack = _causal_forward.run_pack

    def counted(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> object:
        nodes.append(len(tree))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal_forward, "run_pack", counted)
    opening = "The council approved the new budget on Tuesday after a long debate."
    requests = [
        TargetRequest(k, SOURCES[0], opening + tail)
        for k, tail in enumerate([" Critics said taxes rise.", " Schools get money.", ""])
    ]
    fast = lm.score_targets(requests)
    assert_same(fast, lm.score_targets_plain(requests))
    fed = sum(r.n_tokens for r in fast)  # about what padded rows would feed
    assert len(nodes) == 1 and nodes[0] < fed - 20  # the opening's tokens once, not thrice


def test_a_model_that_ignores_the_tree_mask_is_caught_by_the_probe(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8)
    assert lm._causal is not None
    run_pack = _causal_forward.run_pack

    def ordinary_mask(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> list[list[float]]:
        # What attention that ignores a custom mask computes: each node sees every
        # earlier node of the row, siblings' branches included (positions still given).
        chain = dataclasses.replace(tree, parents=list(range(-1, len(tree) - 1)))
        return run_pack(lm_, chain, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_TREE_OK", type(_causal._TREE_OK)())
    monkeypatch.setattr(_causal_forward, "run_pack", ordinary_mask)
    assert not _causal.tree_attention_works(lm._causal)
    requests = make_requests()
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


# -- whole documents packed into one forward ------------------------------------------


@pytest.mark.parametrize("budget", [1, 90, 160, 10**6])
def test_documents_packed_together_give_the_plain_paths_numbers(
    causal_dir: str, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8, doc_pack_tokens=budget)
    assert lm._causal is not None and _causal.tree_attention_works(lm._causal)
    forwards: list[tuple[int, int]] = []  # (nodes, blocks) per packed forward
    run_pack = _causal_forward.run_pack

    def counted(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> object:
        forwards.append((len(tree), count_blocks(tree)))
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    def no_prefix(*args: object) -> None:
        raise AssertionError("a packed forward computes its documents' prefixes itself")

    monkeypatch.setattr(_causal_forward, "run_pack", counted)
    monkeypatch.setattr(_causal_forward, "run_prefix", no_prefix)
    requests = make_requests()  # five prompts of different lengths, shared and single
    fast = lm.score_targets(requests)
    monkeypatch.undo()
    assert_same(fast, lm.score_targets_plain(requests))
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
    requests = make_requests()
    for prompt in dict.fromkeys(r.prompt for r in requests):
        document = [r for r in requests if r.prompt == prompt]
        assert_same(packed.score_targets(document), cached.score_targets(document))


def test_a_failing_packed_forward_falls_back_to_each_documents_padded_batches(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=4, doc_pack_tokens=4096)
    requests = make_requests()
    expected = lm.score_targets_plain(requests)
    run_pack = _causal_forward.run_pack

    def broken_when_packed(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> object:
        if count_blocks(tree) > 1:
            raise RuntimeError("out of memory")
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal_forward, "run_pack", broken_when_packed)
    assert_same(lm.score_targets(requests), expected)


def test_a_model_that_ignores_the_mask_is_not_packed(
    causal_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = HFLanguageModel(causal_dir, batch_size=8, doc_pack_tokens=4096)
    assert lm._causal is not None
    run_pack = _causal_forward.run_pack
    packed_probe: list[bool] = []

    def blocks_ignored(lm_: _causal.CausalModel, tree: Pack, *rest: object) -> list[list[float]]:
        # Only the packed layout is broken: later blocks see the earlier ones' nodes.
        if count_blocks(tree) > 1:
            packed_probe.append(True)
            roots = [node for node, depth in enumerate(tree.depths) if depth == 0]
            parents = list(tree.parents)
            for root in roots[1:]:
                parents[root] = root - 1
            tree = dataclasses.replace(tree, parents=parents)
        return run_pack(lm_, tree, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_causal, "_TREE_OK", type(_causal._TREE_OK)())
    monkeypatch.setattr(_causal_forward, "run_pack", blocks_ignored)
    assert not _causal.tree_attention_works(lm._causal)
    assert packed_probe  # the probe tried the packed layout
    requests = make_requests()
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_the_ancestor_matrix_is_the_same_built_from_ranges_or_row_by_row() -> None:
    from scoring.lm._tree import ancestor_matrix, concatenate, pack

    sequences = [[1, 2, 3], [1, 2, 4, 5], [1, 6], [7], [1, 2, 3, 8]]
    forest = concatenate([*pack(sequences, 4), *pack(sequences[:2], 100)])
    fast = ancestor_matrix(forest)
    # Inserted out of order, a subtree is not contiguous and the rows are built one by one.
    scattered = Pack()
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

    def broken(tree: Pack, prefix_len: int, *rest: object) -> object:
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
    requests = make_requests()
    plain = lm.score_targets_plain(requests)
    made: list[int] = []
    real = _tree_attention.blocks

    def counted(*args: object) -> list[_tree_attention.Block]:
        found = real(*args)  # type: ignore[arg-type]
        made.append(len(found))
        return found

    monkeypatch.setattr(_tree_attention, "blocks", counted)
    assert_same(_causal.score_fast(blocked, requests, 8), plain)
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
    monkeypatch.setattr(_causal_forward, "BLOCKS_OK", type(_causal_forward.BLOCKS_OK)())
    monkeypatch.setattr(_tree_attention, "blocks", _without_a_root_key(_tree_attention.blocks))
    assert _causal.tree_attention_works(lm._causal)  # the dense mask passed
    assert _causal.tree_rows_used(lm._causal) == 0 and lm.provenance()["tree_rows"] == 0
    requests = make_requests()
    assert_same(lm.score_targets(requests), lm.score_targets_plain(requests))


def test_the_run_records_the_block_size(causal_dir: str) -> None:
    record = HFLanguageModel(causal_dir).provenance()
    assert record["tree_rows"] == _tree_attention.CPU_TREE_ROWS
    assert record["attention"] == "sdpa"  # the blocks are SDPA calls
