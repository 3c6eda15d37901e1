"""What the model speed benchmarks share: the SummEval workload, the default model and the
common options (imported by ``gptscore_speed.py`` and ``geval_speed.py``; the timer is
``_common.timed``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from _common import REPO, SUMMEVAL, need_summeval

MODEL = (
    Path(os.environ.get("CONCORDIA_MODEL_DIR") or REPO / "data" / "models")
    / "smollm2-135m-instruct"
)


def options(description: str) -> argparse.ArgumentParser:
    """The options every speed benchmark takes; a script may add its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    return parser


def prepare(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """Check the inputs, make the project importable, set torch's threads; return the
    project defaults and the first ``args.docs`` SummEval documents with their records."""
    need_summeval()
    if not (MODEL / "config.json").is_file():
        sys.exit(f"no model at {MODEL}: run `python3 manage.py install_model` first")
    sys.path.insert(0, str(REPO))
    import torch

    torch.set_num_threads(args.threads)
    defaults = json.loads((REPO / "studies" / "defaults" / "defaults.json").read_text())
    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    docs = list(dict.fromkeys(r["doc_id"] for r in records))[: args.docs]
    return defaults, docs, [r for r in records if r["doc_id"] in docs]


def coherence_config(defaults: dict[str, Any] | None = None) -> Any:
    """GPTScore's configuration the speed benchmarks score with: the project's default
    template for summarization, coherence, src→hypo."""
    from scoring.metrics.gptscore import GPTScoreConfig, Template

    if defaults is None:
        defaults = json.loads((REPO / "studies" / "defaults" / "defaults.json").read_text())
    row = next(
        t
        for t in defaults["templates"]
        if t["task"] == "summarization"
        and t["kind"] == "gptscore"
        and t["aspect"] == "COH"
        and t["dimension"] == "src_hypo"
    )
    return GPTScoreConfig(template=Template(row["text"], row["target"]))


def coherence_requests(defaults: dict[str, Any], records: list[dict[str, Any]]) -> list[Any]:
    """The GPTScore requests of ``records`` (SummEval lines) under :func:`coherence_config`."""
    from scoring.metrics.gptscore import Item, build_requests

    items = [
        Item(key=i, doc_key=r["doc_id"], source=r["source"], hypothesis=r["output"])
        for i, r in enumerate(records)
    ]
    return build_requests(items, coherence_config(defaults))
