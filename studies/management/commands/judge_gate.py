"""``python manage.py judge_gate --run ID --aspect NAME [--against RUN_ID]
[--min-lower-bound 0.4] [--min-coverage 0.9]``: re-validate a judge whenever its prompt
or model changes. Exits 1, printing why, when the judge scored less than the share
``--min-coverage`` of the aspect's judged outputs, when its lower confidence bound of its
primary statistic is below the threshold (the correlation with the humans on a scale
aspect, MCC on a binary aspect, Cohen's κ on a categorical one: every line names it), or
when it is significantly below the accepted run (paired bootstrap by document; scale
aspects); exits 0 with a one-line reason
otherwise; exits 2 naming the bad argument. ``--aspect`` takes what imports take: the
aspect's code, name, key or an earlier name.

Made for CI: it runs no system checks (they import every URL, view and API module) and
imports no model library; ``bench/judge_gate_speed.py`` measures a call."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.analysis.params import COEFFICIENT_NAMES
from studies.services.analysis.report_card.gate import ALPHA, MIN_COVERAGE, GateError, judge_gate


class Command(BaseCommand):
    help = (
        "Fail (exit 1) when a judge run covers too little of an aspect's judged outputs, "
        "or its lower confidence bound there is below a threshold or significantly below "
        "an accepted run."
    )
    requires_system_checks: list[str] = []  # a CI gate: no URL and view imports

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, required=True, help="the judge run's id")
        parser.add_argument(
            "--aspect",
            required=True,
            help="the aspect as imports name it: its code, name or key (COH, coherence)",
        )
        parser.add_argument(
            "--against", type=int, help="the accepted run's id (same dataset) to compare with"
        )
        parser.add_argument(
            "--min-lower-bound",
            type=float,
            help="the least lower confidence bound that passes: of the correlation (scale "
            "aspects), MCC (binary), Cohen's κ (categorical)",
        )
        parser.add_argument(
            "--min-coverage",
            type=float,
            default=MIN_COVERAGE,
            help="the least share of the aspect's judged outputs the run must have scored "
            "(default %(default)g)",
        )
        parser.add_argument("--level", choices=("sample", "dataset", "system"), default="sample")
        parser.add_argument("--coef", choices=sorted(COEFFICIENT_NAMES), default="spearman")
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument(
            "--alpha",
            type=float,
            default=ALPHA,
            help="significance level of the comparison with --against (default %(default)g)",
        )
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **opts: Any) -> None:
        # a CI log shows the verdict alone (a first call writes the dataset's snapshot,
        # which a worker logs); --verbosity 2 shows the rest
        logging.disable(logging.INFO if opts["verbosity"] < 2 else logging.NOTSET)
        try:
            result = judge_gate(
                opts["run"],
                opts["aspect"],
                against=opts["against"],
                min_lower_bound=opts["min_lower_bound"],
                min_coverage=opts["min_coverage"],
                level=opts["level"],
                coefficient=opts["coef"],
                confidence=opts["confidence"],
                alpha=opts["alpha"],
                resamples=opts["resamples"],
                seed=opts["seed"],
            )
        except GateError as exc:
            raise CommandError(f"{exc.argument}: {exc}", returncode=2) from exc
        finally:
            logging.disable(logging.NOTSET)
        self.stdout.write(result.summary)
        for reason in result.reasons:
            self.stdout.write(f"  - {reason}")
        if not result.passed:
            raise CommandError(
                f"the judge gate failed for run {opts['run']} on {opts['aspect']}", returncode=1
            )
