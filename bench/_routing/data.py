"""SummEval as the routing benchmark reads it: its outputs grouped by document, the
humans, and every score at hand (ROUGE-1, ROUGE-2, ROUGE-L, length and, from a file
written once by ``--write-gptscore``, GPTScore); the questions are pairs of them."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _common import SUMMEVAL

ASPECTS = ("coherence", "consistency", "fluency", "relevance")
# The questions the issue allows: (run A's key, run B's key) in ``Data.scores``, and names.
QUESTIONS = {
    "rouge2-rougeL": ("rouge2", "rougeL", "ROUGE-2", "ROUGE-L"),
    "gptscore-rouge2": ("gptscore", "rouge2", "GPTScore", "ROUGE-2"),
    "gptscore-rougeL": ("gptscore", "rougeL", "GPTScore", "ROUGE-L"),
}
# Third scores tried as proxy judges (a control variate for the per-document difference).
PROXIES = ("rouge1", "rouge2", "rougeL", "gptscore", "length")


@dataclass(frozen=True)
class Data:
    """Outputs grouped by document (codes 0..n-1), the question's two runs' scores (``a``,
    ``b``, named ``names``), the humans, and every score at hand (``scores``, by key)."""

    docs: np.ndarray
    a: np.ndarray
    b: np.ndarray
    human: dict[str, np.ndarray]
    records: list[dict[str, Any]]
    scores: dict[str, np.ndarray]
    names: tuple[str, str] = ("ROUGE-2", "ROUGE-L")
    keys: tuple[str, str] = ("rouge2", "rougeL")

    @property
    def proxies(self) -> list[str]:
        """The scores at hand other than the question's two runs."""
        return [key for key in PROXIES if key in self.scores and key not in self.keys]

    @property
    def n_docs(self) -> int:
        return int(self.docs.max()) + 1

    def asking(self, question: str) -> Data:
        """The same outputs with ``question``'s two runs as ``a`` and ``b``."""
        key_a, key_b, name_a, name_b = QUESTIONS[question]
        return replace(
            self,
            a=self.scores[key_a],
            b=self.scores[key_b],
            names=(name_a, name_b),
            keys=(key_a, key_b),
        )

    def take(self, picks: np.ndarray) -> Data:
        """A campaign of the documents ``picks`` (repeats allowed), renumbered."""
        index = [np.flatnonzero(self.docs == d) for d in picks]
        rows = np.concatenate(index)
        docs = np.concatenate([np.full(len(ix), k) for k, ix in enumerate(index)])
        return Data(
            docs,
            self.a[rows],
            self.b[rows],
            {k: v[rows] for k, v in self.human.items()},
            [],
            {k: v[rows] for k, v in self.scores.items()},
            self.names,
            self.keys,
        )


def load(gptscore_file: Path | None) -> Data:
    """SummEval with ROUGE-1, ROUGE-2, ROUGE-L, the outputs' length in words and, given a
    file written by ``--write-gptscore``, GPTScore."""
    from scoring.metrics import rouge
    from scoring.metrics.base import Item

    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    keys = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in records))}
    items = [
        Item(
            key=k,
            doc_key=r["doc_id"],
            source=r["source"],
            hypothesis=r["output"],
            references=tuple(r["references"]),
        )
        for k, r in enumerate(records)
    ]
    scores = {
        kind: np.array([s.value for s in rouge.score(items, kind)], dtype=float)
        for kind in ("rouge1", "rouge2", "rougeL")
    }
    scores["length"] = np.array([len(r["output"].split()) for r in records], dtype=float)
    if gptscore_file is not None:
        scores["gptscore"] = read_gptscore(gptscore_file, records)
    return Data(
        docs=np.array([keys[r["doc_id"]] for r in records]),
        a=scores["rouge2"],
        b=scores["rougeL"],
        human={x: np.array([r["human"][x] for r in records], dtype=float) for x in ASPECTS},
        records=records,
        scores=scores,
    )


# --- GPTScore, scored once and cached -------------------------------------------------------


def write_gptscore(path: Path, threads: int) -> None:
    """Score SummEval's 1,600 outputs with GPTScore as a run with the defaults would
    (default model, coherence, IST, src→hypo, mean log-probability) and write the scores
    to ``path`` with what produced them. Minutes of CPU: done once, read by ``--gptscore``."""
    import torch
    from _speed import MODEL, coherence_config

    from scoring.lm import HFLanguageModel
    from scoring.metrics import gptscore
    from scoring.metrics.gptscore import Item

    if not (MODEL / "config.json").is_file():
        sys.exit(f"no model at {MODEL}: run `python3 manage.py install_model` first")
    torch.set_num_threads(threads)
    config = coherence_config()  # the defaults' only summarization COH src→hypo: IST
    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    lm = HFLanguageModel(MODEL, device="cpu")
    items = [
        Item(
            key=(r["doc_id"], r["system_id"]),
            doc_key=r["doc_id"],
            source=r["source"],
            hypothesis=r["output"],
        )
        for r in records
    ]
    started = time.perf_counter()
    results = gptscore.score(lm, items, config)
    scores = [
        {"doc_id": i.key[0], "system_id": i.key[1], "value": r.value, "error": r.error}
        for i, r in zip(items, results, strict=True)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "metric": "gptscore",
                "model": MODEL.name,
                "aspect": "COH",
                "setting": "IST",
                "dimension": "src_hypo",
                "reduction": str(config.reduction),
                "template": config.template.text,
                "seconds": round(time.perf_counter() - started),
                "scores": scores,
            }
        )
    )
    print(f"GPTScore of {len(scores)} outputs written to {path}")


def read_gptscore(path: Path, records: list[dict[str, Any]]) -> np.ndarray:
    """The cached GPTScore of every SummEval output, in ``records``' order; stops if the
    file is absent or misses an output (never a silent fallback)."""
    if not path.is_file():
        sys.exit(f"no GPTScore cache at {path}: write it first with --write-gptscore {path}")
    cached = json.loads(path.read_text())
    found = {(s["doc_id"], s["system_id"]): s["value"] for s in cached["scores"]}
    missing = [r for r in records if found.get((r["doc_id"], r["system_id"])) is None]
    if missing:
        sys.exit(f"{path} has no GPTScore for {len(missing)} of {len(records)} outputs")
    print(
        f"GPTScore read from {path} ({cached['model']}, {cached['aspect']}, {cached['setting']}, "
        f"{cached['dimension']}, {cached['reduction']})"
    )
    return np.array([found[(r["doc_id"], r["system_id"])] for r in records], dtype=float)
