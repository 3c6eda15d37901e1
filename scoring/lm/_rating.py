"""Rating-label distributions from a causal language model (G-Eval's scoring).

For each request the prompt is tokenised once; each label is tokenised in context (the
prompt and the label together, split where the prompt's tokens end) into a token
sequence. Labels form a trie: single-token labels (``1``…``5``) are read from the
next-token distribution after the prompt; a multi-token label (``10`` = ``1``, ``0``)
multiplies the probabilities along its path. A label that is also the start of a longer
one (``1`` of ``10``) gets the probability of stopping there: p(``1``) times one minus
the probability of the tokens that would continue it into another label.

Two forward strategies give the same numbers (to float rounding):

* :func:`rate_plain`: one forward per request over its whole prompt (plus the label
  path), full-vocabulary logits everywhere;
* :func:`rate_fast`: the requests of a group (one document's outputs) share a token
  prefix (instruction, steps, source); it runs once, its key/value cache is copied
  along the batch, and each output's remaining tokens run in right-padded batches
  (collated by :mod:`._collate`, the skeleton every path shares). The vocabulary
  projection is applied only at the positions that are read.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import scoring.lm._causal_forward as _causal_forward
from scoring.lm._causal_encoding import CausalModel
from scoring.lm._collate import Batches, Row, collate
from scoring.lm._util import cache_kwargs, describe
from scoring.lm.rating import RatingDistribution, RatingRequest

logger = logging.getLogger(__name__)

Path = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RatingEncoding:
    """A prompt's token ids and its labels' token paths.

    ``nodes`` maps each path read (a proper prefix of some label's path, the empty path
    included) to the token ids whose probability is needed after it (its children).
    ``rows`` are the label paths fed after the prompt, each covering all its prefixes.
    """

    ids: tuple[int, ...]
    paths: tuple[Path, ...]
    nodes: dict[Path, tuple[int, ...]]
    rows: tuple[Path, ...]


Encoded = RatingEncoding | str  # a string is the error for that request


def _strip_added(enc: Any, j: int) -> list[int]:
    """Token ids of one encoding without trailing special tokens the tokenizer appended."""
    ids = list(enc["input_ids"][j])
    added = [
        bool(s) and a == b
        for (a, b), s in zip(enc["offset_mapping"][j], enc["special_tokens_mask"][j], strict=True)
    ]
    while ids and added[len(ids) - 1] and len(ids) > 1:
        ids.pop()
    return ids


def encode(lm: CausalModel, requests: Sequence[RatingRequest]) -> list[Encoded]:
    """Tokenise every prompt and every label in context; an error string where impossible."""
    out: list[Encoded] = ["" for _ in requests]
    texts: list[str] = []
    for request in requests:
        texts.append(request.prompt)
        texts.extend(request.prompt + label for label in request.labels)
    enc = lm.tokenizer(
        texts,
        add_special_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
    )
    j = 0
    for i, request in enumerate(requests):
        prompt_ids = _strip_added(enc, j)
        label_ids = [_strip_added(enc, j + 1 + n) for n in range(len(request.labels))]
        j += 1 + len(request.labels)
        out[i] = _paths(request, prompt_ids, label_ids, lm)
    return out


def _paths(
    request: RatingRequest, prompt_ids: list[int], label_ids: list[list[int]], lm: Any
) -> Encoded:
    if not request.labels:
        return "no rating labels to score"
    if len(set(request.labels)) != len(request.labels):
        return "rating labels must be distinct"
    if not prompt_ids:
        if lm.context_token is None:
            return "the prompt is empty and the tokenizer has no BOS or EOS token to put first"
        prompt_ids = [lm.context_token]
        label_ids = [[lm.context_token, *ids] for ids in label_ids]
    n = len(prompt_ids)
    paths: list[Path] = []
    for label, ids in zip(request.labels, label_ids, strict=True):
        if ids[:n] != prompt_ids or len(ids) == n:
            return (
                f"the label {label!r} merges with the end of the prompt when tokenised; "
                "end the prompt with a separator (a space or a newline)"
            )
        paths.append(tuple(ids[n:]))
    if len(set(paths)) != len(paths):
        return "two rating labels tokenise to the same tokens"
    nodes: dict[Path, set[int]] = {}
    for path in paths:
        for k in range(len(path)):
            nodes.setdefault(path[:k], set()).add(path[k])
    # A row per internal path that no other internal path extends: it covers its prefixes.
    internal = sorted(nodes, key=len, reverse=True)
    rows: list[Path] = []
    for path in internal:
        if not any(row[: len(path)] == path for row in rows):
            rows.append(path)
    limit = lm.context_limit
    longest = n + max(len(p) for p in paths) - 1
    if limit is not None and longest > limit:
        return f"the prompt is {n} tokens and does not fit the model's context of {limit} tokens"
    return RatingEncoding(
        ids=tuple(prompt_ids),
        paths=tuple(paths),
        nodes={path: tuple(sorted(children)) for path, children in nodes.items()},
        rows=tuple(rows),
    )


def _distribution(
    key: Hashable, labels: Sequence[str], enc: RatingEncoding, read: dict[Path, dict[int, float]]
) -> RatingDistribution:
    """Combine the log-probabilities read at each node into one per label."""
    values: list[float] = []
    for path in enc.paths:
        logp = math.fsum(read[path[:k]][path[k]] for k in range(len(path)))
        if path in enc.nodes:  # the label could also go on into a longer label
            go_on = math.fsum(math.exp(v) for v in read[path].values())
            logp += math.log(max(0.0, 1.0 - go_on)) if go_on < 1.0 else -math.inf
        values.append(logp)
    return RatingDistribution.from_logprobs(key, labels, values)


@dataclass(frozen=True, slots=True)
class _Row:
    """One sequence to feed: request ``index``'s prompt followed by label path ``path``."""

    index: int
    ids: tuple[int, ...]
    prompt_len: int
    path: Path


