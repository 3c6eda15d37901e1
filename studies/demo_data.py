r"""Synthetic demo dataset for Concordia.

IMPORTANT: everything produced by this module is SYNTHETIC. The twelve news-style
source texts, their reference summaries and all system outputs were written by
the Concordia project itself (the stories, people, places and figures are
invented); the texts are data, in ``studies/defaults/demo_documents.json``. The
"systems" are not real summarisation models but *controlled
degradations* of a hand-written summary, and the "human" scores are NOT real
human judgments: they are simulated annotator ratings drawn from a seeded random
generator around a base score chosen to match the expected effect of each
degradation. The dataset exists only to demonstrate and test the app; it must
never be presented or analysed as evidence about real systems or real people.

Systems (``system_id``):

* ``faithful`` -- a hand-written, accurate 3-sentence summary.
* ``shuffled`` -- the faithful sentences in a different order (hurts coherence).
* ``dropped-facts`` -- a vague one-sentence summary without the key facts
  (hurts relevance).
* ``injected-errors`` -- the faithful summary with names, numbers or places
  swapped for wrong ones (hurts consistency).
* ``disfluent`` -- the faithful summary with dropped function words, repeated
  words and swapped word pairs (hurts fluency).
* ``lead-3`` -- the first three source sentences verbatim.

Each record has the JSONL layout used by the importer::

    {"doc_id": "demo-01", "system_id": "faithful", "source": "...",
     "references": ["..."], "output": "...",
     "human": {"coherence": 4.33, "consistency": 5.0, "fluency": 4.67,
               "relevance": 4.0},
     "metrics": {"unigram_f1": 0.61, "length_ratio": 0.9}}

Human scores are the mean of three simulated annotators (integers 1-5) rounded
to 2 decimals. Metrics are actually computed from the texts: ``unigram_f1`` is
the unigram-overlap F1 between the output and the best-matching reference and
``length_ratio`` is output words divided by words of the first reference, both
over lowercased ``\w+`` tokens and rounded to 4 decimals.

Everything is deterministic given ``seed``; the only randomness source is a
single ``random.Random(seed)``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ASPECTS",
    "NUM_ANNOTATORS",
    "SYSTEMS",
    "generate_demo_records",
    "load_demo_documents",
    "write_demo_jsonl",
]

#: Quality aspects rated by the simulated annotators, in output order.
ASPECTS: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")

#: System identifiers, in the order records are emitted for each document.
SYSTEMS: tuple[str, ...] = (
    "faithful",
    "shuffled",
    "dropped-facts",
    "injected-errors",
    "disfluent",
    "lead-3",
)

#: Number of simulated annotators averaged into each human score.
NUM_ANNOTATORS = 3

_MIN_SCORE = 1
_MAX_SCORE = 5

_TOKEN_RE = re.compile(r"\w+")

#: Lowercase function words the "disfluent" system may drop.
_FUNCTION_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "will",
        "be",
        "its",
        "their",
        "it",
        "that",
        "after",
        "so",
        "since",
        "about",
        "as",
    }
)


@dataclass(frozen=True)
class _Document:
    """One hand-written synthetic news item and its controlled outputs."""

    doc_id: str
    source: tuple[str, ...]
    references: tuple[str, ...]
    faithful: tuple[str, ...]
    vague: str
    errors: tuple[tuple[str, str], ...]


#: The hand-written documents, kept as data in ``studies/defaults/demo_documents.json``.
DOCUMENTS_FILE = Path(__file__).with_name("defaults") / "demo_documents.json"


def load_demo_documents(path: str | os.PathLike[str] | None = None) -> tuple[_Document, ...]:
    """Read the SYNTHETIC demo documents, in file order, from ``path`` (by default
    :data:`DOCUMENTS_FILE`)."""
    rows = json.loads(Path(path or DOCUMENTS_FILE).read_text(encoding="utf-8"))["documents"]
    return tuple(
        _Document(
            doc_id=row["doc_id"],
            source=tuple(row["source"]),
            references=tuple(row["references"]),
            faithful=tuple(row["faithful"]),
            vague=row["vague"],
            errors=tuple((right, wrong) for right, wrong in row["errors"]),
        )
        for row in rows
    )


# Base (expected) rating per system and aspect before noise. Systems whose
# effect depends on how strong the applied degradation was get their
# degraded aspect adjusted in ``_base_scores``.
_BASE_SCORES: dict[str, dict[str, float]] = {
    "faithful": {"coherence": 4.5, "consistency": 4.6, "fluency": 4.6, "relevance": 4.5},
    "shuffled": {"coherence": 2.2, "consistency": 4.3, "fluency": 4.2, "relevance": 4.1},
    "dropped-facts": {"coherence": 4.2, "consistency": 4.4, "fluency": 4.4, "relevance": 1.9},
    "injected-errors": {"coherence": 4.1, "consistency": 2.0, "fluency": 4.3, "relevance": 3.7},
    "disfluent": {"coherence": 2.9, "consistency": 4.0, "fluency": 2.0, "relevance": 3.6},
    "lead-3": {"coherence": 3.3, "consistency": 4.6, "fluency": 4.4, "relevance": 3.3},
}

_DOC_OFFSET_RANGE = 0.35  # per-document difficulty shift, uniform(-r, r)
_ANNOTATOR_BIAS_SD = 0.25  # per-annotator leniency, fixed across the dataset
_RATING_NOISE_SD = 0.45  # per-rating noise


# --------------------------------------------------------------------------
# Text utilities and metrics
# --------------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    r"""Return lowercased ``\w+`` word tokens of ``text``."""
    return _TOKEN_RE.findall(text.lower())


def _unigram_f1(output: str, reference: str) -> float:
    """Unigram-overlap F1 (clipped counts) between two texts."""
    out_counts = Counter(_tokens(output))
    ref_counts = Counter(_tokens(reference))
    overlap = sum((out_counts & ref_counts).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(out_counts.values())
    recall = overlap / sum(ref_counts.values())
    return 2 * precision * recall / (precision + recall)


def _compute_metrics(output: str, references: Sequence[str]) -> dict[str, float]:
    """Compute the automatic metrics for one output against its references."""
    best_f1 = max(_unigram_f1(output, ref) for ref in references)
    ref_len = len(_tokens(references[0]))
    length_ratio = len(_tokens(output)) / ref_len if ref_len else 0.0
    return {
        "unigram_f1": round(best_f1, 4),
        "length_ratio": round(length_ratio, 4),
    }


# --------------------------------------------------------------------------
# Controlled degradations
# --------------------------------------------------------------------------


def _shuffle_sentences(sentences: Sequence[str], rng: random.Random) -> tuple[list[str], bool]:
    """Reorder sentences with a non-identity permutation.

    Returns the reordered sentences and whether the opening sentence was moved
    away from the front (which damages coherence the most).
    """
    identity = tuple(range(len(sentences)))
    permutations = [p for p in itertools.permutations(identity) if p != identity]
    order = rng.choice(permutations)
    return [sentences[i] for i in order], order[0] != 0


def _inject_errors(
    sentences: Sequence[str],
    errors: Sequence[tuple[str, str]],
    rng: random.Random,
) -> tuple[str, int]:
    """Replace 2-3 randomly chosen facts with wrong ones.

    All chosen substitutions are applied simultaneously (whole-word matches)
    so a replacement can never be re-substituted. Returns the corrupted text
    and the number of substitutions used.
    """
    text = " ".join(sentences)
    count = rng.randint(2, min(3, len(errors)))
    chosen = dict(rng.sample(list(errors), count))
    pattern = re.compile(
        r"(?<!\w)(?:"
        + "|".join(re.escape(k) for k in sorted(chosen, key=len, reverse=True))
        + r")(?!\w)"
    )
    return pattern.sub(lambda m: chosen[m.group(0)], text), count


def _make_disfluent(sentences: Sequence[str], rng: random.Random) -> tuple[str, float]:
    """Damage grammar: drop function words, repeat words, swap word pairs.

    Returns the disfluent text and its severity, the fraction of original
    words that were dropped, repeated or moved.
    """
    out_sentences: list[str] = []
    total_words = 0
    damaged = 0
    for sentence in sentences:
        words = sentence.split()
        total_words += len(words)
        new_words: list[str] = []
        for index, word in enumerate(words):
            bare = word.lower().strip(",.")
            if index > 0 and bare in _FUNCTION_WORDS and rng.random() < 0.5:
                damaged += 1
                continue
            new_words.append(word)
            if rng.random() < 0.15:
                new_words.append(word.rstrip(",."))
                damaged += 1
        if len(new_words) > 3 and rng.random() < 0.6:
            i = rng.randrange(1, len(new_words) - 2)
            new_words[i], new_words[i + 1] = new_words[i + 1], new_words[i]
            damaged += 2
        out_sentences.append(" ".join(new_words))
    text = " ".join(out_sentences)
    if damaged == 0:  # guarantee a visible degradation
        first, _, rest = text.partition(" ")
        text = f"{first} {first} {rest}".strip()
        damaged = 1
    return text, damaged / max(total_words, 1)


# --------------------------------------------------------------------------
# Simulated annotators
# --------------------------------------------------------------------------


def _base_scores(system_id: str, severity: float) -> dict[str, float]:
    """Return the expected rating per aspect, adjusted by degradation severity.

    ``severity`` is system specific: 1.0 if the shuffle moved the opening
    sentence (0.0 otherwise), the number of injected errors, or the fraction
    of damaged words for the disfluent system. It is ignored otherwise.
    """
    base = dict(_BASE_SCORES[system_id])
    if system_id == "shuffled":
        base["coherence"] -= 0.4 * severity
    elif system_id == "injected-errors":
        base["consistency"] -= 0.4 * (severity - 2)
    elif system_id == "disfluent":
        base["fluency"] = max(1.3, base["fluency"] + 0.8 - 2.5 * severity)
    return base


def _simulate_human(
    base: dict[str, float],
    doc_offset: float,
    annotator_bias: Sequence[float],
    rng: random.Random,
) -> dict[str, float]:
    """Average three simulated integer ratings per aspect, rounded to 2 dp."""
    scores: dict[str, float] = {}
    for aspect in ASPECTS:
        ratings = []
        for bias in annotator_bias:
            raw = base[aspect] + doc_offset + bias + rng.gauss(0.0, _RATING_NOISE_SD)
            rating = math.floor(raw + 0.5)
            ratings.append(min(_MAX_SCORE, max(_MIN_SCORE, rating)))
        scores[aspect] = round(sum(ratings) / len(ratings), 2)
    return scores


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def generate_demo_records(seed: int = 0) -> list[dict[str, Any]]:
    """Generate the SYNTHETIC demo dataset: 12 documents x 6 systems = 72 records.

    Records are ordered by document (``demo-01`` .. ``demo-12``) and, within a
    document, by :data:`SYSTEMS`. The output is fully determined by ``seed``:
    it drives the shuffle order, which facts are corrupted, the disfluency
    edits and the simulated annotator ratings. The hand-written texts
    (``faithful``, ``dropped-facts`` and ``lead-3`` outputs, sources and
    references) are the same for every seed.
    """
    rng = random.Random(seed)
    annotator_bias = [rng.gauss(0.0, _ANNOTATOR_BIAS_SD) for _ in range(NUM_ANNOTATORS)]
    records: list[dict[str, Any]] = []
    for doc in load_demo_documents():
        doc_offset = rng.uniform(-_DOC_OFFSET_RANGE, _DOC_OFFSET_RANGE)

        shuffled, lead_moved = _shuffle_sentences(doc.faithful, rng)
        corrupted, n_errors = _inject_errors(doc.faithful, doc.errors, rng)
        disfluent, damage = _make_disfluent(doc.faithful, rng)
        outputs: dict[str, tuple[str, float]] = {
            "faithful": (" ".join(doc.faithful), 0.0),
            "shuffled": (" ".join(shuffled), 1.0 if lead_moved else 0.0),
            "dropped-facts": (doc.vague, 0.0),
            "injected-errors": (corrupted, float(n_errors)),
            "disfluent": (disfluent, damage),
            "lead-3": (" ".join(doc.source[:3]), 0.0),
        }

        source = " ".join(doc.source)
        references = list(doc.references)
        for system_id in SYSTEMS:
            output, severity = outputs[system_id]
            base = _base_scores(system_id, severity)
            records.append(
                {
                    "doc_id": doc.doc_id,
                    "system_id": system_id,
                    "source": source,
                    "references": list(references),
                    "output": output,
                    "human": _simulate_human(base, doc_offset, annotator_bias, rng),
                    "metrics": _compute_metrics(output, references),
                }
            )
    return records


def write_demo_jsonl(path: str | os.PathLike[str], seed: int = 0) -> int:
    """Write the SYNTHETIC demo records to ``path`` as UTF-8 JSONL.

    One JSON object per line. Returns the number of records written.
    """
    records = generate_demo_records(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)


def _main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: ``python -m studies.demo_data OUT.jsonl``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="output JSONL file")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    count = write_demo_jsonl(args.path, seed=args.seed)
    print(f"wrote {count} synthetic demo records to {args.path}")


if __name__ == "__main__":
    _main()
