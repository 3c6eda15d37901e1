"""The report card as a table: its sortable columns (the page's headers, the exports'
order) and its CSV, LaTeX and JSON exports (through the one CSV writer)."""

from __future__ import annotations

import json
from typing import Any

from studies.services.analysis.report_card.pieces import registry
from studies.services.analysis.report_card.pieces.base import Column
from studies.services.analysis.report_card.verdict import CAN, CANNOT, UNCLEAR
from studies.services.analysis.tables import fmt, sort_key, sort_rows, tex_escape
from studies.services.csvfile import csv_text

VERDICT_ORDER = {CAN: 0, UNCLEAR: 1, CANNOT: 2}

# the row's own columns, then every registered piece's (pieces/registry.py)
COLUMNS = (
    Column("judge", "Judge", lambda r: r["run"]["label"].lower(), best_high=False),
    Column("aspect", "Aspect", lambda r: r["aspect"]["code"], best_high=False),
    Column("verdict", "Verdict", lambda r: VERDICT_ORDER[r["verdict"]["code"]], best_high=False),
    *registry.columns(),
)
BY_KEY = {c.key: c for c in COLUMNS}


def sorted_rows(card: dict[str, Any], sort: str | None) -> list[dict[str, Any]]:
    """The card's rows sorted by a column (``-`` first: the other way); unsorted, by
    aspect then judge as computed."""
    rows = list(card["rows"])
    key, flipped = sort_key(sort)
    column = BY_KEY.get(key)
    if column is not None:
        sort_rows(rows, column.value, best_high=column.best_high, flipped=flipped)
    return rows


# --- exports ----------------------------------------------------------------------------

HEADER = [
    "run_id",
    "judge",
    "metric",
    "model",
    "aspect",
    "aspect_kind",
    "tuned_on_documents",
    "evaluated_on_test_documents",
    *registry.export_header(),
    "verdict",
    "verdict_text",
]


def _line(row: dict[str, Any]) -> list[Any]:
    return [
        row["run"]["pk"],
        row["run"]["label"],
        row["run"]["metric"],
        row["run"]["model"],
        row["aspect"]["code"],
        row["aspect"].get("kind", "scale"),
        *_tuned(row),
        *registry.export_values(row),
        row["verdict"]["code"],
        row["verdict"]["text"],
    ]


def _tuned(row: dict[str, Any]) -> list[Any]:
    """A tuned run's documents (tuned on, evaluated on); blank for any other run."""
    tuned = row["run"].get("tuned")
    if not tuned:
        return ["", ""]
    return [tuned["tuned_on_documents"], "" if tuned["replaced"] else tuned["test_documents"]]


def to_csv(card: dict[str, Any], sort: str | None = None, *, raw: bool = False) -> str:
    """One line per row, every number in its own column; text cells that a spreadsheet
    would run as formulas get a leading ``'`` unless ``raw``."""
    return csv_text([HEADER, *(_line(r) for r in sorted_rows(card, sort))], raw=raw)


def to_json(card: dict[str, Any], sort: str | None = None) -> str:
    return json.dumps(
        {**card, "rows": sorted_rows(card, sort)}, indent=2, ensure_ascii=False, default=str
    )


def _ci(found: dict[str, Any] | None) -> str:
    found = found or {}
    text = fmt(found.get("value"))
    if text and found.get("low") is not None and found.get("high") is not None:
        text += f" [{fmt(found['low'], 2)}, {fmt(found['high'], 2)}]"
    return text or "--"


STATISTICS = {"MCC": "MCC", "Cohen's κ": r"$\kappa$"}
MARKS = {CAN: r"\checkmark", CANNOT: r"$\times$", UNCLEAR: "?"}


def to_latex(card: dict[str, Any], sort: str | None = None) -> str:
    """A booktabs table: judge, aspect, the primary statistic (the correlation on a scale
    aspect, MCC binary, κ categorical) [interval], the human ceiling, κ_w,
    AC1, α [intervals], ω (pass †), cost and time per 1,000 outputs, the verdict's mark,
    with a legend (LaTeX comments)."""
    confidence = f"{card['confidence'] * 100:g}"
    lines = [
        f"% Concordia judge report card: {card['statistic']}, {confidence}% intervals, "
        f"alternative-annotator test at epsilon = {card['epsilon']:g}",
        r"\begin{tabular}{lllcccccccc}",
        r"\toprule",
        r"Judge & Aspect & Stat. & Value & Ceiling & $\kappa_w$ & AC1 & $\alpha$ & $\omega$ & "
        r"Cost/1k & Verdict \\",
        r"\midrule",
    ]
    for row in sorted_rows(card, sort):
        alt, agree, cost = row["alt_test"], row["agreement"], row["cost"]
        omega = "--" if alt["problem"] else fmt(alt["winning_rate"], 2)
        if alt["passed"]:
            omega += r"$^\dagger$"
        primary = registry.primary_of(row, card["statistic"])
        shown = {} if primary is None else primary.__dict__
        cells = [
            tex_escape(row["run"]["label"])
            + (r"$^{S}$" if row["sentinel"]["fails"] else "")
            + (r"$^{T}$" if row["run"].get("tuned") else ""),
            tex_escape(row["aspect"]["code"]),
            STATISTICS.get(shown.get("name", ""), "corr."),
            _ci(shown),
            fmt(shown.get("ceiling")) or "--",
            _ci(agree.get("kappa")),
            _ci(agree.get("ac1")),
            _ci(agree.get("alpha")),
            omega,
            "--" if cost.get("cost") is None else f"{cost['cost']:.4f}",
            MARKS[row["verdict"]["code"]],
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "% Legend:"]
    for row in sorted_rows(card, sort):
        cut = (row.get("labels") or {}).get("threshold")
        if cut:
            lines.append(
                f"% {row['run']['label']} on {row['aspect']['code']}: labels by a threshold "
                f"chosen on {cut['split']}, evaluated on {cut['n_documents_evaluated']} "
                "other documents"
            )
    lines += [
        f"% [low, high]: {confidence}% bootstrap interval (documents resampled)",
        r"% Statistic: the correlation (scale aspects), MCC (binary), Cohen's $\kappa$ "
        "(categorical)",
        r"% Ceiling: the annotators' own: one annotator's correlation with the others' mean, "
        "averaged; the same statistic among the annotators for labels",
        r"% $\omega$: the alternative-annotator test's winning rate; $^\dagger$: passes "
        r"($\omega \ge 0.5$)",
        r"% $^{S}$: not significantly above a sentinel baseline (p > 0.05)",
        r"% $^{T}$: a tuned judge, evaluated on its split's test documents only",
        r"% Verdict: \checkmark{} can replace the annotators here; $\times$ cannot; ? unclear",
        "",
    ]
    return "\n".join(lines)
