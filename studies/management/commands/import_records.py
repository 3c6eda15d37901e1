"""``python manage.py import_records FILE --dataset NAME --task summarization``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.datasets import ImportOptions, ImportValidationError, import_file
from studies.services.records import FORMATS, detect_format
from studies.services.scales import parse_ranges


class Command(BaseCommand):
    help = "Import a JSONL or CSV file of outputs with human and metric scores into a dataset."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--dataset", required=True, help="dataset name (created if new)")
        parser.add_argument("--task", required=True, help="task kind code, e.g. summarization")
        parser.add_argument("--format", choices=FORMATS, help="default: from the file name")
        parser.add_argument(
            "--create-aspects",
            action="store_true",
            help="create aspects for unknown human score names",
        )
        parser.add_argument(
            "--rescale",
            action="append",
            default=[],
            metavar="NAME=LOW:HIGH",
            help="map the file's NAME scores linearly from LOW..HIGH onto the aspect's "
            "scale (repeatable), e.g. informativeness=1:6",
        )
        parser.add_argument(
            "--widen-aspects",
            action="store_true",
            help="import scores outside an aspect's scale into a wider copy of the aspect "
            "(e.g. 'Informativeness 1–6') instead of rejecting the file",
        )
        parser.add_argument("--owner", help="username owning a new dataset")

    def handle(self, *args: Any, **opts: Any) -> None:
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            file_format = opts["format"] or detect_format(path.name)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        try:
            rescale = parse_ranges(opts["rescale"])
        except ValueError as exc:
            raise CommandError(f"--rescale {exc}") from exc
        owner = None
        if opts["owner"]:
            owner = get_user_model().objects.filter(username=opts["owner"]).first()
            if owner is None:
                raise CommandError(f"no user named {opts['owner']!r}")
        options = ImportOptions(
            dataset=opts["dataset"],
            task=opts["task"],
            file_format=file_format,
            file_name=path.name,
            create_aspects=opts["create_aspects"],
            owner=owner,
            rescale=rescale,
            widen_aspects=opts["widen_aspects"],
        )
        try:
            summary = import_file(path, options)
        except ImportValidationError as exc:
            raise CommandError(f"{path.name}: nothing was imported.\n{exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"{summary.records} records into {summary.dataset} in {summary.seconds:.1f} s: "
                f"documents {summary.documents}, outputs {summary.outputs}, "
                f"judgments {summary.judgments}, metric scores {summary.metric_scores}"
                + (f", new aspects {summary.aspects_created}" if summary.aspects_created else "")
            )
        )
        for line in summary.scales:
            self.stdout.write(f"  {line}")
