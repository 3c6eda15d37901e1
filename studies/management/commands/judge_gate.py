"""``python manage.py judge_gate --run ID --aspect CODE [--against RUN_ID]
[--min-lower-bound 0.4]``: re-validate a judge whenever its prompt or model changes.
Exits 1, printing why, when the judge's lower confidence bound of its correlation with
the humans is below the threshold or it is significantly below the accepted run (paired
bootstrap by document); exits 0 with a one-line reason otherwise; exits 2 naming the bad
argument."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.analysis.params import COEFFICIENT_NAMES
from studies.services.analysis.report_card.gate import ALPHA, GateError, judge_gate


class Command(BaseCommand):
    help = (
        "Fail (exit 1) when a judge run's lower confidence bound on an aspect is below a "
        "threshold or significantly below an accepted run."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, required=True, help="the judge run's id")
        parser.add_argument("--aspect", required=True, help="the aspect's code, e.g. COH")
        parser.add_argument(
            "--against", type=int, help="the accepted run's id (same dataset) to compare with"
        )
        parser.add_argument(
            "--min-lower-bound",
            type=float,
            help="the least lower confidence bound of the correlation that passes",
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
        try:
            result = judge_gate(
                opts["run"],
                opts["aspect"],
                against=opts["against"],
                min_lower_bound=opts["min_lower_bound"],
                level=opts["level"],
                coefficient=opts["coef"],
                confidence=opts["confidence"],
                alpha=opts["alpha"],
                resamples=opts["resamples"],
                seed=opts["seed"],
            )
        except GateError as exc:
            raise CommandError(f"{exc.argument}: {exc}", returncode=2) from exc
        self.stdout.write(result.summary)
        for reason in result.reasons:
            self.stdout.write(f"  - {reason}")
        if not result.passed:
            raise CommandError(
                f"the judge gate failed for run {opts['run']} on {opts['aspect']}", returncode=1
            )
