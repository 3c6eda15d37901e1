"""A report card row's plain-language verdict: can this judge replace the annotators, for
this aspect, on this data?

The alternative-annotator test decides (Calderon, Reichart & Dror 2025: the judge
passes when it wins against at least half of the annotators at the margin ε); the card
adds two checks the test does not make:

* ``cannot``: the test ran and the judge failed it; or it passed but its correlation is
  not significantly above a sentinel baseline (length, random, a source-free GPTScore),
  so its agreement may come from what the sentinel measures;
* ``unclear``: the test could not run (fewer than three annotators on enough items: the
  row says what is missing), or no output was both scored and judged; or the judge
  passed but its correlation's upper bound stays below the human ceiling (one
  annotator's agreement with the others: the judge orders the outputs worse than an
  annotator would);
* ``can``: it passed, and its interval reaches the human ceiling (or there is no ceiling
  to compare with: fewer than two annotators overlap).

A pairwise judge's significant first-position preference is added to any verdict: its
averaged preferences cancel the bias out, but a judge that leans on position decides
fewer pairs on their content.
"""

from __future__ import annotations

from typing import Any

CAN, CANNOT, UNCLEAR = "can", "cannot", "unclear"
POSITION_ALPHA = 0.05


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def verdict(row: dict[str, Any], statistic: str) -> dict[str, str]:
    """``{"code": can | cannot | unclear, "text": …}`` for a row (see the module's
    docstring); ``statistic`` names the correlation (“Spearman ρ, sample-level”). A
    pairwise judge that significantly prefers one position (p < 0.05) is told so."""
    found = _verdict(row, statistic)
    position = row.get("position") or {}
    p = position.get("first_position_p")
    if p is not None and p < POSITION_ALPHA:
        found["text"] += (
            f"; mind its position bias: {_f(position['first_position_share'])} of its "
            f"verdicts go to the output shown first (p = {_f(p, 3)}), and "
            f"{_f(position['position_consistency'])} of its pairs keep their verdict "
            "when swapped"
        )
    return found


def _verdict(row: dict[str, Any], statistic: str) -> dict[str, str]:
    aspect = row["aspect"]["name"].lower()
    alt, corr, sentinel = row["alt_test"], row["correlation"], row["sentinel"]
    eps = f"ε={alt['epsilon']:g}"
    ceiling = corr["ceiling"]
    if corr["value"] is None:
        return {
            "code": UNCLEAR,
            "text": f"cannot tell for {aspect} here: no output is both scored by this judge "
            "and judged by the annotators",
        }
    if alt["problem"]:
        return {
            "code": UNCLEAR,
            "text": f"cannot tell whether it can replace annotators for {aspect} here: the "
            f"alternative-annotator test needs items judged by at least three annotators; "
            f"{alt['message']} ({alt['n_items_with_three']} items have three or more)",
        }
    tested = f"{alt['wins']} of {alt['n_annotators_tested']} annotators"
    if not alt["passed"]:
        return {
            "code": CANNOT,
            "text": f"cannot replace annotators for {aspect} here: fails the "
            f"alternative-annotator test at {eps} (wins against {tested}, "
            f"ω = {_f(alt['winning_rate'])} < 0.5)",
        }
    passes = (
        f"passes the alternative-annotator test at {eps} (wins against {tested}, "
        f"ω = {_f(alt['winning_rate'])}, advantage probability "
        f"{_f(alt['advantage_probability'])})"
    )
    failed = sentinel.get("fails")
    if failed:
        return {
            "code": CANNOT,
            "text": f"cannot replace annotators for {aspect} here: it {passes}, but its "
            f"{statistic} is not significantly above the sentinel {failed['label']} "
            f"(p = {_f(failed['p'], 3)}): its agreement may come from what that measures",
        }
    low, high = corr["low"], corr["high"]
    if ceiling is not None and high is not None and high < ceiling:
        return {
            "code": UNCLEAR,
            "text": f"replace annotators for {aspect} with care: it {passes}, but its "
            f"{statistic} {_f(corr['value'])} [{_f(low)}, {_f(high)}] stays below the "
            f"human ceiling {_f(ceiling)}",
        }
    if ceiling is None:
        against = "(no human ceiling: fewer than two annotators overlap)"
    elif low is not None and low >= ceiling:
        against = f"and its lower bound {_f(low)} ≥ the human ceiling {_f(ceiling)}"
    else:
        against = (
            f"and its interval [{_f(low)}, {_f(high)}] reaches the human ceiling {_f(ceiling)}"
        )
    return {
        "code": CAN,
        "text": f"can replace annotators for {aspect} here: {passes} {against}",
    }
