"""factory_boy factories for the studies models."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, NamedTuple

import factory
import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from annotation.models import Campaign, Item, PairwiseJudgment
from scoring.lm.served import Capabilities
from studies import models
from studies.demo_data import write_demo_jsonl
from studies.services import adjudication
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, execute_run, start_run
from studies.services.tuning.splits import make_split


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw")

    @factory.post_generation
    def role(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        if create and extracted:
            self.groups.add(Group.objects.get_or_create(name=extracted)[0])


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")
    task = factory.LazyFunction(lambda: models.TaskKind.objects.get(code="summarization"))


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Document

    dataset = factory.SubFactory(DatasetFactory)
    doc_key = factory.Sequence(lambda n: f"doc-{n}")
    source = "A source text."
    references = factory.LazyFunction(lambda: ["A reference."])


class OutputFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Output

    document = factory.SubFactory(DocumentFactory)
    system_id = factory.Sequence(lambda n: f"sys-{n}")
    text = "An output."


class MetricRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.MetricRun

    dataset = factory.SubFactory(DatasetFactory)
    metric = "gptscore"
    label = factory.Sequence(lambda n: f"run-{n}")


def dataset_pk(name: str) -> int:
    """The id of the dataset of that name (dataset pages are addressed by id)."""
    return models.Dataset.objects.get(name=name).pk


def import_demo(owner: Any, folder: Path, name: str = "demo") -> models.Dataset:
    """The demo data (studies/demo_data.py) imported as ``owner``'s dataset ``name``."""
    path = folder / f"{name}.jsonl"
    write_demo_jsonl(path)
    return import_jsonl(path, name, owner)


def import_jsonl(path: Path, name: str, owner: Any) -> models.Dataset:
    """The summarization records of a .jsonl file imported as ``owner``'s dataset ``name``."""
    options = ImportOptions(
        dataset=name, task="summarization", file_format="jsonl", file_name=path.name, owner=owner
    )
    import_file(path, options)
    return models.Dataset.objects.get(name=name, owner=owner)


def probed_endpoint(endpoint: models.Endpoint, **found: Any) -> models.Endpoint:
    """Store probe findings on ``endpoint`` (as a probe would), without a server: by
    default what GPTScore needs (echo log-probabilities, the tokenizer check)."""
    found = {"echo_logprobs": True, "tokens_spell_text": True, **found}
    endpoint.capabilities = Capabilities(**found).as_dict()
    endpoint.probed_at = timezone.now()
    endpoint.save()
    return endpoint


def pairwise_judge_run(
    dataset: models.Dataset, aspect: str, pairs: list[tuple[int, int, list[float], list[float]]]
) -> models.MetricRun:
    """A finished pairwise judge run on ``aspect`` (a code) from its verdicts: per pair
    (first output id, second output id, the distribution with the first shown as A,
    the distribution with it shown as B), stored as :mod:`studies.services.runs.
    pairwise` stores them (on the first output, with the mean preference as value)."""
    outputs = {pk for first, second, _, _ in pairs for pk in (first, second)}
    run = MetricRunFactory(
        dataset=dataset,
        label=f"pairwise:judge-model:{aspect}:all",
        metric="pairwise",
        status="succeeded",
        config={"aspect": aspect, "ties": False, "model_label": "judge-model"},
        done=len(outputs),
        total=len(outputs),
        aspect_version=next(
            (a.current_version() for a in models.Aspect.objects.filter(code=aspect)[:1]), None
        ),
    )
    details: dict[int, list[dict[str, Any]]] = {}
    preference: dict[int, list[float]] = {}
    for first, second, ab, ba in pairs:
        details.setdefault(first, []).append({"vs": second, "ab": ab, "ba": ba})
        first_wins = (ab[0] + ba[1]) / 2
        preference.setdefault(first, []).append(first_wins)
        preference.setdefault(second, []).append(1 - first_wins)
    models.MetricScore.objects.bulk_create(
        models.MetricScore(
            run=run,
            output_id=pk,
            value=float(np.mean(values)),
            details={"pairs": details.get(pk, []), "n_pairs": len(values)},
        )
        for pk, values in preference.items()
    )
    return run


