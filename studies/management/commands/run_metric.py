"""``python manage.py run_metric --dataset summeval --metric gptscore --aspect coherence
--setting IST --dimension src-hypo --model default [--limit-docs N]``; also
``--metric geval`` (with ``--steps``, ``--weighting``, ``--estimation``), ``--metric
pairwise`` (with ``--pairs``, ``--pairs-per-doc``, ``--campaign``, ``--ties``) and the baselines
``rouge`` (three runs: ROUGE-1, -2, -L), ``rouge1``, ``rouge2``, ``rougeL``, ``bleu``,
``chrf``, ``bertscore``, the sentinels ``length`` and ``random``; ``--metric learned
--model ID`` scores with a trained metric. ``--sentinels`` adds the three sentinel
baselines (length, random with ``--seed``, a source-free GPTScore for ``--aspect``) that
the dataset lacks, as the correlations page's button does. The run options' flags
(``--setting`` … ``--layer``) are derived from the runners' declarations, with their help."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.served.batch import FORMATS
from scoring.lm.store import ModelNotInstalled
from studies.models import MetricRun
from studies.services.analysis.sentinels import add_sentinels
from studies.services.lookup import DatasetNotFound, find_dataset
from studies.services.options import Option
from studies.services.runs import (
    METRIC_GROUPS,
    METRICS,
    RunError,
    RunRequest,
    execute_run,
    held_out_docs,
    option_help,
    per_aspect_metrics,
    request_of,
    resume_run,
    run_options,
    save_lines,
    start_runs,
    write_requests,
)


def add_option(parser: CommandParser, option: Option) -> None:
    """A run option as the command's flag (its value lands under the flag's name, as
    ``call_command`` names it: ``samples``)."""
    common: dict[str, Any] = {"dest": dest(option), "help": option_help(option)}
    if option.type is bool:
        parser.add_argument(option.flag, action="store_true", **common)
        return
    spelled = (lambda v: v.replace("_", "-")) if option.dashed else (lambda v: v)
    choices = [spelled(c) for c in option.choices] or None
    default = spelled(option.default) if option.choices else option.default
    parser.add_argument(option.flag, type=option.type, choices=choices, default=default, **common)


def dest(option: Option) -> str:
    return option.flag.removeprefix("--").replace("-", "_")


def undashed(option: Option, value: Any) -> Any:
    """A flag's value as its option's (``src-hypo``: ``src_hypo``)."""
    return value.replace("-", "_") if option.dashed and isinstance(value, str) else value


class Command(BaseCommand):
    help = "Start a metric run: scored here by default, or by the workers with --enqueue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="id, owner/name, or a name only one owner uses")
        parser.add_argument(
            "--metric", default=RunRequest.metric, choices=[*METRICS, *METRIC_GROUPS]
        )
        parser.add_argument("--aspect", help="aspect code or name, e.g. coherence or COH")
        for option in run_options():  # each runner's declared options, every run's first
            add_option(parser, option)
        parser.add_argument(
            "--test-docs-of",
            type=int,
            metavar="ID",
            help="only the test documents of trained metric ID",
        )
        parser.add_argument("--enqueue", action="store_true", help="hand the run to the workers")
        parser.add_argument(
            "--batch-file",
            metavar="OUT.jsonl",
            help="with --endpoint: write the run's requests to this batch request file instead "
            "of sending them; the run waits for `manage.py batch_results RUN FILE`",
        )
        parser.add_argument(
            "--batch-format",
            default=FORMATS[0],
            choices=FORMATS,
            help="the batch file's format: openai-batch (a provider's Batch API) or "
            "vllm-batch (`vllm run-batch`, which answers chat completions only)",
        )
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="resume a stopped run")
        parser.add_argument(
            "--sentinels",
            action="store_true",
            help="add the sentinel baselines the dataset lacks (length, random "
            "with --seed, source-free GPTScore for --aspect, default the most "
            "judged, with --model, default that of the latest GPTScore run)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["resume"]:
            run = MetricRun.objects.filter(pk=opts["resume"]).first()
            if run is None or not resume_run(run, force=True, enqueue=opts["enqueue"]):
                raise CommandError(f"run {opts['resume']} cannot be resumed")
            runs = [run]
        elif opts["sentinels"]:
            runs = self.sentinels(opts)
        elif opts["batch_file"]:
            self.batch(opts)
            return
        else:
            runs = self.start(opts)
        if opts["enqueue"]:
            for run in runs:
                self.stdout.write(f"run {run.pk} ({run.label}) queued for the workers")
            return
        errors = []
        for run in runs:
            outcome = execute_run(run.pk)
            run.refresh_from_db()
            timings = run.timings or {}
            rate = f"{timings.get('outputs_per_s')} outputs/s"
            if timings.get("target_tokens"):
                rate += f", {timings.get('tokens_per_s')} tokens/s"
            self.stdout.write(
                f"run {run.pk} {run.label}: {outcome}, {run.done}/{run.total} outputs in "
                f"{timings.get('seconds', 0):.1f} s ({rate})"
            )
            if run.error:
                errors.append(run.error)
        if errors:
            raise CommandError("; ".join(errors))

    def batch(self, opts: dict[str, Any]) -> None:
        if not opts["endpoint"] or opts["enqueue"]:
            raise CommandError("--batch-file needs --endpoint (and no --enqueue)")
        runs = self.start({**opts, "enqueue": False})
        if len(runs) != 1:
            MetricRun.objects.filter(pk__in=[r.pk for r in runs]).delete()
            raise CommandError("--batch-file writes one run's requests: name one metric")
        try:
            report = write_requests(runs[0], opts["batch_format"])
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        save_lines(Path(opts["batch_file"]), report.lines)
        self.stdout.write(report.summary())

    def test_docs(self, trained_id: int | None, dataset: str) -> tuple[str, ...]:
        if trained_id is None:
            return ()
        docs = held_out_docs(trained_id, dataset)
        if not docs:
            raise CommandError(f"trained metric {trained_id} has no test documents in {dataset}")
        return docs

    def sentinels(self, opts: dict[str, Any]) -> list[MetricRun]:
        try:
            dataset = find_dataset(opts["dataset"] or "")
        except DatasetNotFound as exc:
            raise CommandError(str(exc)) from exc
        model = "" if opts["model"] == "default" else opts["model"]
        added = add_sentinels(
            dataset,
            aspect=opts["aspect"] or "",
            model=model,
            seed=opts["seed"],
            enqueue=opts["enqueue"],
            local_paths=True,
        )
        for run in added.existing:
            self.stdout.write(f"run {run.pk} ({run.label}) already there")
        for why in added.skipped:
            self.stderr.write(f"sentinel skipped: {why}")
        return added.created

    def start(self, opts: dict[str, Any]) -> list[MetricRun]:
        needs_aspect = opts["metric"] in per_aspect_metrics()
        if not opts["dataset"] or (needs_aspect and not opts["aspect"]):
            raise CommandError(
                f"--dataset is required, and --aspect for {' and '.join(per_aspect_metrics())}"
            )
        try:
            dataset = find_dataset(opts["dataset"])
        except DatasetNotFound as exc:
            raise CommandError(str(exc)) from exc
        values = {o.name: undashed(o, opts[dest(o)]) for o in run_options()}
        request = request_of(
            values,
            aspect=opts["aspect"] or "",
            metric=opts["metric"],
            doc_keys=self.test_docs(opts["test_docs_of"], dataset.name),
        )
        try:
            # the operator's shell may name any local path; web requests may not
            return start_runs(dataset, request, enqueue=opts["enqueue"], local_paths=True)
        except (RunError, ModelNotInstalled) as exc:
            raise CommandError(str(exc)) from exc
