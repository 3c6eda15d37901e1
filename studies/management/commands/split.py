"""``python manage.py split --study ID [--dev 0.2] [--test 0.4] [--seed N] [--aspect X]
[--force]``: split a study's documents into tune / (dev /) test, stratified by their mean
human score on the aspect (default: the most judged one), and print the parts' sizes. A
study's split is frozen: without ``--force`` a second call changes nothing and names
the runs that depend on it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.models import Study
from studies.services.lookup import aspect_names, find_aspect
from studies.services.tuning.splits import SplitError, counts, make_split


class Command(BaseCommand):
    help = "Split a study's documents into tune / dev / test (seeded, stratified, frozen)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id")
        parser.add_argument("--dev", type=float, default=0.0, help="share of dev documents")
        parser.add_argument("--test", type=float, default=0.4, help="share of test documents")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--aspect", help="the aspect to stratify by (code, name or key)")
        parser.add_argument(
            "--force", action="store_true", help="replace an existing (frozen) split"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = Study.objects.select_related("dataset").filter(pk=opts["study"]).first()
        if study is None:
            raise CommandError(f"--study: no study {opts['study']}")
        aspect = None
        if opts["aspect"]:
            aspect = find_aspect(aspect_names(study.owner), opts["aspect"])
            if aspect is None:
                raise CommandError(f"--aspect: no aspect {opts['aspect']!r}")
        try:
            split = make_split(
                study,
                dev=opts["dev"],
                test=opts["test"],
                seed=opts["seed"],
                aspect=aspect,
                force=opts["force"],
            )
        except SplitError as exc:
            raise CommandError(str(exc)) from exc
        sizes = ", ".join(f"{part} {n}" for part, n in counts(split).items())
        by = f"stratified by {split.stratified_by.code}" if split.stratified_by else "unstratified"
        self.stdout.write(f"split of study {study.pk} (seed {split.seed}, {by}): {sizes}")
