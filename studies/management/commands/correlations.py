"""``python manage.py correlations --dataset NAME [--dataset NAME ...] --level sample
--coef spearman [--average macro|micro] [--tie-calibration] [--ci]
--format table|csv|json|latex``: the dashboard's matrix on the command line; with
several datasets, each one's matrix and the runs' rank averaged over aspects and
datasets (WMT's summary)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.stats import average_ranks
from studies.services.analysis import tables
from studies.services.analysis.dashboards import matrix_for
from studies.services.analysis.params import (
    AVERAGES,
    COEFFICIENT_NAMES,
    DEFAULT_MIN_COVERAGE,
    MatrixParams,
    parse_min_coverage,
)
from studies.services.lookup import DatasetNotFound, find_dataset

# The flag to change when a combination names no statistic.
FLAG_OF = {"coefficient": "--coef", "tie_calibration": "--tie-calibration", "average": "--average"}


class Command(BaseCommand):
    help = "Print how well each metric run correlates with the human judgments, per aspect."
    # its start-up is part of what a user waits for: no system checks (they import every
    # URL, view and API module of the site)
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset",
            required=True,
            action="append",
            help="id, owner/name, or a name only one owner uses; repeat it to average "
            "the runs' ranks over datasets (runs matched by label)",
        )
        parser.add_argument("--level", choices=("sample", "dataset", "system"), default="sample")
        parser.add_argument(
            "--coef",
            choices=sorted(COEFFICIENT_NAMES),
            default="spearman",
            help="acc23, kendall_23, kendall_like: sample or dataset level; spa: system level",
        )
        parser.add_argument(
            "--average",
            choices=AVERAGES,
            default="macro",
            help="sample level: documents count the same (macro) or by size (micro)",
        )
        parser.add_argument(
            "--tie-calibration",
            action="store_true",
            help="acc23, kendall_23: metric differences up to the ε that maximises the "
            "statistic count as ties (WMT24/25); each cell reports its ε",
        )
        parser.add_argument(
            "--ci", action="store_true", help="add 95%% bootstrap intervals and ranks"
        )
        parser.add_argument(
            "--min-coverage",
            type=float,
            default=DEFAULT_MIN_COVERAGE * 100,
            metavar="PERCENT",
            help="a run that scored less of a column's judged outputs is marked partial "
            "(~), not ranked and never best (default %(default)g)",
        )
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("table", "csv", "json", "latex"), default="table")

    def handle(self, *args: Any, **opts: Any) -> None:
        min_coverage = parse_min_coverage(opts["min_coverage"])
        if min_coverage is None:
            raise CommandError(
                f"--min-coverage: {opts['min_coverage']:g} is not a percentage from 0 to 100"
            )
        params = replace(
            MatrixParams(),
            level=opts["level"],
            coefficient=opts["coef"],
            ci=opts["ci"],
            resamples=opts["resamples"],
            seed=opts["seed"],
            average=opts["average"],
            tie_calibration=opts["tie_calibration"],
            min_coverage=min_coverage,
        )
        refusal = params.problem
        if refusal is not None:
            raise CommandError(f"{FLAG_OF[refusal.option]}: {refusal.message}")
        names = opts["dataset"]
        if len(names) > 1 and opts["format"] not in ("table", "json"):
            raise CommandError("--format csv or latex takes one --dataset")
        try:
            datasets = [find_dataset(name) for name in names]
        except DatasetNotFound as exc:
            raise CommandError(str(exc)) from exc
        results = [matrix_for(dataset, params) for dataset in datasets]
        render = {"csv": tables.to_csv, "json": tables.to_json, "latex": tables.to_latex}
        if len(results) == 1:
            if opts["format"] in render:
                self.stdout.write(render[opts["format"]](results[0]), ending="")
            else:
                self.stdout.write(self.text_table(results[0]))
            return
        ranks = overall_ranks(results)
        if opts["format"] == "json":
            combined = {"datasets": results, "average_rank": ranks}
            self.stdout.write(tables.to_json(combined) + "\n")
            return
        for dataset, result in zip(datasets, results, strict=True):
            self.stdout.write(f"== {dataset.name}\n" + self.text_table(result) + "\n")
        self.stdout.write(self.rank_table(ranks, ci=params.ci))

    @staticmethod
    def text_table(result: dict[str, Any]) -> str:
        codes = [c["aspect"]["code"] for c in result["columns"]]
        ci = result["params"]["ci"]
        lines = [
            f"{result['coefficient_label']}, {result['params']['level']}-level "
            f"({result['n_outputs']} outputs, {result['n_documents']} documents)"
        ]
        rows = tables.matrix_rows(result)
        texts = [[cell_text(cell, ci) for cell in row["cells"]] for row in rows]
        width = max([len(t) for row in texts for t in row] + [len(c) for c in codes] + [7]) + 2
        name_width = max([len(r["label"]) for r in rows] + [6]) + 2
        lines.append(
            "run".ljust(name_width)
            + "".join(c.rjust(width) for c in codes)
            + ("  avg rank" if ci else "")
        )
        for row, cells in zip(rows, texts, strict=True):
            rank = row["average_rank"]
            average = ("      —" if rank is None else f"{rank:7.2f}") if ci else ""
            lines.append(
                row["label"].ljust(name_width)
                + "".join(c.rjust(width) for c in cells)
                + (f"   {average}" if ci else "")
            )
        if result.get("ceiling"):  # one annotator against the others' mean, per aspect
            values = ["—" if c["value"] is None else f"{c['value']:.3f}" for c in result["ceiling"]]
            lines.append(
                "human ceiling".ljust(name_width) + "".join(v.rjust(width) for v in values)
            )
        lines.append(
            "(r): significance cluster (WMT's ranks: one-sided paired bootstrap, p <= 0.05); "
            "* significantly below the best run of its column"
            if ci
            else "(add --ci for intervals, significance marks and ranks)"
        )
        lines.append(
            f"~ partial: scored less than {result['params']['min_coverage']:.0%} of the "
            "judged outputs (not ranked, never best; compared on the outputs both scored)"
        )
        if result["params"].get("tie_calibration"):
            lines.append("ε: metric differences up to ε count as ties (tie calibration)")
        return "\n".join(lines) + "\n"

    @staticmethod
    def rank_table(ranks: dict[str, float], *, ci: bool) -> str:
        if not ci:
            return "(add --ci to rank the runs across datasets)\n"
        if not ranks:
            return "No run label is ranked in every dataset and aspect.\n"
        width = max(len(label) for label in ranks) + 2
        lines = ["Average rank across aspects and datasets (runs matched by label):"]
        lines += [f"{label.ljust(width)}{rank:7.2f}" for label, rank in ranks.items()]
        return "\n".join(lines) + "\n"


def cell_text(cell: dict[str, Any], ci: bool) -> str:
    """A cell as ``value [low, high] (rank) ε=… *``."""
    if cell["value"] is None:
        return "—"
    text = f"{cell['value']:.3f}"
    if ci and cell["low"] is not None:
        text += f" [{cell['low']:.3f}, {cell['high']:.3f}]"
    if cell.get("rank"):
        text += f" ({cell['rank']})"
    if cell.get("epsilon") is not None:
        text += f" ε={cell['epsilon']:.4g}"
    if cell["partial"]:
        text += f" ~{cell['coverage_outputs']}/{cell['judged_outputs']}"
    return text + ("*" if cell["below_best"] else " ")


def overall_ranks(results: list[dict[str, Any]]) -> dict[str, float]:
    """Runs (by label) ranked in every aspect of every matrix, with their mean rank over
    all those columns, best first (as WMT averages over tasks)."""
    columns = []
    for result in results:
        labels = [run["label"] for run in result["runs"]]
        for column in result["columns"]:
            columns.append(
                {label: cell["rank"] for label, cell in zip(labels, column["cells"], strict=True)}
            )
    return average_ranks(columns)
