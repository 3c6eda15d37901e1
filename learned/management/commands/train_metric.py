"""``python manage.py train_metric --dataset NAME --aspect ASPECT [--setup single|multi|cross]
[--datasets A,B] [--backbone default|MODEL] [--mode head|full] [--margin 0.5]
[--max-minutes M] [--seed S] [--format text|json] [--enqueue]``"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from learned.models import TrainedMetric
from learned.services.data import TrainingError
from learned.services.jobs import POOLINGS, TrainingRequest, create_job
from learned.services.training import execute_job
from scoring.lm.store import ModelNotInstalled


class Command(BaseCommand):
    help = "Train a learned (HEAP-style) metric from a dataset's judgments."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="the target dataset")
        parser.add_argument("--aspect", required=True, help="the target aspect (code or name)")
        parser.add_argument("--setup", default="single", choices=["single", "multi", "cross"])
        parser.add_argument("--datasets", default="", help="multi/cross: more datasets, A,B")
        parser.add_argument(
            "--backbone",
            default="default",
            help="'default' (SmolLM2-135M-Instruct), 'minilm', a path or hub id",
        )
        parser.add_argument("--mode", default="head", choices=["head", "full"])
        parser.add_argument("--pooling", default="", choices=["", *POOLINGS])
        parser.add_argument(
            "--layer",
            type=int,
            help="features after the first N blocks (default: 40%% of a "
            "decoder's blocks in head mode, else all)",
        )
        parser.add_argument("--hidden", type=int, default=0, help="head: MLP units (0: linear)")
        parser.add_argument("--margin", type=float, default=0.5)
        parser.add_argument("--max-minutes", type=float, help="stop training after M minutes")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--learning-rate", type=float)
        parser.add_argument(
            "--exclude-flagged",
            action="store_true",
            help="leave out annotators flagged on gold items",
        )
        parser.add_argument("--format", default="text", choices=["text", "json"])
        parser.add_argument("--enqueue", action="store_true", help="hand the job to the workers")

    def handle(self, *args: Any, **opts: Any) -> None:
        started = time.perf_counter()
        request = TrainingRequest(
            dataset=opts["dataset"],
            aspect=opts["aspect"],
            setup=opts["setup"],
            datasets=tuple(d for d in opts["datasets"].split(",") if d),
            backbone=opts["backbone"],
            mode=opts["mode"],
            pooling=opts["pooling"],
            hidden=opts["hidden"],
            margin=opts["margin"],
            seed=opts["seed"],
            max_minutes=opts["max_minutes"],
            epochs=opts["epochs"],
            learning_rate=opts["learning_rate"],
            exclude_flagged=opts["exclude_flagged"],
            layer=opts["layer"],
        )
        try:
            job = create_job(request, enqueue=opts["enqueue"], local_paths=True)
        except (TrainingError, ModelNotInstalled) as exc:
            raise CommandError(str(exc)) from exc
        if opts["enqueue"]:
            self.stdout.write(f"training job {job.pk} ({job.label}) queued for the workers")
            return
        outcome = execute_job(job.pk)
        job.refresh_from_db()
        if job.status != TrainedMetric.Status.SUCCEEDED:
            raise CommandError(f"training job {job.pk} {outcome}: {job.error}")
        summary = {
            "model": job.pk,
            "label": job.label,
            "pairs": {k: job.pairs[k] for k in ("train", "validation", "test")},
            "test": {
                k: {m: job.results[k][m] for m in ("pairwise_accuracy", "spearman")}
                for k in ("base", "trained")
            },
            "best_epoch": job.results["best_epoch"],
            "epochs": len(job.curves),
            "checkpoint": job.checkpoint,
            "sha256": job.checkpoint_sha256,
            "seconds": round(time.perf_counter() - started, 1),
            "timings": job.progress.get("seconds", {}),
        }
        if opts["format"] == "json":
            self.stdout.write(json.dumps(summary))
            return
        t = summary["test"]
        self.stdout.write(
            f"trained metric {job.pk} ({job.label}): pairs {summary['pairs']}; test pairwise "
            f"accuracy {t['base']['pairwise_accuracy']:.3f} (Base) → {t['trained']['pairwise_accuracy']:.3f}, "
            f"sample-level Spearman {t['base']['spearman']:.3f} → {t['trained']['spearman']:.3f}; "
            f"{summary['seconds']} s. Score a dataset with it: "
            f"run_metric --dataset {job.dataset.name} --metric learned --model {job.pk}"
        )