def _rows(encoded: Sequence[Encoded], indices: Sequence[int]) -> list[_Row]:
    rows: list[_Row] = []
    for i in indices:
        enc = encoded[i]
        assert isinstance(enc, RatingEncoding)
        for path in enc.rows:
            rows.append(_Row(i, enc.ids + path, len(enc.ids), path))
    return rows


def _wanted(enc: RatingEncoding, row: _Row) -> list[tuple[Path, int]]:
    """(node, position in the row) for each node this row reads."""
    return [(row.path[:k], row.prompt_len - 1 + k) for k in range(len(row.path) + 1)]


def _finish(
    requests: Sequence[RatingRequest],
    encoded: Sequence[Encoded],
    read: dict[int, dict[Path, dict[int, float]]],
    errors: dict[int, str],
) -> list[RatingDistribution]:
    out: list[RatingDistribution] = []
    for i, (request, enc) in enumerate(zip(requests, encoded, strict=True)):
        if isinstance(enc, str):
            out.append(RatingDistribution.failed(request.key, enc))
        elif i in errors:
            out.append(RatingDistribution.failed(request.key, errors[i]))
        else:
            out.append(_distribution(request.key, request.labels, enc, read[i]))
    return out


# -- plain path ---------------------------------------------------------------------

Read = dict[Path, dict[int, float]]  # what a row read: node -> child token -> log-prob


