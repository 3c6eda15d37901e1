"""Seeded, stratified splits of documents into parts (tune / dev / test).

The documents are ordered by their stratifying value (a document's mean human score;
documents without one come last), ties broken at random, and cut into consecutive
strata of about ``1 / (smallest share)`` documents. The parts' sizes are fixed for the
whole list first (largest remainders, so they add up to the number of documents); a
sequential apportionment then lays them out along the ordered list, so each stretch of
scores gets its share of every part, and each stratum's documents are shuffled before
they take the stratum's parts. The same keys, values, shares and seed give the same
split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def part_sizes(n: int, shares: Mapping[str, float]) -> dict[str, int]:
    """How many of ``n`` documents each part gets: ``round(n · share)`` by largest
    remainders, so the sizes add up to ``n`` (ties go to the part named first)."""
    total = sum(shares.values())
    if n < 0 or not shares or any(s < 0 for s in shares.values()) or total <= 0:
        raise ValueError("shares must be non-negative and not all zero")
    exact = {name: n * share / total for name, share in shares.items()}
    sizes = {name: math.floor(value) for name, value in exact.items()}
    order = sorted(shares, key=lambda name: -(exact[name] - sizes[name]))
    for name in order[: n - sum(sizes.values())]:
        sizes[name] += 1
    return sizes


def _layout(sizes: Mapping[str, int]) -> list[str]:
    """The parts laid out evenly along ``sum(sizes)`` positions: at each position the
    part furthest behind its quota (its size times the share of positions passed)."""
    n = sum(sizes.values())
    given = dict.fromkeys(sizes, 0)
    out: list[str] = []
    for i in range(n):
        name = max(sizes, key=lambda p: (sizes[p] * (i + 1) / n - given[p], -list(sizes).index(p)))
        given[name] += 1
        out.append(name)
    return out


def stratified_split(
    keys: Sequence[str],
    values: Sequence[float],
    shares: Mapping[str, float],
    rng: np.random.Generator,
) -> dict[str, str]:
    """Each key's part. ``values`` is each key's stratifying value (NaN: none); ``shares``
    each part's share (they are normalised). Keys must be distinct."""
    if len(keys) != len(values):
        raise ValueError("one stratifying value per key")
    if len(set(keys)) != len(keys):
        raise ValueError("keys must be distinct")
    sizes = part_sizes(len(keys), shares)
    if not keys:
        return {}
    x = np.asarray(values, dtype=np.float64)
    missing = ~np.isfinite(x)
    tiebreak = rng.random(len(keys))
    # lexsort: last key first; documents with no value after every valued one
    order = np.lexsort((tiebreak, np.where(missing, 0.0, x), missing))
    layout = _layout(sizes)
    smallest = min((s for s in shares.values() if s > 0), default=1.0) / sum(shares.values())
    width = max(2, round(1 / smallest))
    parts: dict[str, str] = {}
    for start in range(0, len(keys), width):
        stratum = order[start : start + width].copy()
        rng.shuffle(stratum)
        for index, part in zip(stratum, layout[start : start + width], strict=True):
            parts[keys[int(index)]] = part
    return parts
