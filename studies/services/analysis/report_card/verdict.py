"""A report card row's plain-language verdict: can this judge replace the annotators, for
this aspect, on this data?

The alternative-annotator test decides (on a label aspect with AltTest's accuracy
scoring) (Calderon, Reichart & Dror 2025: the judge
passes when it wins against at least half of the annotators at the margin ε); the card
adds two checks the test does not make:

* ``cannot``: the test ran and the judge failed it; or it passed but its correlation is
  not significantly above a sentinel baseline (length, random, a source-free GPTScore),
  so its agreement may come from what the sentinel measures;
The statistic compared with the human ceiling is the row's primary one, which the
report card's pieces give by aspect kind (:func:`.pieces.registry.primary_of`): the
correlation on a scale aspect, MCC on a binary one, Cohen's κ on a categorical one.

* ``unclear``: the test could not run (fewer than three annotators on enough items: the
  row says what is missing), or no output was both scored and judged; or the judge
  passed but its correlation's upper bound stays below the human ceiling (one
  annotator's agreement with the others: the judge orders the outputs worse than an
  annotator would);
* ``can``: it passed, and its interval reaches the human ceiling (or there is no ceiling
  to compare with: fewer than two annotators overlap).

What the pieces add to any verdict follows it (:func:`.pieces.registry.caveats`: a
pairwise judge's significant first-position preference).
"""

from __future__ import annotations

from typing import Any

from studies.services.analysis.report_card.pieces.registry import caveats, primary_of

CAN, CANNOT, UNCLEAR = "can", "cannot", "unclear"


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def verdict(row: dict[str, Any], statistic: str) -> dict[str, str]:
    """``{"code": can | cannot | unclear, "text": …}`` for a row (see the module's
    docstring); ``statistic`` names the correlation (“Spearman ρ, sample-level”); the
    pieces' caveats follow the text."""
    found = _verdict(row, statistic)
    for text in caveats(row):
        found["text"] += f"; {text}"
    return found


def _verdict(row: dict[str, Any], statistic: str) -> dict[str, str]:
    aspect = row["aspect"]["name"].lower()
    alt, sentinel = row["alt_test"], row["sentinel"]
    eps = f"ε={alt['epsilon']:g}"
    corr = primary_of(row, statistic)
    if corr is None or corr.value is None:
        why = (
            corr.reason
            if corr is not None and corr.reason
            else "no output is both scored by this judge and judged by the annotators"
        )
        return {"code": UNCLEAR, "text": f"cannot tell for {aspect} here: {why}"}
    ceiling, name = corr.ceiling, corr.name
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
    low, high = corr.low, corr.high
    if ceiling is not None and high is not None and high < ceiling:
        return {
            "code": UNCLEAR,
            "text": f"replace annotators for {aspect} with care: it {passes}, but its "
            f"{name} {_f(corr.value)} [{_f(low)}, {_f(high)}] stays below the "
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
