"""``python manage.py jury --runs ID,ID,ID --aspect X --method
mean|median|majority|weighted|dawid-skene [--study ID]``: combine finished runs of one
dataset into a new run and print its id. ``weighted`` weighs each run by its agreement
with the humans on the study's tune documents (``--study`` where several studies of the
dataset have a split)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.stats.jury import METHODS
from studies.models import MetricRun
from studies.services.tuning.jury import JuryError, make_jury
from studies.services.tuning.lookup import aspect_and_study
from studies.services.tuning.splits import SplitError


class Command(BaseCommand):
    help = "Combine several metric runs into one jury run; prints the new run's id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="run ids, comma-separated")
        parser.add_argument("--aspect", required=True, help="the aspect (code, name or key)")
        parser.add_argument("--method", required=True, choices=METHODS)
        parser.add_argument("--study", type=int, help="the study whose split weighs the runs")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            ids = [int(part) for part in opts["runs"].split(",") if part.strip()]
        except ValueError as exc:
            raise CommandError(f"--runs: not a list of ids: {opts['runs']!r}") from exc
        first = MetricRun.objects.select_related("dataset__owner").filter(pk__in=ids).first()
        if first is None:
            raise CommandError(f"--runs: no run {opts['runs']}")
        try:
            aspect, study = aspect_and_study(first.dataset.owner, opts["aspect"], opts["study"])
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        try:
            run = make_jury(ids, aspect, opts["method"], study=study)
        except (JuryError, SplitError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(str(run.pk))
