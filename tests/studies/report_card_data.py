"""A small judged dataset for the report card's tests: three annotators judge every
output's coherence, one judges fluency; judges of known quality score it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from studies.models import (
    Aspect,
    Dataset,
    Document,
    Judgment,
    MetricRun,
    MetricScore,
    Output,
    TaskKind,
)
from tests.factories import MetricRunFactory, UserFactory, pairwise_judge_run

N_DOCS, N_SYSTEMS, N_SAMPLES = 8, 5, 10
SCALE = [1, 2, 3, 4, 5]


@dataclass
class Panel:
    dataset: Dataset
    mean: MetricRun  # the mean of the three annotators' answers
    noisy: MetricRun  # a random answer per output
    sampled: MetricRun  # a served G-Eval run sampling 10 answers per output
    variant: MetricRun  # the same G-Eval run with the next coherence definition
    rouge: MetricRun  # a reference-based baseline
    length: MetricRun  # a sentinel
    counts: np.ndarray  # the sampled run's answers per output and scale point


def geval_config(aspect_version: Any, **changes: Any) -> dict[str, Any]:
    config = {
        "metric": "geval",
        "model": "judge-model",
        "model_label": "judge-model",
        "aspect": "COH",
        "aspect_version": aspect_version.version,
        "aspect_definition": aspect_version.definition,
        "criteria": f"Coherence: {aspect_version.definition}",
        "scale": SCALE,
        "estimation": "sampled",
        "n_samples": N_SAMPLES,
        "weighting": "prob",
        "endpoint": {"id": 1, "name": "judge"},
        "batch_size": 8,
    }
    return {**config, **changes}


def build_panel(owner: Any, seed: int = 5) -> Panel:
    rng = np.random.default_rng(seed)
    dataset = Dataset.objects.create(
        name="panel", task=TaskKind.objects.get(code="summarization"), owner=owner
    )
    coh, flu = Aspect.objects.get(code="COH"), Aspect.objects.get(code="FLU")
    first = coh.current_version()
    coh.definition = coh.definition + " (second wording)"
    coh.save()
    second = coh.current_version()
    annotators = [UserFactory(username=f"rater{k}", role="annotator") for k in range(3)]
    mean = MetricRunFactory(dataset=dataset, label="mean judge", metric="mean", kind="imported")
    noisy = MetricRunFactory(dataset=dataset, label="noisy judge", metric="noisy", kind="imported")
    rouge = MetricRunFactory(dataset=dataset, label="rouge1", metric="rouge1", status="succeeded")
    length = MetricRunFactory(dataset=dataset, label="length", metric="length", status="succeeded")
    total = N_DOCS * N_SYSTEMS
    sampled = MetricRunFactory(
        dataset=dataset,
        label="geval:judge-model:COH:cot:prob:sampled",
        metric="geval",
        status="succeeded",
        config=geval_config(first),
        aspect_version=first,
        done=total,
        total=total,
        timings={"seconds": 80.0, "outputs_per_s": 0.5},
        usage={"requests": 40, "prompt_tokens": 30000, "completion_tokens": 2000, "cost": 0.8},
    )
    variant = MetricRunFactory(
        dataset=dataset,
        label="geval:judge-model:COH:cot:prob:sampled",
        metric="geval",
        status="succeeded",
        config=geval_config(second),
        aspect_version=second,
        done=total,
        total=total,
        timings={"seconds": 20.0},
    )
    counts = np.zeros((total, len(SCALE)))
    documents = Document.objects.bulk_create(
        Document(dataset=dataset, doc_key=f"doc{d}", source="S.", references=["R."])
        for d in range(N_DOCS)
    )
    words = rng.integers(3, 40, size=total)
    outputs = Output.objects.bulk_create(
        Output(
            document=documents[k // N_SYSTEMS],
            system_id=f"sys{k % N_SYSTEMS}",
            text=" ".join(["word"] * int(words[k])),
        )
        for k in range(total)
    )
    judgments, scores = [], []
    for k, output in enumerate(outputs):
        quality = rng.normal() + (k % N_SYSTEMS) * 0.5
        answers = np.clip(np.round(quality + rng.normal(0, 0.6, len(annotators)) + 3), 1, 5)
        judgments += [
            Judgment(output=output, aspect=coh, value=float(v), annotator=a)
            for a, v in zip(annotators, answers, strict=True)
        ]
        judgments.append(
            Judgment(
                output=output, aspect=flu, value=float(rng.integers(1, 6)), annotator=annotators[0]
            )
        )
        centre = float(np.clip(quality + 3, 1, 5))
        drawn = np.clip(np.round(centre + rng.normal(0, 0.8, N_SAMPLES)), 1, 5).astype(int)
        counts[k] = np.bincount(drawn - 1, minlength=len(SCALE))
        shares = counts[k] / N_SAMPLES
        details = {
            "distribution": {str(v): float(p) for v, p in zip(SCALE, shares, strict=True)},
            "sampled": True,
            "n_samples": N_SAMPLES,
            "n_unparsed": 0,
        }
        value = float(np.dot(shares, SCALE))
        scores += [
            MetricScore(run=mean, output=output, value=float(np.mean(answers))),
            MetricScore(run=noisy, output=output, value=float(rng.integers(1, 6))),
            MetricScore(run=rouge, output=output, value=float(rng.random())),
            MetricScore(run=length, output=output, value=float(words[k])),
            MetricScore(run=sampled, output=output, value=value, details=details),
            MetricScore(run=variant, output=output, value=value + float(rng.normal(0, 0.7))),
        ]
    Judgment.objects.bulk_create(judgments)
    MetricScore.objects.bulk_create(scores)
    dataset.refresh_from_db()
    return Panel(dataset, mean, noisy, sampled, variant, rouge, length, counts)


def add_pairwise_run(panel: Panel) -> MetricRun:
    """A pairwise judge of coherence over every pair of each document, in both orders:
    every other pair it answers by the annotators' mean (consistent: one verdict for the
    output shown first, one for the second), the others "the first one" whatever is
    shown (inconsistent: two verdicts for the first position). So 40 of its 80 pairs
    keep their verdict when swapped, and 120 of its 160 verdicts go to position A."""
    means = dict(panel.mean.scores.values_list("output_id", "value"))
    outputs = Output.objects.filter(document__dataset=panel.dataset).order_by("document", "pk")
    by_doc: dict[int, list[int]] = {}
    for output in outputs:
        by_doc.setdefault(output.document_id, []).append(output.pk)
    pairs = []
    k = 0
    for ids in by_doc.values():
        for i, first in enumerate(ids):
            for second in ids[i + 1 :]:
                if k % 2:  # by content
                    better = means[first] >= means[second]
                    ab, ba = ([0.9, 0.1], [0.1, 0.9]) if better else ([0.1, 0.9], [0.9, 0.1])
                else:  # by position
                    ab, ba = [0.8, 0.2], [0.8, 0.2]
                k += 1
                pairs.append((first, second, ab, ba))
    return pairwise_judge_run(panel.dataset, "COH", pairs)


def raw_answers(dataset, code: str):  # type: ignore[no-untyped-def]
    """Annotators × outputs (by id) and the outputs' documents, from the models."""
    outputs = list(
        Output.objects.filter(document__dataset=dataset).order_by("pk").select_related("document")
    )
    index = {o.pk: k for k, o in enumerate(outputs)}
    names = sorted(
        set(
            Judgment.objects.filter(
                output__document__dataset=dataset, aspect__code=code
            ).values_list("annotator__username", flat=True)
        )
    )
    answers = np.full((len(names), len(outputs)), np.nan)
    for j in Judgment.objects.filter(output__document__dataset=dataset, aspect__code=code):
        answers[names.index(j.annotator.username), index[j.output_id]] = j.value
    return answers, names, [o.document.doc_key for o in outputs], [o.pk for o in outputs]


