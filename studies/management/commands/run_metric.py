"""``python manage.py run_metric --dataset summeval --metric gptscore --aspect coherence
--setting IST --dimension src-hypo --model default [--limit-docs N]``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.store import ModelNotInstalled
from studies.models import Dataset, MetricRun
from studies.services.runs import RunError, RunRequest, execute_run, resume_run, start_run


class Command(BaseCommand):
    help = "Start a metric run: scored here by default, or by the workers with --enqueue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset")
        parser.add_argument("--metric", default="gptscore", choices=["gptscore"])
        parser.add_argument("--aspect", help="aspect code or name, e.g. coherence or COH")
        parser.add_argument("--setting", default="IST", choices=["VAL", "IST", "IDM"])
        parser.add_argument("--dimension", default="src-hypo",
                            choices=["src-hypo", "ref-hypo", "hypo-ref", "avg-f"])  # fmt: skip
        parser.add_argument(
            "--model", default="default", help="'default', a local path or a hub id"
        )
        parser.add_argument("--k", type=int, default=2, help="demonstrations for IDM")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--reduction", default="mean", choices=["mean", "sum"])
        parser.add_argument("--references", default="max", choices=["max", "mean"],
                            help="how to aggregate several references")  # fmt: skip
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--limit-docs", type=int, help="only the first N documents (by key)")
        parser.add_argument("--enqueue", action="store_true", help="hand the run to the workers")
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="resume a stopped run")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["resume"]:
            run = MetricRun.objects.filter(pk=opts["resume"]).first()
            if run is None or not resume_run(run, force=True, enqueue=opts["enqueue"]):
                raise CommandError(f"run {opts['resume']} cannot be resumed")
        else:
            run = self.start(opts)
        if opts["enqueue"]:
            self.stdout.write(f"run {run.pk} ({run.label}) queued for the workers")
            return
        outcome = execute_run(run.pk)
        run.refresh_from_db()
        timings = run.timings or {}
        self.stdout.write(
            f"run {run.pk} {run.label}: {outcome}, {run.done}/{run.total} outputs in "
            f"{timings.get('seconds', 0):.1f} s ({timings.get('outputs_per_s')} outputs/s, "
            f"{timings.get('tokens_per_s')} tokens/s)"
        )
        if run.error:
            raise CommandError(run.error)

    def start(self, opts: dict[str, Any]) -> MetricRun:
        if not opts["dataset"] or not opts["aspect"]:
            raise CommandError("--dataset and --aspect are required")
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        request = RunRequest(
            aspect=opts["aspect"], setting=opts["setting"], dimension=opts["dimension"], model=opts["model"],
            k=opts["k"], seed=opts["seed"], reduction=opts["reduction"],
            reference_aggregation=opts["references"], batch_size=opts["batch_size"],
            limit_docs=opts["limit_docs"],
        )  # fmt: skip
        try:
            return start_run(dataset, request, enqueue=opts["enqueue"])
        except (RunError, ModelNotInstalled) as exc:
            raise CommandError(str(exc)) from exc
