"""The judge report card: can this judge replace the annotators, for this aspect, on
this data? (issue 25). Each piece of a row's evidence is a module of :mod:`.pieces`,
registered in :mod:`.pieces.registry` (issue 38); :mod:`.card` computes it, :mod:`.store` caches it and asks the
light worker, :mod:`.table` sorts and exports it, :mod:`.gate` is ``judge_gate``'s."""

from studies.services.analysis.report_card.card import compute_card, is_judge
from studies.services.analysis.report_card.params import CardParams
from studies.services.analysis.report_card.store import (
    available_card,
    cached_card,
    card_for,
    compute_in_worker,
    failed,
    progress,
    try_again,
)
from studies.services.analysis.report_card.table import (
    COLUMNS,
    sorted_rows,
    to_csv,
    to_json,
    to_latex,
)
from studies.services.analysis.report_card.thresholds import split_params

__all__ = [
    "COLUMNS",
    "CardParams",
    "available_card",
    "cached_card",
    "card_for",
    "compute_card",
    "compute_in_worker",
    "failed",
    "is_judge",
    "progress",
    "sorted_rows",
    "split_params",
    "to_csv",
    "to_json",
    "to_latex",
    "try_again",
]
