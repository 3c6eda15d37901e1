"""``python manage.py import_records FILE --dataset NAME --task summarization [--owner USER]``.

Dataset names are unique per owner. ``--dataset`` is a name (with ``--owner``: that
user's dataset, created if new), ``owner/name``, an existing dataset's id, or a name that
only one owner uses; a new name without ``--owner`` makes an unowned dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.imports import ImportOptions, ImportValidationError
from studies.services.imports.converted import CONCORDIA, IMPORT_FORMATS, import_any, is_adapter
from studies.services.imports.records import FORMATS, detect_format
from studies.services.imports.scales import parse_ranges
from studies.services.lookup import DatasetNotFound, find_dataset


class Command(BaseCommand):
    help = "Import a JSONL or CSV file of outputs with human and metric scores into a dataset."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--dataset",
            required=True,
            help="name (created if new), owner/name, or an existing dataset's id",
        )
        parser.add_argument("--task", required=True, help="task kind code, e.g. summarization")
        parser.add_argument(
            "--format",
            choices=sorted({*FORMATS, *IMPORT_FORMATS}),
            help="concordia (JSONL or CSV, told by the file name; the default), jsonl, csv, "
            "or a tool's export: label-studio, argilla, langfuse, langsmith, otel",
        )
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
        parser.add_argument("--owner", help="username: import into this user's dataset")

    def handle(self, *args: Any, **opts: Any) -> None:
        path: Path = opts["file"]
        if not path.exists():
            raise CommandError(f"{path}: no such file")
        try:
            given = opts["format"]
            if given and is_adapter(given):
                file_format = given  # an export (a file, or a folder of files)
            elif not path.is_file():
                raise ValueError(f"{path}: not a file")
            else:
                file_format = detect_format(path.name) if given in (None, CONCORDIA) else given
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        try:
            rescale = parse_ranges(opts["rescale"])
        except ValueError as exc:
            raise CommandError(f"--rescale {exc}") from exc
        name, owner = self.target(opts["dataset"], opts["owner"])
        options = ImportOptions(
            dataset=name,
            task=opts["task"],
            file_format=file_format,
            file_name=path.name,
            create_aspects=opts["create_aspects"],
            owner=owner,
            rescale=rescale,
            widen_aspects=opts["widen_aspects"],
        )
        try:
            summary = import_any(path, options)
        except ImportValidationError as exc:
            raise CommandError(f"{path.name}: nothing was imported.\n{exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"{summary.records} records into {summary.dataset} in {summary.seconds:.1f} s: "
                f"documents {summary.documents}, outputs {summary.outputs}, "
                f"judgments {summary.judgments}, metric scores {summary.metric_scores}"
                + (
                    f", pairwise judgments {summary.pairwise_judgments}"
                    if any(summary.pairwise_judgments.values())
                    else ""
                )
                + (f", new aspects {summary.aspects_created}" if summary.aspects_created else "")
            )
        )
        for line in summary.scales + summary.notes + summary.merged:
            self.stdout.write(f"  {line}")

    @staticmethod
    def target(ref: str, username: str | None) -> tuple[str, Any]:
        """(dataset name, owner) to import into."""
        users = get_user_model().objects
        if username:
            owner = users.filter(username=username).first()
            if owner is None:
                raise CommandError(f"no user named {username!r}")
            if "/" in ref or ref.isdigit():
                raise CommandError("with --owner, give --dataset as a plain name")
            return ref, owner
        try:
            dataset = find_dataset(ref)
        except DatasetNotFound as exc:
            if "/" in ref and not ref.startswith("-/"):  # owner/name of a new dataset
                owner_name, name = ref.split("/", 1)
                owner = users.filter(username=owner_name).first()
                if owner is None:
                    raise CommandError(f"no user named {owner_name!r}") from exc
                return name, owner
            if ref.isdigit() or exc.ambiguous:
                raise CommandError(str(exc)) from exc
            return ref.removeprefix("-/"), None  # a new unowned dataset
        return dataset.name, dataset.owner