def rate_plain(lm: CausalModel, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
    """One forward per row over the full sequence, full-vocabulary logits everywhere."""
    import torch

    encoded = encode(lm, requests)
    ok = [i for i, e in enumerate(encoded) if isinstance(e, RatingEncoding)]
    read: dict[int, Read] = {i: {} for i in ok}
    errors: dict[int, str] = {}
    with torch.inference_mode():
        for row in _rows(encoded, ok):
            if row.index in errors:
                continue
            try:
                _merge(read[row.index], _plain_row(lm, encoded, row))
            except Exception as exc:  # one bad request must not lose the others
                logger.exception("rating one prompt failed")
                errors[row.index] = describe(exc)
    return _finish(requests, encoded, read, errors)


def _merge(into: Read, found: Read) -> None:
    """Add a row's reads to its request's; a node read by two rows keeps the first."""
    for node, values in found.items():
        into.setdefault(node, values)


def _plain_row(lm: CausalModel, encoded: Sequence[Encoded], row: _Row) -> Read:
    import torch

    enc = encoded[row.index]
    assert isinstance(enc, RatingEncoding)
    ids = torch.tensor([row.ids], dtype=torch.long, device=lm.device)
    logprobs = torch.log_softmax(lm.model(input_ids=ids).logits[0].float(), dim=-1)
    found: Read = {}
    for node, position in _wanted(enc, row):
        children = enc.nodes[node]
        values = logprobs[position, list(children)].tolist()
        found.setdefault(node, dict(zip(children, values, strict=True)))
    return found


# -- fast path ----------------------------------------------------------------------


def rate_fast(
    lm: CausalModel, requests: Sequence[RatingRequest], batch_size: int
) -> list[RatingDistribution]:
    """Same numbers as :func:`rate_plain`, computing each group's shared prefix once.

    The rows (a prompt and a label path each) go through the collate skeleton
    (:func:`._collate.collate`): identical rows are read once; rows of one group share
    a prefix, the common token prefix of their prompts, stopped one token before the
    shortest prompt ends, so the position predicting each first label token is
    recomputed in the batch; a failing batch falls back to one forward per row. A
    request with a failed row gets that row's error.
    """
    import torch

    encoded = encode(lm, requests)
    ok = [i for i, e in enumerate(encoded) if isinstance(e, RatingEncoding)]
    rows = [Row(k, row) for k, row in enumerate(_rows(encoded, ok))]

    def paths(row: _Row) -> tuple[Path, ...]:
        enc = encoded[row.index]
        assert isinstance(enc, RatingEncoding)
        return enc.paths  # the labels decide which children each node reads

    batches = Batches[_Row, Read | str](
        "padded batches",
        batch_size,
        _causal_forward.FORWARD_COST,
        length=lambda row, group: len(row.ids) - group.shared()[0],
        run=lambda group, batch: _run_rows(lm, encoded, [r.enc for r in batch], *group.shared()),
    )
    with torch.inference_mode():
        found = collate(
            rows,
            identity=lambda row: (row.ids, row.path, paths(row)),
            group_key=lambda row: requests[row.enc.index].group,
            # Stop before the last prompt token: it predicts the first label token.
            start=lambda members: _causal_forward.shared_prefix(
                lm, [row.ids for row in members], min(row.prompt_len for row in members) - 1
            ),
            strategies=[batches],
            one=lambda row: _plain_row(lm, encoded, row.enc),
            failed=lambda row, error: error,
        )
    read: dict[int, Read] = {i: {} for i in ok}
    errors: dict[int, str] = {}
    for item in rows:  # in row order, as the plain path reads them
        result = found[item.index]
        if isinstance(result, str):
            errors.setdefault(item.enc.index, result)
        else:
            _merge(read[item.enc.index], result)
    return _finish(requests, encoded, read, errors)


def _run_rows(
    lm: CausalModel,
    encoded: Sequence[Encoded],
    batch: Sequence[_Row],
    prefix_len: int,
    cache: Any,
) -> list[Read]:
    """Feed each row's tokens after the cached prefix and read its nodes' children."""
    import torch

    device = lm.device
    lengths = [len(row.ids) - prefix_len for row in batch]
    width = max(lengths)
    n = len(batch)
    input_ids = torch.full((n, width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros((n, prefix_len + width), dtype=torch.long)
    mask[:, :prefix_len] = 1
    picks: list[tuple[int, Path, int]] = []  # (batch row, node, column)
    for b, (row, length) in enumerate(zip(batch, lengths, strict=True)):
        input_ids[b, :length] = torch.tensor(row.ids[prefix_len:])
        mask[b, prefix_len : prefix_len + length] = 1
        enc = encoded[row.index]
        assert isinstance(enc, RatingEncoding)
        picks.extend((b, node, position - prefix_len) for node, position in _wanted(enc, row))
    input_ids = input_ids.to(device)
    mask = mask.to(device)
    position_ids = torch.arange(prefix_len, prefix_len + width, device=device).expand(n, -1)
    past = _causal_forward.expanded(cache, n) if cache is not None else None
    row_index = torch.tensor([b for b, _, _ in picks], device=device)
    col_index = torch.tensor([c for _, _, c in picks], device=device)
    logprobs = _causal_forward.logprobs_at(
        lm,
        row_index,
        col_index,
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        **cache_kwargs(lm.model.base_model, past),
        use_cache=past is not None,
    )
    found: list[Read] = [{} for _ in batch]
    for k, (b, node, _col) in enumerate(picks):
        enc = encoded[batch[b].index]
        assert isinstance(enc, RatingEncoding)
        children = enc.nodes[node]
        values = logprobs[k, list(children)].tolist()
        found[b].setdefault(node, dict(zip(children, values, strict=True)))
    return found
