"""``python manage.py tune_judge --run ID --aspect X --tuner NAME [--study ID] [tuner
options]``: tune a judge run on the study split's tune documents, save the tuned run and
print its id, then the test-split Δ of the primary statistic with its paired bootstrap
interval by document. Each tuner's options become flags here (``--method`` for
calibration; ``--k``, ``--selection``, ``--encoder`` for few-shot; ``--rounds``,
``--budget-requests``, ``--proposer-endpoint`` … for instructions; ``--gold humans|adjudicated``
for every tuner), from the tuner's own declaration. A tuner that prompts the judge again (few-shot, instructions) loads the
run's own model or endpoint.

It runs the worker's tuning job inline (:mod:`studies.services.tuning.job`): the tuned
run is saved PENDING, then filled here; a tuning that fails leaves it FAILED with its
error. ``--enqueue`` sends the job to a worker instead and prints the run's id only."""

from __future__ import annotations

import math
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.models import MetricRun
from studies.services.tuning.job import execute_tuning, recorded_delta, start_tuning
from studies.services.tuning.lookup import aspect_and_study
from studies.services.tuning.registry import names, tuner
from studies.services.tuning.types import COMMON_OPTIONS


class Command(BaseCommand):
    help = "Tune a judge run on tune documents; prints the new run's id and the test Δ."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, required=True, help="the judge run's id")
        parser.add_argument("--aspect", required=True, help="the aspect (code, name or key)")
        parser.add_argument("--tuner", required=True, choices=names())
        parser.add_argument("--study", type=int, help="the study whose split to use")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument(
            "--enqueue",
            action="store_true",
            help="send the tuning to a worker (the jobs page shows it) instead of running it here",
        )
        seen: set[str] = set()
        for name in names():
            for option in tuner(name).options:
                if option.name in seen:
                    continue
                seen.add(option.name)
                owner = "every tuner" if option in COMMON_OPTIONS else name
                parser.add_argument(
                    option.flag,
                    dest=f"tuner_{option.name}",
                    type=option.type,
                    choices=option.choices or None,
                    help=f"{owner}: {option.help} (default {option.default})",
                )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = MetricRun.objects.select_related("dataset__owner").filter(pk=opts["run"]).first()
        if run is None:
            raise CommandError(f"--run: no run {opts['run']}")
        try:
            aspect, study = aspect_and_study(run.dataset.owner, opts["aspect"], opts["study"])
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        chosen = tuner(opts["tuner"])
        given = {o.name: opts.get(f"tuner_{o.name}") for o in chosen.options}
        try:
            job = start_tuning(
                run,
                aspect,
                chosen.name,
                study=study,
                options={k: v for k, v in given.items() if v is not None},
                seed=opts["seed"],
                resamples=opts["resamples"],
                enqueue=opts["enqueue"],
            )
        except ValueError as exc:  # a SplitError, an option refused
            raise CommandError(str(exc)) from exc
        if opts["enqueue"]:
            self.stdout.write(str(job.pk))
            return
        execute_tuning(job.pk)
        job.refresh_from_db()
        if job.status != MetricRun.Status.SUCCEEDED:
            raise CommandError(f"run {job.pk} {job.status}: {job.error}")
        d, tune_value, gap = recorded_delta(job)
        level = int(round((1 - d.alpha) * 100))
        self.stdout.write(str(job.pk))
        self.stdout.write(
            f"test Δ {d.statistic}: {d.delta:+.4f} [{d.low:+.4f}, {d.high:+.4f}] ({level}% paired "
            f"bootstrap by document, {d.resamples} resamples; start {d.start:.4f} → tuned "
            f"{d.tuned:.4f} on {d.n_documents} test documents, {d.n_outputs} outputs; "
            f"tune {tune_value:.4f}, gap {gap:+.4f})"
        )
        if not math.isfinite(d.delta):
            self.stdout.write(
                "the Δ is undefined: a judge gives one score to every output of each test "
                "document (or the humans do), so the statistic has no value there"
            )
