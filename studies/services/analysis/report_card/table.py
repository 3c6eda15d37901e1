"""The report card as a table: its sortable columns (the page's headers, the exports'
order) and its CSV, LaTeX and JSON exports (through the one CSV writer)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studies.services.analysis.report_card.verdict import CAN, CANNOT, UNCLEAR
from studies.services.analysis.tables import fmt, sort_key, sort_rows, tex_escape
from studies.services.csvfile import csv_text, number

VERDICT_ORDER = {CAN: 0, UNCLEAR: 1, CANNOT: 2}


def _abs(value: float | None) -> float | None:
    return None if value is None else abs(value)


def _from_half(value: float | None) -> float | None:
    return None if value is None else abs(value - 0.5)


@dataclass(frozen=True)
class Column:
    """A sortable column: its ``sort`` name, header, value and which way is best."""

    key: str
    label: str
    value: Callable[[dict[str, Any]], Any]
    best_high: bool = True
    title: str = ""


COLUMNS = (
    Column("judge", "Judge", lambda r: r["run"]["label"].lower(), best_high=False),
    Column("aspect", "Aspect", lambda r: r["aspect"]["code"], best_high=False),
    Column("verdict", "Verdict", lambda r: VERDICT_ORDER[r["verdict"]["code"]], best_high=False),
    Column("corr", "Correlation", lambda r: r["correlation"]["value"]),
    Column("low", "Lower bound", lambda r: r["correlation"]["low"], title="of the interval"),
    Column("kappa", "κ_w", lambda r: (r["agreement"].get("kappa") or {}).get("value")),
    Column("ac1", "AC1", lambda r: (r["agreement"].get("ac1") or {}).get("value")),
    Column("alpha", "α", lambda r: (r["agreement"].get("alpha") or {}).get("value")),
    Column("omega", "ω", lambda r: r["alt_test"]["winning_rate"], title="winning rate"),
    Column("rho", "Adv. prob.", lambda r: r["alt_test"]["advantage_probability"]),
    Column(
        "length",
        "Length r",
        lambda r: _abs(r["length"]["judge"]),
        best_high=False,
        title="the judge's correlation with output length (closest to 0 first)",
    ),
    Column("icc", "ICC(1)", lambda r: (r["self_consistency"] or {}).get("icc1")),
    Column(
        "position",
        "Position cons.",
        lambda r: (r["position"] or {}).get("position_consistency"),
        title="a pairwise judge: the share of pairs whose verdict survives the swap",
    ),
    Column(
        "first",
        "First pos.",
        lambda r: _from_half((r["position"] or {}).get("first_position_share")),
        best_high=False,
        title="a pairwise judge: the share of verdicts for the output shown first "
        "(closest to one half first)",
    ),
    Column(
        "prompt",
        "Prompt Δ",
        lambda r: _abs((r["prompt"] or {}).get("delta")),
        best_high=False,
        title="the change from its prompt variant (smallest first)",
    ),
    Column("cost", "Cost / 1k", lambda r: r["cost"].get("cost"), best_high=False),
    Column("seconds", "Time / 1k", lambda r: r["cost"].get("seconds"), best_high=False),
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
    "correlation",
    "correlation_low",
    "correlation_high",
    "n_outputs",
    "human_ceiling",
    "binning",
    "kappa_w",
    "kappa_w_low",
    "kappa_w_high",
    "ac1",
    "ac1_low",
    "ac1_high",
    "alpha",
    "alpha_low",
    "alpha_high",
    "human_kappa_w",
    "human_ac1",
    "human_alpha",
    "alt_test_passed",
    "winning_rate",
    "advantage_probability",
    "epsilon",
    "annotators_tested",
    "items_with_three_annotators",
    "alt_test_problem",
    "not_above_sentinel",
    "not_above_sentinel_p",
    "length_r",
    "humans_length_r",
    "partial_without_length",
    "icc1",
    "icc1k",
    "mean_within_sd",
    "pairs",
    "position_consistency",
    "first_position_share",
    "first_position_low",
    "first_position_high",
    "first_position_p",
    "prompt_variant_of",
    "prompt_delta",
    "prompt_delta_low",
    "prompt_delta_high",
    "prompt_rank_changes",
    "cost_source",
    "requests_per_1k",
    "tokens_per_1k",
    "cost_per_1k",
    "seconds_per_1k",
    "verdict",
    "verdict_text",
]


def _estimate(found: dict[str, Any] | None) -> list[Any]:
    found = found or {}
    return [number(found.get(k), 6) for k in ("value", "low", "high")]


def _line(row: dict[str, Any]) -> list[Any]:
    corr, agree, alt = row["correlation"], row["agreement"], row["alt_test"]
    failed, length = row["sentinel"]["fails"], row["length"]
    consistency, prompt, cost = row["self_consistency"] or {}, row["prompt"] or {}, row["cost"]
    position = row.get("position") or {}
    flips = "; ".join(
        f"{f['system']} {f['against_rank']:g}→{f['rank']:g}" for f in prompt.get("rank_changes", [])
    )
    return [
        row["run"]["pk"],
        row["run"]["label"],
        row["run"]["metric"],
        row["run"]["model"],
        row["aspect"]["code"],
        number(corr["value"], 6),
        number(corr["low"], 6),
        number(corr["high"], 6),
        corr["n_outputs"],
        number(corr["ceiling"], 6),
        agree.get("binning") or "",
        *_estimate(agree.get("kappa")),
        *_estimate(agree.get("ac1")),
        *_estimate(agree.get("alpha")),
        number((agree.get("human_kappa") or {}).get("value"), 6),
        number((agree.get("human_ac1") or {}).get("value"), 6),
        number((agree.get("human_alpha") or {}).get("value"), 6),
        "" if alt["problem"] else int(alt["passed"]),
        number(alt["winning_rate"], 4),
        number(alt["advantage_probability"], 4),
        number(alt["epsilon"]),
        alt["n_annotators_tested"],
        alt["n_items_with_three"],
        alt["message"],
        failed["label"] if failed else "",
        number(failed["p"], 4) if failed else "",
        number(length["judge"], 6),
        number(length["humans"], 6),
        number(length["partial"], 6),
        number(consistency.get("icc1"), 6),
        number(consistency.get("icck"), 6),
        number(consistency.get("mean_within_sd"), 6),
        position.get("n_pairs", ""),
        *(
            number(position.get(k), 6)
            for k in (
                "position_consistency",
                "first_position_share",
                "first_position_low",
                "first_position_high",
                "first_position_p",
            )
        ),
        (prompt.get("against") or {}).get("label", ""),
        number(prompt.get("delta"), 6),
        number(prompt.get("low"), 6),
        number(prompt.get("high"), 6),
        flips,
        cost.get("source") or "",
        number(cost.get("requests"), 2),
        number(cost.get("tokens"), 1),
        number(cost.get("cost"), 6),
        number(cost.get("seconds"), 3),
        row["verdict"]["code"],
        row["verdict"]["text"],
    ]


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


MARKS = {CAN: r"\checkmark", CANNOT: r"$\times$", UNCLEAR: "?"}


def to_latex(card: dict[str, Any], sort: str | None = None) -> str:
    """A booktabs table: judge, aspect, correlation [interval], the human ceiling, κ_w,
    AC1, α [intervals], ω (pass †), cost and time per 1,000 outputs, the verdict's mark,
    with a legend (LaTeX comments)."""
    confidence = f"{card['confidence'] * 100:g}"
    lines = [
        f"% Concordia judge report card: {card['statistic']}, {confidence}% intervals, "
        f"alternative-annotator test at epsilon = {card['epsilon']:g}",
        r"\begin{tabular}{llcccccccc}",
        r"\toprule",
        r"Judge & Aspect & Corr. & Ceiling & $\kappa_w$ & AC1 & $\alpha$ & $\omega$ & "
        r"Cost/1k & Verdict \\",
        r"\midrule",
    ]
    for row in sorted_rows(card, sort):
        alt, agree, cost = row["alt_test"], row["agreement"], row["cost"]
        omega = "--" if alt["problem"] else fmt(alt["winning_rate"], 2)
        if alt["passed"]:
            omega += r"$^\dagger$"
        cells = [
            tex_escape(row["run"]["label"]) + (r"$^{S}$" if row["sentinel"]["fails"] else ""),
            tex_escape(row["aspect"]["code"]),
            _ci(row["correlation"]),
            fmt(row["correlation"]["ceiling"]) or "--",
            _ci(agree.get("kappa")),
            _ci(agree.get("ac1")),
            _ci(agree.get("alpha")),
            omega,
            "--" if cost.get("cost") is None else f"{cost['cost']:.4f}",
            MARKS[row["verdict"]["code"]],
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        "% Legend:",
        f"% [low, high]: {confidence}% bootstrap interval (documents resampled)",
        r"% Ceiling: one annotator's correlation with the others' mean, averaged",
        r"% $\omega$: the alternative-annotator test's winning rate; $^\dagger$: passes "
        r"($\omega \ge 0.5$)",
        r"% $^{S}$: not significantly above a sentinel baseline (p > 0.05)",
        r"% Verdict: \checkmark{} can replace the annotators here; $\times$ cannot; ? unclear",
        "",
    ]
    return "\n".join(lines)