def pairwise_campaign(
    dataset: models.Dataset,
    owner: Any,
    aspect: models.Aspect,
    pairs: list[tuple[models.Output, models.Output]],
    answers: list[tuple[Any, int, str]],
) -> Campaign:
    """A pairwise campaign on ``dataset`` with one item per pair (output a, output b) and
    the answers (annotator, item index, choice ``a``/``b``/``tie``)."""
    study = models.Study.objects.create(name="preferences", dataset=dataset, owner=owner)
    campaign = Campaign.objects.create(study=study, name="pairs", mode="pairwise")
    campaign.aspects.add(aspect)
    items = Item.objects.bulk_create(
        Item(
            campaign=campaign,
            document=a.document,
            output_a=a,
            output_b=b,
            system_key=f"{a.system_id} vs {b.system_id}",
            position=k,
        )
        for k, (a, b) in enumerate(pairs)
    )
    PairwiseJudgment.objects.bulk_create(
        PairwiseJudgment(
            item=items[k],
            aspect=aspect,
            annotator=who,
            choice=choice,
            left_output=items[k].output_a,
        )
        for who, k, choice in answers
    )
    return campaign


def synthetic_records(
    n_docs: int = 12, n_systems: int = 5, seed: int = 3
) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    records = []
    for d in range(n_docs):
        for s in range(n_systems):
            coherence = float(rng.integers(1, 6))
            fluency = (
                float(rng.integers(1, 6)) if (d, s) != (0, 0) else None
            )  # one missing judgment
            records.append(
                {
                    "doc_id": f"doc{d:02d}",
                    "system_id": f"sys{s}",
                    "source": f"Source {d}.",
                    "references": [f"Ref {d}."],
                    "output": f"Output {d}-{s}.",
                    "human": {"coherence": coherence, **({"fluency": fluency} if fluency else {})},
                    "metrics": {
                        "good": round(coherence + float(rng.normal(0, 0.8)), 4),
                        "noise": round(float(rng.normal()), 4),
                    },
                }
            )
    return records


PPI_QUALITY = {"good": 4.0, "fair": 3.0, "poor": 2.0}


def import_scored(write_jsonl: Any, owner: Any) -> models.Dataset:
    """synthetic_records() imported as ``owner``'s dataset ``scored`` (``write_jsonl`` is
    the fixture of that name)."""
    return import_jsonl(write_jsonl(synthetic_records(), name="scored.jsonl"), "scored", owner)


def ppi_records(n_docs: int = 30, judged_docs: int = 9, seed: int = 0) -> list[dict[str, object]]:
    """Three systems of known quality on documents of varying difficulty; a metric on
    its own scale that follows the human scores; human scores on the first
    ``judged_docs`` documents only (the others are left for the metric)."""
    rng = random.Random(seed)
    rows = []
    for d in range(n_docs):
        difficulty = rng.gauss(0, 0.6)
        for system, quality in PPI_QUALITY.items():
            human = quality + difficulty + rng.gauss(0, 0.3)
            row: dict[str, object] = {
                "doc_id": f"d{d:02d}",
                "system_id": system,
                "source": f"Source {d}.",
                "references": [f"Reference {d}."],
                "output": f"{system} output {d}.",
                "metrics": {"m": 0.1 * human + rng.gauss(0, 0.02)},
                "human_all": human,
            }
            if d < judged_docs:
                row["human"] = {"coherence": round(min(max(human, 0.0), 5.0), 6)}
            rows.append(row)
    return rows


TUNING_DOCS, TUNING_SYSTEMS = 12, 3  # the tuning study's documents and systems


def tuning_records(
    seed: int = 5, n_docs: int = TUNING_DOCS, n_systems: int = TUNING_SYSTEMS
) -> list[dict[str, object]]:
    """Records for the tuners' tests: 12 documents × 3 systems, three annotators per
    output on coherence (1-5), the systems a little apart in quality."""
    rng = np.random.default_rng(seed)
    records: list[dict[str, object]] = []
    for d in range(n_docs):
        for s in range(n_systems):
            quality = rng.normal() + 0.5 * s
            raters = np.clip(np.round(quality + 3 + rng.normal(0, 0.6, 3)), 1, 5)
            records.append(
                {
                    "doc_id": f"doc{d:02d}",
                    "system_id": f"sys{s}",
                    "source": f"The council approved budget {d} after a long debate.",
                    "references": [f"Budget {d} passed."],
                    "output": f"Summary {s} of budget {d}: the council voted.",
                    "annotators": {"coherence": {f"r{k}": float(v) for k, v in enumerate(raters)}},
                }
            )
    return records


def finished_run(study: models.Study, request: RunRequest) -> models.MetricRun:
    """A run of ``request`` on the study's dataset, executed here."""
    run = start_run(study.dataset, request, enqueue=False, local_paths=True)
    assert execute_run(run.pk) == "succeeded"
    return models.MetricRun.objects.get(pk=run.pk)


