"""``python manage.py batch_results RUN results.jsonl [--requests NEXT.jsonl]``: read a
batch output file (a provider's batch job, or ``vllm run-batch -i OUT.jsonl -o
results.jsonl``) into a served run written with ``run_metric … --batch-file OUT.jsonl``.
Lines are matched by ``custom_id``; the finished outputs are stored, and the requests
the file lacked or held unusable are named (and written to ``--requests``, with any the
answers lead to, for the next batch). The run ends when nothing is outstanding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.served.batch import FORMATS
from studies.models import MetricRun
from studies.services.runs import RunError, read_answers, save_lines


class Command(BaseCommand):
    help = "Read a batch results file into a served run waiting for it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=int, help="the run's id")
        parser.add_argument("results", help="the batch output file (JSON lines)")
        parser.add_argument(
            "--requests",
            metavar="NEXT.jsonl",
            help="write the requests still outstanding here (the next batch)",
        )
        parser.add_argument(
            "--batch-format",
            choices=FORMATS,
            help="the results' format (default: the one the run's requests were written in)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = MetricRun.objects.select_related("dataset").filter(pk=opts["run"]).first()
        if run is None:
            raise CommandError(f"no run {opts['run']}")
        results = Path(opts["results"])
        if not results.is_file():
            raise CommandError(f"no results file at {results}")
        requests = Path(opts["requests"]) if opts["requests"] else None
        try:
            with results.open(encoding="utf-8", errors="replace") as lines:
                report = read_answers(
                    run, lines, write=requests is not None, fmt=opts["batch_format"]
                )
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        if requests is not None:
            save_lines(requests, report.lines)
        self.stdout.write(report.summary())
        if report.outstanding and not requests:
            raise CommandError(
                f"{len(report.outstanding)} requests are outstanding; the run waits "
                "(--requests NEXT.jsonl writes them for the next batch)"
            )