def add_top_k_run(panel: Panel, bound: float, every: int = 1, label_mass: float = 0.6) -> MetricRun:
    """A served G-Eval run (probabilities) whose scores are the annotators' means, read
    as a distribution between the two scale points around each mean (its weighted score
    is the mean); on every ``every``-th output the other labels were outside the
    endpoint's top-k, each with ``bound`` as its bound (flagged), as
    :func:`scoring.metrics.geval.result` stores them."""
    coh = Aspect.objects.get(code="COH").current_version()
    outputs = list(Output.objects.filter(document__dataset=panel.dataset).order_by("pk"))
    run = MetricRunFactory(
        dataset=panel.dataset,
        label=f"geval:judge-model:COH:top-k:{bound:g}",
        metric="geval",
        status="succeeded",
        config=geval_config(coh, estimation="probs", n_samples=0),
        aspect_version=coh,
        done=len(outputs),
        total=len(outputs),
    )
    means = dict(panel.mean.scores.values_list("output_id", "value"))
    scores = []
    for k, output in enumerate(outputs):
        m = float(means[output.pk])
        low = min(int(np.floor(m)), SCALE[-2])
        probs = dict.fromkeys(SCALE, 0.0)
        probs[low], probs[low + 1] = low + 1 - m, m - low
        details: dict[str, Any] = {
            "distribution": {str(v): p for v, p in probs.items()},
            "weighted": m,
            "argmax": float(max(probs, key=probs.__getitem__)),
            "label_mass": label_mass,
            "sampled": False,
            "weighting": "prob",
            "label_mode": "top-k",
        }
        if k % every == 0:
            outside = {str(v): bound for v, p in probs.items() if p == 0.0}
            details |= {"outside_top_k": outside, "outside_bound": min(1.0, bound * len(outside))}
        scores.append(MetricScore(run=run, output=output, value=m, details=details))
    MetricScore.objects.bulk_create(scores)
    panel.dataset.bump_data_version()
    return run
