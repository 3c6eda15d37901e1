"""How much of the judged data a metric scored, and which outputs two metrics share.

A run that scored part of a dataset (a document limit, a cancelled run, errors) is not
comparable with a full run on the full run's outputs: its correlation and its resamples
come from fewer documents. These helpers say how much it covers and which outputs it
used (two metrics are compared on the outputs both used: see
:func:`~scoring.stats.significance.paired_bootstrap_test`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.stats.ranking import BoolArray, Groups


@dataclass(frozen=True)
class Coverage:
    """``n_outputs`` and ``n_documents`` scored (and judged) of the ``of_outputs``
    outputs and ``of_documents`` documents that have a human judgment."""

    n_outputs: int
    n_documents: int
    of_outputs: int
    of_documents: int

    @property
    def share(self) -> float:
        """The share of the judged outputs scored (0 when nothing was judged)."""
        return self.n_outputs / self.of_outputs if self.of_outputs else 0.0


def scored(metric: npt.ArrayLike, human: npt.ArrayLike) -> BoolArray:
    """The outputs with both a metric score and a human judgment."""
    return np.isfinite(np.asarray(metric, dtype=np.float64)) & np.isfinite(
        np.asarray(human, dtype=np.float64)
    )


def coverage(metric: npt.ArrayLike, human: npt.ArrayLike, docs: Groups | npt.ArrayLike) -> Coverage:
    """The metric's coverage of the judged outputs; ``docs`` is each output's document
    (or the documents' :class:`~scoring.stats.ranking.Groups`)."""
    judged = np.isfinite(np.asarray(human, dtype=np.float64))
    used = scored(metric, human)
    codes = docs.codes if isinstance(docs, Groups) else np.asarray(docs)
    if not judged.size == used.size == codes.size:
        raise ValueError("metric, human and docs must have one entry per output")
    if isinstance(docs, Groups) and used.all():  # every output judged and scored
        everything = int(np.count_nonzero(docs.sizes))
        return Coverage(used.size, everything, used.size, everything)
    return Coverage(
        n_outputs=int(used.sum()),
        n_documents=_distinct(codes[used]),
        of_outputs=int(judged.sum()),
        of_documents=_distinct(codes[judged]),
    )


def _distinct(codes: npt.NDArray[np.generic]) -> int:
    """How many distinct keys: by counting for small non-negative integer codes (a
    frame's), which is several times faster than sorting them."""
    if (
        codes.dtype.kind in "iu"
        and codes.size
        and int(codes.min()) >= 0
        and int(codes.max()) < (1 << 26)
    ):
        return int(np.count_nonzero(np.bincount(codes)))
    return int(np.unique(codes).size)
