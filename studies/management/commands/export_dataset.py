"""``python manage.py export_dataset DATASET --format jsonl|csv [-o FILE]``; DATASET is an
id, ``owner/name`` or a name only one owner uses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.imports import export_dataset
from studies.services.imports.records import FORMATS
from studies.services.lookup import DatasetNotFound, find_dataset


class Command(BaseCommand):
    help = "Export a dataset with its judgments and metric scores as JSONL or CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="id, owner/name, or a name only one owner uses")
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
        parser.add_argument(
            "--raw-csv",
            action="store_true",
            help="write CSV text cells as stored, without the ' that keeps spreadsheets "
            "from running cells starting with = + - @ tab or CR as formulas",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            dataset = find_dataset(opts["dataset"])
        except DatasetNotFound as exc:
            raise CommandError(str(exc)) from exc
        lines = export_dataset(dataset, opts["format"], raw=opts["raw_csv"])
        if opts["output"]:
            with opts["output"].open("w", encoding="utf-8", newline="") as fh:
                fh.writelines(lines)
        else:
            sys.stdout.writelines(lines)
