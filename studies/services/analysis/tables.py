"""Tables built from cached matrices: the overview rows, the GPTScore paper layout, the
G-Eval ρ/τ table, and their exports (CSV, JSON, LaTeX with booktabs)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np

from scoring.stats import Alternative, Coefficient, Level, Swap, permutation_test
from studies.models import Dataset
from studies.services.analysis.ceiling import csv_row
from studies.services.analysis.dashboards import frame_for, matrix_for
from studies.services.analysis.matrix import statistic_options
from studies.services.analysis.params import COEFFICIENT_LABELS, MatrixParams
from studies.services.csvfile import csv_text, number

SETTINGS = ("VAL", "IST", "IDM")


def run_label(run: dict[str, Any]) -> str:
    parts = [run["label"]]
    extra = [run[k] for k in ("model", "setting", "dimension") if run.get(k)]
    if extra and not all(e in run["label"] for e in extra):
        parts.append("(" + ", ".join(extra) + ")")
    return " ".join(parts)


def matrix_rows(result: dict[str, Any], sort_by: str | None = None) -> list[dict[str, Any]]:
    """One row per run with its cells in column order and its average rank over the
    aspects, optionally sorted by an aspect (``rank``: by average rank)."""
    rows = []
    average_rank = result.get("average_rank") or [None] * len(result["runs"])
    for i, run in enumerate(result["runs"]):
        cells = [column["cells"][i] for column in result["columns"]]
        rows.append(
            {
                "run": run,
                "label": run_label(run),
                "cells": cells,
                "average_rank": average_rank[i],
                "coverage": row_coverage(cells),
            }
        )
    codes = [c["aspect"]["code"] for c in result["columns"]]
    key, flipped = sort_key(sort_by)
    if key == "rank":
        sort_rows(rows, lambda r: r["average_rank"], best_high=False, flipped=flipped)
    elif key in codes:
        j = codes.index(key)
        sort_rows(rows, lambda r: r["cells"][j]["value"], best_high=True, flipped=flipped)
    rows.sort(key=lambda r: bool(r["run"].get("sentinel")))  # sentinels last, as a group
    return rows


def sort_key(sort_by: str | None) -> tuple[str, bool]:
    """A ``sort`` parameter as (column, flipped): ``COH`` sorts best first, ``-COH`` the
    other way (the pages' header links toggle between the two)."""
    raw = sort_by or ""
    return raw.removeprefix("-"), raw.startswith("-")


def toggled(sort_by: str | None, column: str) -> str:
    """The ``sort`` a column's header link asks for: that column best first, or flipped
    when it is already sorted best first."""
    key, flipped = sort_key(sort_by)
    return f"-{column}" if key == column and not flipped else column


def sort_rows(rows: list[dict[str, Any]], value: Any, *, best_high: bool, flipped: bool) -> None:
    """Sort in place by ``value(row)``, best first (``flipped``: worst first); rows
    without a value stay last either way."""
    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    present.sort(key=value, reverse=best_high != flipped)
    rows[:] = present + missing


def partial_note(run: dict[str, Any]) -> str:
    """How a run that has not scored every output is labelled in exports ("" otherwise)."""
    if not run.get("partial_run"):
        return ""
    return f"{run.get('status', '')}: {run.get('done', 0)} of {run.get('total', 0)} outputs"


def row_coverage(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A run's coverage for a one-line summary: its least covered aspect's numbers, and
    whether it is partial in any aspect (None without aspects)."""
    if not cells:
        return None
    least = min(cells, key=lambda c: c["coverage"])
    keys = (
        "coverage_outputs",
        "judged_outputs",
        "coverage_documents",
        "judged_documents",
        "coverage",
    )
    return {**{k: least[k] for k in keys}, "partial": any(c["partial"] for c in cells)}


def coverage_fields(cell: dict[str, Any]) -> list[Any]:
    """A cell's coverage columns for the CSV."""
    keys = ("coverage_outputs", "coverage_documents", "judged_outputs", "judged_documents")
    shared = cell["n_shared_with_best"]
    return [*(cell[k] for k in keys), int(cell["partial"]), "" if shared is None else shared]


def sentinel_fields(cell: dict[str, Any]) -> list[Any]:
    """The sentinel a metric does not beat significantly (its label) and that test's p."""
    failed = cell.get("fails_sentinel")
    return [failed["label"], number(failed["p"], 4)] if failed else ["", ""]


def fmt(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def to_csv(result: dict[str, Any], *, raw: bool = False) -> str:
    """The matrix as CSV, through the one CSV writer: text cells (labels, models, aspect
    codes) that a spreadsheet would run as formulas get a leading ``'`` unless ``raw``.
    Numbers are left alone."""
    header = ["run", "metric", "model", "setting", "dimension"]
    suffixes = [
        "",
        "_low",
        "_high",
        "_n",
        "_p_vs_best",
        "_rank",
        "_epsilon",
        "_coverage_outputs",
        "_coverage_documents",
        "_judged_outputs",
        "_judged_documents",
        "_partial",
        "_n_shared_with_best",
        "_not_above_sentinel",
        "_not_above_sentinel_p",
    ]
    for column in result["columns"]:
        header += [column["aspect"]["code"] + suffix for suffix in suffixes]
    trailing = ["sentinel", "partial_run", "average_rank"]
    rows: list[list[Any]] = [header + trailing]
    for row in matrix_rows(result):
        run = row["run"]
        line = [str(run[k] or "") for k in ("label", "metric", "model", "setting", "dimension")]
        for cell in row["cells"]:
            line += [
                number(cell["value"], 6),
                number(cell["low"], 6),
                number(cell["high"], 6),
                cell["n_outputs"],
                number(cell["p_vs_best"], 4),
                cell.get("rank") or "",
                number(cell.get("epsilon"), 6),
                *coverage_fields(cell),
                *sentinel_fields(cell),
            ]
        rows.append(
            [
                *line,
                "yes" if run.get("sentinel") else "",
                partial_note(run),
                number(row["average_rank"], 2),
            ]
        )
    if (ceiling := csv_row(result, len(suffixes), len(trailing))) is not None:  # the ceiling
        rows.append(ceiling)
    return csv_text(rows, raw=raw)


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False)


def tex_escape(text: str) -> str:
    for char, escaped in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
    ):
        text = text.replace(char, escaped)
    return text


LATEX_LEGEND = (
    r"\textbf{bold}: the best value of its column",
    r"$^\dagger$: significantly below the best (paired bootstrap, $p \le 0.05$)",
    r"(k): significance cluster k (1 = tied with the best)",
    r"$^{\approx S}$: not significantly above a sentinel baseline (length, random or "
    r"source-free GPTScore; one-sided paired test, p > 0.05)",
    r"$^{p}$: a partial run (cancelled, failed or still running): scored only some outputs",
    r"[low, high]: 95\% bootstrap confidence interval",
)


def latex_legend(marks: set[str]) -> list[str]:
    """Comment lines explaining the marks a LaTeX table uses (keys: bold, dagger, rank,
    sentinel, partial, ci), for a reader who gets the table without its page."""
    keys = ("bold", "dagger", "rank", "sentinel", "partial", "ci")
    lines = [f"% {text}" for key, text in zip(keys, LATEX_LEGEND, strict=True) if key in marks]
    return ["% Legend:", *lines] if lines else []


def to_latex(result: dict[str, Any], *, ci: bool = False) -> str:
    """A booktabs table: best value per column in bold, † where significantly below it,
    each value's significance cluster in parentheses and the average rank last; with
    ``ci``, each value's bootstrap interval [low, high]. A legend (LaTeX comments) follows
    for the marks the table uses."""
    params = result["params"]
    columns = result["columns"]
    ranked = any(a is not None for a in result.get("average_rank") or [])
    lines = [
        "% Concordia: " + f"{result['coefficient_label']}, {params['level']}-level, "
        f"{params['resamples'] if params['ci'] else 0} bootstrap resamples",
        r"\begin{tabular}{l" + "c" * (len(columns) + ranked) + "}",
        r"\toprule",
        "Metric & "
        + " & ".join(
            [
                *(tex_escape(c["aspect"]["code"]) for c in columns),
                *(["Avg. rank"] if ranked else []),
            ]
        )
        + r" \\",
        r"\midrule",
    ]
    marks: set[str] = set()
    for row in matrix_rows(result):
        cells = []
        for cell in row["cells"]:
            text = fmt(cell["value"])
            if cell.get("best") and text:
                text = rf"\textbf{{{text}}}"
                marks.add("bold")
            elif cell.get("below_best"):
                text += r"$^\dagger$"
                marks.add("dagger")
            if cell.get("fails_sentinel") and text:
                text += r"$^{\approx S}$"
                marks.add("sentinel")
            if cell.get("rank") and text:
                text += f" ({cell['rank']})"
                marks.add("rank")
            if ci and text and cell.get("low") is not None and cell.get("high") is not None:
                text += f" [{fmt(cell['low'], 2)}, {fmt(cell['high'], 2)}]"
                marks.add("ci")
            cells.append(text)
        if ranked:
            cells.append(fmt(row["average_rank"], 2))
        label = tex_escape(row["label"])
        if row["run"].get("partial_run"):
            label += r"$^{p}$"
            marks.add("partial")
        lines.append(label + " & " + " & ".join(cells) + r" \\")
    if result.get("ceiling"):  # one annotator against the others' mean, per aspect
        values = [fmt(c["value"]) or "--" for c in result["ceiling"]] + [""] * ranked
        lines += [r"\midrule", r"\textit{Human ceiling} & " + " & ".join(values) + r" \\"]
    lines += [r"\bottomrule", r"\end{tabular}", *latex_legend(marks), ""]
    return "\n".join(lines)


# --- paper layouts ----------------------------------------------------------------------


def gptscore_table(dataset: Dataset, params: MatrixParams, resamples: int = 1000) -> dict[str, Any]:
    """GPTScore's layout: aspects × (model × VAL/IST/IDM); † where IST beats VAL and ‡
    where IDM beats IST significantly (one-sided paired permutation, p < 0.05)."""
    result = matrix_for(dataset, params)
    runs = result["runs"]
    models = sorted({r["model"] for r in runs if r["setting"] in SETTINGS})
    frame = None
    rows = []
    for j, column in enumerate(result["columns"]):
        code = column["aspect"]["code"]
        row: dict[str, Any] = {"aspect": column["aspect"], "models": []}
        for model in models:
            picks = {s: _pick(runs, column["cells"], model, s, code) for s in SETTINGS}
            entries = {}
            for setting, pick in picks.items():
                entries[setting] = (
                    None
                    if pick is None
                    else {
                        "value": pick[1]["value"],
                        "mark": "",
                        "partial": pick[1]["partial"],
                        "low": pick[1].get("low"),
                        "high": pick[1].get("high"),
                        "coverage_outputs": pick[1]["coverage_outputs"],
                        "judged_outputs": pick[1]["judged_outputs"],
                    }
                )
            for better, worse, mark in (("IST", "VAL", "†"), ("IDM", "IST", "‡")):
                if picks[better] and picks[worse] and entries[better]["value"] is not None:
                    frame = frame or frame_for(dataset, params)
                    p = _one_sided_p(frame, params, picks[better][0], picks[worse][0], j, resamples)
                    if p < 0.05:
                        entries[better]["mark"] += mark
            row["models"].append({"model": model, "settings": entries})
        rows.append(row)
    return {
        "models": models,
        "rows": rows,
        "coefficient_label": result["coefficient_label"],
        "params": result["params"],
    }


def ranks_table(result: dict[str, Any], sort_by: str | None = None) -> dict[str, Any]:
    """WMT's summary: each run's significance cluster per aspect and its average rank,
    best first (runs ranked in every aspect; the others last, unranked); ``sort_by`` an
    aspect code or ``rank``, ``-`` first for the other way."""
    rows = [
        {
            "label": row["label"],
            "ranks": [c.get("rank") for c in row["cells"]],
            "average_rank": row["average_rank"],
            "coverage": row["coverage"],
            "partial_run": bool(row["run"].get("partial_run")),
        }
        for row in matrix_rows(result, sort_by or "rank")
    ]
    return {
        "aspects": [c["aspect"] for c in result["columns"]],
        "rows": rows,
        "ranked": any(r["average_rank"] is not None for r in rows),
        "coefficient_label": result["coefficient_label"],
    }


def _pick(
    runs: list[dict[str, Any]],
    cells: list[dict[str, Any]],
    model: str,
    setting: str,
    aspect_code: str,
) -> tuple[int, dict[str, Any]] | None:
    """The run of this model and setting for this aspect (VAL runs have no aspect)."""
    for k, run in enumerate(runs):
        if run["model"] == model and run["setting"] == setting:
            aspect = run.get("aspect") or ""
            if setting == "VAL" or aspect in ("", aspect_code):
                return k, cells[k]
    return None


def _one_sided_p(
    frame: Any, params: MatrixParams, better: int, worse: int, aspect: int, resamples: int
) -> float:
    """One-sided paired permutation p that run ``better`` beats run ``worse``. The
    permutation swaps z-scored scores, so acc23 and τ23 are tested with exact ties."""
    level = params.level_enum
    result = permutation_test(
        frame.metrics[:, better],
        frame.metrics[:, worse],
        frame.human[:, aspect],
        level=level,
        coefficient=params.coefficient_enum,
        rng=np.random.default_rng(params.seed),
        docs=frame.doc_codes,
        systems=frame.system_codes,
        resamples=resamples,
        alternative=Alternative.GREATER,
        swap=Swap.DOCUMENTS if level is Level.SAMPLE else None,
        average=params.average_enum,
        options=statistic_options(frame.aspects[aspect]),
    )
    return float(result.p_value)


def geval_table(
    dataset: Dataset, params: MatrixParams, sort_by: str | None = None
) -> dict[str, Any]:
    """G-Eval's layout: each run × aspect with Spearman ρ and Kendall τ at ``params.level``
    (ρ's bootstrap interval beside it); ``sort_by`` an aspect code sorts by its ρ, best
    first (``-`` first: the other way)."""
    classic = replace(params, tie_calibration=False)
    rho = matrix_for(dataset, replace(classic, coefficient="spearman"))
    tau = matrix_for(dataset, replace(classic, coefficient="kendall"))
    rows = []
    for i, run in enumerate(rho["runs"]):
        pairs = [
            (col_r["cells"][i]["value"], col_t["cells"][i]["value"])
            for col_r, col_t in zip(rho["columns"], tau["columns"], strict=True)
        ]
        cells = [column["cells"][i] for column in rho["columns"]]
        rows.append(
            {
                "label": run_label(run),
                "pairs": pairs,
                "coverage": row_coverage(cells),
                "cis": [(c.get("low"), c.get("high")) for c in cells],
                "partial_run": bool(run.get("partial_run")),
            }
        )
    codes = [c["aspect"]["code"] for c in rho["columns"]]
    key, flipped = sort_key(sort_by)
    if key in codes:
        j = codes.index(key)
        sort_rows(rows, lambda r: r["pairs"][j][0], best_high=True, flipped=flipped)
    return {
        "aspects": [c["aspect"] for c in rho["columns"]],
        "rows": rows,
        "labels": (
            COEFFICIENT_LABELS[Coefficient.SPEARMAN],
            COEFFICIENT_LABELS[Coefficient.KENDALL_B],
        ),
    }


# --- paper exports ----------------------------------------------------------------------

PAPER_TABLES = ("ranks", "gptscore", "geval")


def paper_table(
    dataset: Dataset, params: MatrixParams, which: str, sort_by: str | None = None
) -> dict[str, Any]:
    """One of the paper view's tables (``ranks``, ``gptscore``, ``geval``), as the page
    shows it (sorted as asked)."""
    if which == "ranks":
        return ranks_table(matrix_for(dataset, params), sort_by)
    if which == "gptscore":
        return gptscore_table(dataset, params)
    return geval_table(dataset, params, sort_by)


def paper_to_json(which: str, table: dict[str, Any]) -> str:
    return json.dumps({"table": which, **table}, indent=2, ensure_ascii=False, default=str)


def _paper_grid(which: str, table: dict[str, Any], ci: bool) -> tuple[list[str], list[list[Any]]]:
    """A paper table as a header and rows of (text, number or None) cells: what the CSV
    and LaTeX writers share. Marks stay with their values' columns as their own columns."""
    if which == "ranks":
        codes = [a["code"] for a in table["aspects"]]
        header = [
            "run",
            *codes,
            "average_rank",
            "coverage_outputs",
            "judged_outputs",
            "partial",
            "partial_run",
        ]
        rows = []
        for row in table["rows"]:
            c = row["coverage"] or {}
            rows.append(
                [
                    row["label"],
                    *row["ranks"],
                    row["average_rank"],
                    c.get("coverage_outputs"),
                    c.get("judged_outputs"),
                    int(bool(c.get("partial"))),
                    int(row["partial_run"]),
                ]
            )
        return header, rows
    if which == "gptscore":
        header = ["aspect"]
        for model in table["models"]:
            for setting in SETTINGS:
                header += [f"{model} {setting}", f"{model} {setting} mark"]
                if ci:
                    header += [f"{model} {setting} low", f"{model} {setting} high"]
        rows = []
        for row in table["rows"]:
            line: list[Any] = [row["aspect"]["code"]]
            for entry in row["models"]:
                for setting in SETTINGS:
                    e = entry["settings"].get(setting) or {}
                    line += [e.get("value"), e.get("mark", "")]
                    if ci:
                        line += [e.get("low"), e.get("high")]
            rows.append(line)
        return header, rows
    header = ["run"]
    for aspect in table["aspects"]:
        header += [f"{aspect['code']} rho", f"{aspect['code']} tau"]
        if ci:
            header += [f"{aspect['code']} rho low", f"{aspect['code']} rho high"]
    header += ["partial", "partial_run"]
    rows = []
    for row in table["rows"]:
        line = [row["label"]]
        for (rho, tau), (low, high) in zip(row["pairs"], row["cis"], strict=True):
            line += [rho, tau, *([low, high] if ci else [])]
        rows.append(
            [*line, int(bool((row["coverage"] or {}).get("partial"))), int(row["partial_run"])]
        )
    return header, rows


def paper_to_csv(which: str, table: dict[str, Any], *, raw: bool = False, ci: bool = True) -> str:
    """A paper table as CSV, through the one CSV writer: text cells that a spreadsheet
    would run as formulas get a leading ``'`` unless ``raw``."""
    header, rows = _paper_grid(which, table, ci)
    cells = [[number(v, 6) if isinstance(v, float) else v for v in row] for row in rows]
    return csv_text([header, *cells], raw=raw)


def paper_to_latex(which: str, table: dict[str, Any], *, ci: bool = False) -> str:
    """A paper table as a booktabs table with a legend of its marks (LaTeX comments);
    ``ci``: each value's bootstrap interval [low, high] beside it."""
    marks: set[str] = set()
    lines: list[str] = []
    if which == "ranks":
        codes = [a["code"] for a in table["aspects"]]
        lines += [
            f"% Concordia: significance clusters ({table['coefficient_label']})",
            r"\begin{tabular}{l" + "c" * (len(codes) + 1) + "}",
            r"\toprule",
            "Metric & " + " & ".join([*map(tex_escape, codes), "Avg. rank"]) + r" \\",
            r"\midrule",
        ]
        for row in table["rows"]:
            label = tex_escape(row["label"]) + (r"$^{p}$" if row["partial_run"] else "")
            marks |= {"partial"} if row["partial_run"] else set()
            cells = ["--" if r is None else str(r) for r in row["ranks"]]
            lines.append(" & ".join([label, *cells, fmt(row["average_rank"], 2) or "--"]) + r" \\")
        legend = ["% (k): significance cluster k of the column (1 = tied with the best)"]
    elif which == "gptscore":
        models = table["models"]
        lines += [
            f"% Concordia: GPTScore layout ({table['coefficient_label']})",
            r"\begin{tabular}{l" + "ccc" * len(models) + "}",
            r"\toprule",
            "Aspect & "
            + " & ".join(rf"\multicolumn{{3}}{{c}}{{{tex_escape(m)}}}" for m in models)
            + r" \\",
            " & " + " & ".join(["VAL & IST & IDM"] * len(models)) + r" \\",
            r"\midrule",
        ]
        for row in table["rows"]:
            cells = []
            for entry in row["models"]:
                for setting in SETTINGS:
                    e = entry["settings"].get(setting)
                    cells.append(
                        "--"
                        if not e or e["value"] is None
                        else _value_tex(e, e.get("mark", ""), ci, marks)
                    )
            lines.append(tex_escape(row["aspect"]["code"]) + " & " + " & ".join(cells) + r" \\")
        legend = [
            r"% $^\dagger$: IST significantly better than VAL; $^\ddagger$: IDM "
            r"significantly better than IST (one-sided paired permutation, p < 0.05)"
        ]
    else:
        aspects = table["aspects"]
        lines += [
            f"% Concordia: G-Eval layout ({table['labels'][0]}; {table['labels'][1]})",
            r"\begin{tabular}{l" + "cc" * len(aspects) + "}",
            r"\toprule",
            "Metric & "
            + " & ".join(rf"\multicolumn{{2}}{{c}}{{{tex_escape(a['name'])}}}" for a in aspects)
            + r" \\",
            " & " + " & ".join([r"$\rho$ & $\tau$"] * len(aspects)) + r" \\",
            r"\midrule",
        ]
        for row in table["rows"]:
            label = tex_escape(row["label"]) + (r"$^{p}$" if row["partial_run"] else "")
            marks |= {"partial"} if row["partial_run"] else set()
            cells = []
            for (rho, tau), (low, high) in zip(row["pairs"], row["cis"], strict=True):
                rho_cell = {"value": rho, "low": low, "high": high}
                cells += [
                    "--" if rho is None else _value_tex(rho_cell, "", ci, marks),
                    fmt(tau) or "--",
                ]
            lines.append(label + " & " + " & ".join(cells) + r" \\")
        legend = []
    lines += [r"\bottomrule", r"\end{tabular}", "% Legend:", *legend, *latex_legend(marks)[1:], ""]
    return "\n".join(lines)


def _value_tex(entry: dict[str, Any], mark: str, ci: bool, marks: set[str]) -> str:
    text = fmt(entry["value"])
    text += {"": "", "†": r"$^\dagger$", "‡": r"$^\ddagger$", "†‡": r"$^{\dagger\ddagger}$"}.get(
        mark, tex_escape(mark)
    )
    if ci and entry.get("low") is not None and entry.get("high") is not None:
        text += f" [{fmt(entry['low'], 2)}, {fmt(entry['high'], 2)}]"
        marks.add("ci")
    return text
