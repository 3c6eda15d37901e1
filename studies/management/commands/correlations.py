"""``python manage.py correlations --dataset NAME --level sample --coef spearman [--ci]
--format table|csv|json|latex``: the dashboard's matrix on the command line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services import tables
from studies.services.dashboards import COEFFICIENT_NAMES, MatrixParams, matrix_for
from studies.services.lookup import DatasetNotFound, find_dataset


class Command(BaseCommand):
    help = "Print how well each metric run correlates with the human judgments, per aspect."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset", required=True, help="id, owner/name, or a name only one owner uses"
        )
        parser.add_argument("--level", choices=("sample", "dataset", "system"), default="sample")
        parser.add_argument("--coef", choices=sorted(COEFFICIENT_NAMES), default="spearman")
        parser.add_argument("--ci", action="store_true", help="add 95%% bootstrap intervals")
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("table", "csv", "json", "latex"), default="table")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            dataset = find_dataset(opts["dataset"])
        except DatasetNotFound as exc:
            raise CommandError(str(exc)) from exc
        params = replace(
            MatrixParams(), level=opts["level"], coefficient=opts["coef"], ci=opts["ci"],
            resamples=opts["resamples"], seed=opts["seed"],
        )  # fmt: skip
        result = matrix_for(dataset, params)
        render = {"csv": tables.to_csv, "json": tables.to_json, "latex": tables.to_latex}
        if opts["format"] in render:
            self.stdout.write(render[opts["format"]](result), ending="")
        else:
            self.stdout.write(self.text_table(result))

    @staticmethod
    def text_table(result: dict[str, Any]) -> str:
        codes = [c["aspect"]["code"] for c in result["columns"]]
        ci = result["params"]["ci"]
        width = 24 if ci else 9
        lines = [f"{result['coefficient_label']}, {result['params']['level']}-level "
                 f"({result['n_outputs']} outputs, {result['n_documents']} documents)"]  # fmt: skip
        rows = tables.matrix_rows(result)
        name_width = max([len(r["label"]) for r in rows] + [6]) + 2
        lines.append("run".ljust(name_width) + "".join(c.rjust(width) for c in codes))
        for row in rows:
            cells = []
            for cell in row["cells"]:
                text = "—" if cell["value"] is None else f"{cell['value']:.3f}"
                if ci and cell["low"] is not None:
                    text += f" [{cell['low']:.3f}, {cell['high']:.3f}]"
                text += "*" if cell["below_best"] else " "
                cells.append(text.rjust(width))
            lines.append(row["label"].ljust(name_width) + "".join(cells))
        lines.append("* significantly below the best run of its column (paired bootstrap, p < 0.05)"
                     if ci else "(add --ci for intervals and significance marks)")  # fmt: skip
        return "\n".join(lines) + "\n"
