"""Making, reading and redoing a study's split of its documents (tune / dev / test).

A split is frozen: :func:`make_split` refuses to change one unless forced, and says
which runs depend on it (tuned from its tune documents, or a jury weighed on them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Avg, Count

from scoring.stats.splits import stratified_split
from studies.models import Aspect, Document, Judgment, MetricRun, SplitDocument, Study, StudySplit

PARTS = ("tune", "dev", "test")


class SplitError(ValueError):
    """A split that cannot be made or changed; the message says why."""


def split_of(study: Study) -> StudySplit | None:
    """The study's split, or None."""
    return StudySplit.objects.filter(study=study).select_related("stratified_by").first()


def counts(split: StudySplit) -> dict[str, int]:
    """Documents per part, every part named (0 where empty)."""
    found = Counter(dict(split.documents.values_list("part").annotate(n=Count("pk"))))
    return {part: int(found.get(part, 0)) for part in PARTS}


@dataclass(frozen=True)
class SplitSummary:
    """What the study page and the API show of a split."""

    seed: int
    dev_share: float
    test_share: float
    stratified_by: str
    counts: dict[str, int]
    created_at: datetime
    runs: int


def split_summary(study: Study) -> SplitSummary | None:
    """The study's split in numbers (None: not split yet)."""
    split = split_of(study)
    if split is None:
        return None
    return SplitSummary(
        seed=split.seed,
        dev_share=split.dev_share,
        test_share=split.test_share,
        stratified_by=split.stratified_by.code if split.stratified_by else "",
        counts=counts(split),
        created_at=split.created_at,
        runs=len(dependents(split)),
    )


def dependents(split: StudySplit) -> list[MetricRun]:
    """The runs made from this split: tuned on its tune documents or weighed on them."""
    return list(
        MetricRun.objects.filter(dataset_id=split.study.dataset_id, config__split=split.pk)
        .order_by("pk")
        .only("pk", "label")
    )


def default_aspect(study: Study) -> Aspect | None:
    """The aspect with the most judgments of the dataset, the study's own first."""
    judged = (
        Judgment.objects.filter(output__document__dataset_id=study.dataset_id)
        .values("aspect_id")
        .annotate(n=Count("pk"))
        .order_by("-n", "aspect_id")
    )
    own = set(study.aspects.values_list("pk", flat=True))
    ranked = sorted(judged, key=lambda row: (row["aspect_id"] not in own, -row["n"]))
    return Aspect.objects.get(pk=ranked[0]["aspect_id"]) if ranked else None


def _validate(dev: float, test: float) -> None:
    if not 0 < test < 1 or not 0 <= dev < 1 or dev + test >= 1:
        raise SplitError(
            f"shares dev={dev:g} and test={test:g} must leave some documents to tune on: "
            "0 < test < 1, 0 ≤ dev, dev + test < 1"
        )


def make_split(
    study: Study,
    *,
    dev: float = 0.0,
    test: float = 0.4,
    seed: int = 0,
    aspect: Aspect | None = None,
    force: bool = False,
    by: Any = None,
) -> StudySplit:
    """Split the study's documents, stratified by their mean human score on ``aspect``
    (default :func:`default_aspect`). An existing split is kept unless ``force``; the
    refusal names the runs that depend on it."""
    _validate(dev, test)
    existing = split_of(study)
    if existing is not None and not force:
        runs = dependents(existing)
        used = (
            "runs made from it: " + ", ".join(f"{r.pk} ({r.label})" for r in runs)
            if runs
            else "no run depends on it yet"
        )
        raise SplitError(
            f"study {study.pk} already has a frozen split (seed {existing.seed}, "
            f"{counts(existing)}); {used}. Pass --force to replace it: runs tuned on it "
            "keep their numbers, but their test figures no longer describe held-out documents."
        )
    aspect = aspect or default_aspect(study)
    documents = list(
        Document.objects.filter(dataset_id=study.dataset_id)
        .order_by("doc_key")
        .values_list("pk", "doc_key")
    )
    if len(documents) < 2:
        raise SplitError(f"the study's dataset has {len(documents)} document(s): nothing to split")
    means: dict[int, float] = {}
    if aspect is not None:
        means = dict(
            Judgment.objects.filter(aspect=aspect, output__document__dataset_id=study.dataset_id)
            .values_list("output__document_id")
            .annotate(mean=Avg("value"))
        )
    keys = [key for _, key in documents]
    values = [float(means.get(pk, float("nan"))) for pk, _ in documents]
    shares = {"tune": 1 - dev - test, "dev": dev, "test": test}
    parts = stratified_split(keys, values, shares, np.random.default_rng(seed))
    with transaction.atomic():
        if existing is not None:
            existing.delete()
        split = StudySplit.objects.create(
            study=study,
            seed=seed,
            dev_share=dev,
            test_share=test,
            stratified_by=aspect,
            created_by=by,
        )
        SplitDocument.objects.bulk_create(
            SplitDocument(split=split, document_id=pk, part=parts[key]) for pk, key in documents
        )
        # the card evaluates runs tuned on a split on its test documents: a new split
        # changes what it shows of them
        study.dataset.bump_data_version()
    return split


def split_for_dataset(dataset_id: int, study: Study | None = None) -> StudySplit:
    """The split a tuner of this dataset's runs uses: ``study``'s, else the one study of
    the dataset that has a split."""
    if study is not None:
        if study.dataset_id != dataset_id:
            raise SplitError(f"study {study.pk} is not of the run's dataset")
        split = split_of(study)
        if split is None:
            raise SplitError(
                f"study {study.pk} has no split: run manage.py split --study {study.pk}"
            )
        return split
    splits = list(StudySplit.objects.filter(study__dataset_id=dataset_id).select_related("study"))
    if not splits:
        raise SplitError(
            "no study of this dataset has a split: run manage.py split --study ID first"
        )
    if len(splits) > 1:
        ids = ", ".join(str(s.study_id) for s in splits)
        raise SplitError(f"several studies of this dataset have a split ({ids}): name one")
    return splits[0]
