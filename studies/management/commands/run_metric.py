"""``python manage.py run_metric --dataset summeval --metric gptscore --aspect coherence
--setting IST --dimension src-hypo --model default [--limit-docs N]``; also
``--metric geval`` (with ``--steps``, ``--weighting``, ``--estimation``), ``--metric
pairwise`` (with ``--pairs``, ``--pairs-per-doc``, ``--campaign``, ``--ties``) and the baselines
``rouge`` (three runs: ROUGE-1, -2, -L), ``rouge1``, ``rouge2``, ``rougeL``, ``bleu``,
``chrf``, ``bertscore``, the sentinels ``length`` and ``random``; ``--metric learned
--model ID`` scores with a trained metric. ``--sentinels`` adds the three sentinel
baselines (length, random with ``--seed``, a source-free GPTScore for ``--aspect``) that
the dataset lacks, as the correlations page's button does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.lm.precision import PRECISIONS
from scoring.lm.served.batch import FORMATS
from scoring.lm.store import ModelNotInstalled
from studies.models import MetricRun
from studies.services.analysis.sentinels import add_sentinels
from studies.services.lookup import DatasetNotFound, find_dataset
from studies.services.runs import (
    METRIC_GROUPS,
    METRICS,
    RunError,
    RunRequest,
    execute_run,
    held_out_docs,
    per_aspect_metrics,
    resume_run,
    save_lines,
    start_runs,
    write_requests,
)


class Command(BaseCommand):
    help = "Start a metric run: scored here by default, or by the workers with --enqueue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="id, owner/name, or a name only one owner uses")
        parser.add_argument(
            "--metric", default=RunRequest.metric, choices=[*METRICS, *METRIC_GROUPS]
        )
        parser.add_argument("--aspect", help="aspect code or name, e.g. coherence or COH")
        parser.add_argument("--setting", default="IST", choices=["VAL", "IST", "IDM"])
        parser.add_argument(
            "--dimension",
            default="src-hypo",
            choices=["src-hypo", "ref-hypo", "hypo-ref", "avg-f", "hypo"],
            help="hypo: the source-free GPTScore (a sentinel)",
        )
        parser.add_argument(
            "--model",
            default="default",
            help="'default', an installed model's folder name, an allowed hub id, or (the "
            "shell only) any local path or hub id; --metric learned: the trained metric's id",
        )
        parser.add_argument(
            "--endpoint",
            default="",
            help="GPTScore, G-Eval: score on this served endpoint (manage.py endpoint list) "
            "instead of a local model",
        )
        parser.add_argument(
            "--cost-cap", type=float, help="with --endpoint: stop before spending more than this"
        )
        parser.add_argument("--k", type=int, default=2, help="demonstrations for IDM")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--reduction", default="mean", choices=["mean", "sum"])
        parser.add_argument(
            "--references",
            default="",
            choices=["", "max", "mean"],
            help="how to aggregate several references (default: max for "
            "GPTScore and BERTScore, mean for ROUGE)",
        )
        parser.add_argument(
            "--steps",
            default="auto",
            choices=["auto", "none"],
            help="G-Eval: generated evaluation steps, or none",
        )
        parser.add_argument(
            "--weighting",
            default="prob",
            choices=["prob", "argmax"],
            help="G-Eval: probability-weighted score or the argmax label",
        )
        parser.add_argument(
            "--estimation",
            default="probs",
            choices=["probs", "sampled"],
            help="G-Eval: read probabilities, or sample n answers",
        )
        parser.add_argument(
            "--require-exact-labels",
            action="store_true",
            help="G-Eval on an endpoint: refuse the run before it starts unless the endpoint "
            "gives every rating label's probability exactly (not only its top-k candidates)",
        )
        parser.add_argument(
            "--samples", type=int, default=20, help="G-Eval, pairwise judge sampled: n"
        )
        parser.add_argument(
            "--pairs",
            default=RunRequest.pairs,
            choices=["all", "k", "campaign"],
            help="pairwise judge: all pairs within each document, --pairs-per-doc seeded "
            "pairs per document (--seed), or the pairs of pairwise --campaign",
        )
        parser.add_argument("--pairs-per-doc", type=int, default=RunRequest.pairs_per_doc)
        parser.add_argument("--campaign", type=int, help="pairwise judge: a pairwise campaign")
        parser.add_argument("--ties", action="store_true", help="pairwise judge: allow a tie")
        parser.add_argument("--layer", type=int, help="BERTScore: encoder layer (default last)")
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument(
            "--precision",
            choices=PRECISIONS,
            default="auto",
            help="GPTScore, G-Eval: exact (float32), fast (bf16 on a GPU) or auto "
            "(exact under 1B parameters or on the CPU)",
        )
        parser.add_argument("--limit-docs", type=int, help="only the first N documents (by key)")
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
        request = RunRequest(
            aspect=opts["aspect"] or "",
            metric=opts["metric"],
            setting=opts["setting"],
            dimension=opts["dimension"],
            model=opts["model"],
            k=opts["k"],
            seed=opts["seed"],
            reduction=opts["reduction"],
            reference_aggregation=opts["references"],
            batch_size=opts["batch_size"],
            limit_docs=opts["limit_docs"],
            steps=opts["steps"],
            weighting=opts["weighting"],
            estimation=opts["estimation"],
            n_samples=opts["samples"],
            layer=opts["layer"],
            precision=opts["precision"],
            endpoint=opts["endpoint"],
            cost_cap=opts["cost_cap"],
            require_exact_labels=opts["require_exact_labels"],
            doc_keys=self.test_docs(opts["test_docs_of"], dataset.name),
            pairs=opts["pairs"],
            pairs_per_doc=opts["pairs_per_doc"],
            campaign=opts["campaign"],
            ties=opts["ties"],
        )
        try:
            # the operator's shell may name any local path; web requests may not
            return start_runs(dataset, request, enqueue=opts["enqueue"], local_paths=True)
        except (RunError, ModelNotInstalled) as exc:
            raise CommandError(str(exc)) from exc
