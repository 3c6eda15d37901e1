"""``python manage.py load_benchmark --list``: the benchmarks Concordia can load, with
their licences and pinned releases.

``load_benchmark NAME [--from PATH] [--revision REV] [--accept-licence] [--option K=V]
--write DIR`` converts a benchmark (files already downloaded at ``--from``, else fetched at
its pinned revision into the data folder) to ``DIR/NAME.jsonl``, ``DIR/NAME_pairs.jsonl``
and ``DIR/NAME.meta.json`` (aspects, licence, citation, provenance), which
``import_records`` reads. ``--into DATASET [--owner USER]`` imports it straight into a
dataset through the validating import (per-annotator judgments, pairs, the aspects with
their definitions), recording the licence and citation on the dataset.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.imports import ImportOptions, ImportValidationError
from studies.services.imports.converted import load_benchmark
from studies.services.sources import (
    BENCHMARKS,
    LicenceNotAccepted,
    SourceError,
    catalogue,
    convert,
    write_jsonl,
)


class Command(BaseCommand):
    help = "List the loadable benchmarks with their licences, or convert one to import files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "name", nargs="?", choices=sorted(BENCHMARKS), help="benchmark to convert"
        )
        parser.add_argument("--list", action="store_true", help="list the benchmarks and licences")
        parser.add_argument("--from", dest="source", type=Path, help="already-downloaded files")
        parser.add_argument("--revision", help="release revision (default: the pinned one)")
        parser.add_argument(
            "--accept-licence", action="store_true", help="accept a non-commercial licence"
        )
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a loader option (repeatable), e.g. subset=personachat",
        )
        parser.add_argument(
            "--write", type=Path, metavar="DIR", help="folder for the converted files"
        )
        parser.add_argument("--into", metavar="DATASET", help="import into this dataset")
        parser.add_argument("--owner", help="username: the dataset is this user's")
        parser.add_argument("--task", help="task kind code (default: the benchmark's)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["list"] or not opts["name"]:
            self.list()
            return
        if opts["write"] is None and not opts["into"]:
            raise CommandError("give --into DATASET (import) or --write DIR (convert only)")
        options = {}
        for item in opts["option"]:
            key, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--option {item!r}: write KEY=VALUE")
            options[key.strip()] = value.strip()
        name = opts["name"]
        if opts["into"]:
            self.load(name, opts, options)
            return
        try:
            dataset = convert(
                name,
                opts["source"],
                accept_licence=opts["accept_licence"],
                revision=opts["revision"],
                cache_dir=settings.DATA_DIR / "benchmarks",
                **options,
            )
            folder: Path = opts["write"]
            folder.mkdir(parents=True, exist_ok=True)
            records, pairs = write_jsonl(
                dataset, folder / f"{name}.jsonl", folder / f"{name}_pairs.jsonl"
            )
        except (LicenceNotAccepted, SourceError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        (folder / f"{name}.meta.json").write_text(
            json.dumps(dataset.metadata(), indent=2), encoding="utf-8"
        )
        self.stdout.write(
            self.style.SUCCESS(f"{name}: {records} records, {pairs} pairs in {folder}")
        )
        for note in dataset.notes:
            self.stdout.write(f"  {note}")

    def load(self, name: str, opts: dict[str, Any], loader_options: dict[str, str]) -> None:
        owner = None
        if opts["owner"]:
            owner = get_user_model().objects.filter(username=opts["owner"]).first()
            if owner is None:
                raise CommandError(f"no user named {opts['owner']!r}")
        options = ImportOptions(
            dataset=opts["into"],
            task=opts["task"] or BENCHMARKS[name].task,
            file_format="jsonl",
            file_name=f"{name}.jsonl",
            create_aspects=True,
            owner=owner,
        )
        try:
            summary = load_benchmark(
                name,
                options,
                source=opts["source"],
                revision=opts["revision"],
                accept_licence=opts["accept_licence"],
                loader_options=loader_options,
            )
        except LicenceNotAccepted as exc:
            raise CommandError(str(exc)) from exc
        except ImportValidationError as exc:
            raise CommandError(f"{name}: nothing was imported.\n{exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"{name}: {summary.records} records into {summary.dataset}: "
                f"documents {summary.documents}, outputs {summary.outputs}, "
                f"judgments {summary.judgments}, pairwise judgments {summary.pairwise_judgments}"
            )
        )
        self.stdout.write(f"  licence: {BENCHMARKS[name].licence.describe()}")
        for note in summary.notes + summary.scales:
            self.stdout.write(f"  {note}")

    def list(self) -> None:
        rows = catalogue()
        width = max(len(row["name"]) for row in rows)
        for row in rows:
            self.stdout.write(f"{row['name']:<{width}}  {row['title']}")
            self.stdout.write(
                f"{'':<{width}}  licence: {row['licence']}"
                + (f" [{row['accept']}]" if row["accept"] else "")
            )
            self.stdout.write(f"{'':<{width}}  release: {row['release']}")