# per output (doc, system): the two raters' COH values and the judge's score (1..5)
REVIEW_COH = {
    ("d0", "a"): ((4, 4), 4.0),  # all agree: not in the queue
    ("d0", "b"): ((2, 2), 5.0),  # judge 3 points off: gap 0.75
    ("d1", "a"): ((1, 5), 3.0),  # humans 4 apart: spread 1.0, judge on their mean
    ("d1", "b"): ((3, 3), 4.0),  # gap 0.25
    ("d2", "a"): ((2, 3), 2.5),  # spread 0.25, judge on the mean
    ("d2", "b"): ((5, 5), 5.0),
    ("d3", "a"): ((3, 4), 3.5),
    ("d3", "b"): ((1, 1), 1.0),
    ("d4", "a"): ((4, 5), 4.5),
    ("d4", "b"): ((2, 2), 2.0),
}


def _imported(output: Any, aspect: models.Aspect, value: float, rater: str) -> models.Judgment:
    return models.Judgment.objects.create(
        output=output, aspect=aspect, value=value, import_file="h.jsonl", rater=rater
    )


def review_study(
    owner: Any,
) -> tuple[models.Study, models.MetricRun, dict[tuple[str, str], int]]:
    """A study of COH where a judge run and two imported raters disagree as
    :data:`REVIEW_COH` says (the disagreement review's tests): the study, the run and the
    outputs' ids by (doc, system)."""
    dataset = DatasetFactory(name="review", owner=owner)
    coh = models.Aspect.objects.get(code="COH")
    run = models.MetricRun.objects.create(
        dataset=dataset,
        metric="geval",
        label="judge",
        status=models.MetricRun.Status.SUCCEEDED,
        config={"steps": {"text": "1. Read the source.\n2. Rate coherence."}},
    )
    ids = {}
    docs: dict[str, Any] = {}
    for (doc, system), ((h1, h2), score) in REVIEW_COH.items():
        if doc not in docs:
            docs[doc] = DocumentFactory(dataset=dataset, doc_key=doc, source=f"Source {doc}.")
        output = OutputFactory(document=docs[doc], system_id=system, text=f"{system} on {doc}")
        ids[(doc, system)] = output.pk
        _imported(output, coh, h1, "r1")
        _imported(output, coh, h2, "r2")
        models.MetricScore.objects.create(
            run=run,
            output=output,
            value=score,
            details={"distribution": {"1": 0.1, "5": 0.9}, "rationale": f"Why {doc}/{system}."},
        )
    study = models.Study.objects.create(name="review study", dataset=dataset, owner=owner)
    study.aspects.add(coh)
    return study, run, ids


class AdjudicatedSplit(NamedTuple):
    """:func:`adjudicated_split`'s study, judge run, outputs' ids by (doc, system), aspect,
    split, the tune document chosen, and the two adjudicated outputs."""

    study: models.Study
    run: models.MetricRun
    ids: dict[tuple[str, str], int]
    aspect: models.Aspect
    split: models.StudySplit
    tune_doc: str
    tuned: int
    held: int


def adjudicated_split(owner: Any) -> AdjudicatedSplit:
    """The review study (:func:`review_study`) split tune/test (test 0.4, seed 0), with
    output ``a`` of its first tune document (``tuned``) and of a test document (``held``)
    adjudicated as 1 on COH."""
    study, run, ids = review_study(owner)
    coh = models.Aspect.objects.get(code="COH")
    split = make_split(study, test=0.4, seed=0)
    parts = dict(split.documents.values_list("document__doc_key", "part"))
    tune_doc = min(doc for doc, part in parts.items() if part == "tune")
    test_doc = next(doc for doc, part in parts.items() if part == "test")
    tuned, held = ids[(tune_doc, "a")], ids[(test_doc, "a")]
    adjudication.adjudicate(study, coh, tuned, "1", owner, run)
    adjudication.adjudicate(study, coh, held, "1", owner, run)
    return AdjudicatedSplit(study, run, ids, coh, split, tune_doc, tuned, held)


def calibration_request(
    start: int, aspect: int, study: int, method: str, gold: str = "humans"
) -> dict[str, Any]:
    """The ``tuning_request`` a calibration job of the tuning tests is saved with (seed 3,
    200 resamples, on the light queue)."""
    return {
        "start_run": start,
        "aspect": aspect,
        "study": study,
        "tuner": "calibration",
        "options": {"method": method, "gold": gold},
        "seed": 3,
        "resamples": 200,
        "queue": "light",
    }
