"""Bootstrap draws: which documents and systems each resample takes, drawn once from the
caller's seeded :class:`numpy.random.Generator` and shared by every cell (and both
sides of a paired test), with what the resampled statistics derive from them once
(:mod:`scoring.stats.resampling` computes the statistics)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import numpy as np
import numpy.typing as npt

from scoring.stats.group_correlations import as_groups
from scoring.stats.ranking import FloatArray, Groups, IntArray


class Unit(Enum):
    """What a bootstrap resamples, with replacement."""

    DOCUMENTS = "documents"
    SYSTEMS = "systems"
    BOTH = "both"


@dataclass(frozen=True, eq=False)
class Resamples:
    """Bootstrap draws: row b of ``doc_draws`` lists the document groups drawn for
    resample b (likewise ``system_draws``); None where that unit is not resampled."""

    unit: Unit
    docs: Groups
    systems: Groups | None
    doc_draws: IntArray | None
    system_draws: IntArray | None

    @property
    def size(self) -> int:
        """Number of resamples."""
        draws = self.doc_draws if self.doc_draws is not None else self.system_draws
        assert draws is not None
        return int(draws.shape[0])

    @cached_property
    def doc_counts(self) -> FloatArray | None:
        """Resamples × documents: how often each document was drawn."""
        return None if self.doc_draws is None else _counts(self.doc_draws, self.docs.n_groups)

    @cached_property
    def cells(self) -> tuple[IntArray, FloatArray]:
        """Each output's (document, system) cell, and the outputs per cell (documents ×
        systems): what every system-level cell without a missing value shares."""
        assert self.systems is not None
        n_sys = self.systems.n_groups
        cell = self.docs.codes * n_sys + self.systems.codes
        count = np.bincount(cell, minlength=self.docs.n_groups * n_sys)
        return cell, count.reshape(self.docs.n_groups, n_sys).astype(np.float64)

    @cached_property
    def system_counts(self) -> FloatArray | None:
        """Resamples × systems: how often each system was drawn."""
        if self.system_draws is None or self.systems is None:
            return None
        return _counts(self.system_draws, self.systems.n_groups)


def _counts(draws: IntArray, n: int) -> FloatArray:
    """Resamples × n: how often each of the n was drawn, counted a block of rows at a
    time (a million documents' plan holds no temporary the size of the whole)."""
    rows = draws.shape[0]
    out = np.empty((rows, n), dtype=np.float64)
    step = max(1, (1 << 22) // max(1, n))
    for start in range(0, rows, step):
        block = draws[start : start + step]
        flat = (np.arange(block.shape[0], dtype=np.intp)[:, None] * n + block).ravel()
        out[start : start + step] = np.bincount(flat, minlength=block.size).reshape(-1, n)
    return out


def draw_resamples(
    rng: np.random.Generator,
    docs: Groups | npt.ArrayLike,
    systems: Groups | npt.ArrayLike | None = None,
    *,
    unit: Unit = Unit.DOCUMENTS,
    resamples: int = 1000,
) -> Resamples:
    """Draw ``resamples`` bootstrap resamples of documents, systems or both.

    ``docs`` and ``systems`` are the keys of each output (or prebuilt
    :class:`~scoring.stats.ranking.Groups`). ``systems`` is needed to resample systems
    and for system-level intervals.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    doc_groups = docs if isinstance(docs, Groups) else Groups.from_keys(docs)
    sys_groups = None if systems is None else as_groups(systems, doc_groups.n_items, "systems")
    doc_draws = system_draws = None
    if unit in (Unit.DOCUMENTS, Unit.BOTH):
        doc_draws = _draw(rng, doc_groups.n_groups, resamples)
    if unit in (Unit.SYSTEMS, Unit.BOTH):
        if sys_groups is None:
            raise ValueError(f"resampling {unit.value} needs system keys")
        system_draws = _draw(rng, sys_groups.n_groups, resamples)
    return Resamples(
        unit=unit,
        docs=doc_groups,
        systems=sys_groups,
        doc_draws=doc_draws,
        system_draws=system_draws,
    )


def _draw(rng: np.random.Generator, n: int, resamples: int) -> IntArray:
    """``resamples`` rows of ``n`` draws from ``range(n)``: the values of one
    ``rng.integers(0, n, size=(resamples, n))`` call, drawn a block of rows at a time
    into 32-bit integers where they fit (half the memory of a million documents' plan)."""
    dtype = np.int32 if n < 2**31 else np.int64
    out = np.empty((resamples, n), dtype=dtype)
    step = max(1, (1 << 22) // max(1, n))
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        out[start:stop] = rng.integers(0, n, size=(stop - start, n))
    return out
