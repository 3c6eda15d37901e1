"""Correlation matrices, drill-downs and paper tables, computed from stored scores and
cached under a key that includes the dataset's ``data_version`` (any change to its
outputs, judgments or scores gives a new key; nothing is kept as a running total).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import asdict
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Q
from django.urls import reverse

from studies import hooks
from studies.models import Dataset, ImportJob, Judgment
from studies.services import queue
from studies.services.analysis import snapshot
from studies.services.analysis.ceiling import ceiling_row
from studies.services.analysis.frames import (
    JudgmentFilter,
    ScoreFrame,
    load_frame,
    restrict_to_documents,
)
from studies.services.analysis.label_cells import label_columns
from studies.services.analysis.matrix import compute_matrix
from studies.services.analysis.matrix_cost import is_cheap
from studies.services.analysis.params import MatrixParams
from studies.services.computed import Failure, clear_failure, failure, recording
from studies.services.jobs import track

log = logging.getLogger(__name__)
NO_JUDGMENT = Q(pk__isnull=True)  # matches no row (an empty IN list cannot be raw SQL)


def frame_for(
    dataset: Dataset,
    params: MatrixParams,
    *,
    only_runs: Collection[int] | None = None,
    only_aspects: Collection[int] | None = None,
) -> ScoreFrame:
    """The dataset's scores and judgments (only these runs and aspects when given):
    without flagged annotators when asked (:data:`studies.hooks.flagged_annotators`);
    with each output's judgments weighted by their annotators' MACE competence when
    asked (annotators without an estimate weigh 1, see
    :data:`studies.hooks.competence_weights`); and only a trained metric's test
    documents when asked (:data:`studies.hooks.trained_splits`: so no metric is credited
    for the documents a learned metric was trained on)."""
    excluded = hooks.flagged(dataset) if params.exclude_flagged else set()
    weights = hooks.weights(dataset) if params.weight_by_competence else None
    frame = load_frame(
        dataset,
        exclude_annotators=excluded,
        judgment_weights=weights,
        only_runs=only_runs,
        only_aspects=only_aspects,
        judgments=judgment_filter(dataset, params.source),
    )
    if params.test_of:
        frame = restrict_to_documents(frame, hooks.held_out_documents(dataset, params.test_of))
    return frame


def source_filter(dataset: Dataset, source: str) -> Q | None:
    """The judgments a ``source`` choice keeps (None: all): one imported file's (an import
    job of this dataset, by its file name, or a file name) or one registered source's
    (:data:`studies.hooks.judgment_sources`: a campaign's answers, a campaign of a study
    on this dataset); an unknown one keeps none."""
    kept = judgment_filter(dataset, source)
    return None if kept is None else kept.q


def judgment_filter(dataset: Dataset, source: str) -> JudgmentFilter | None:
    """:func:`source_filter` as a frame takes it: an imported file's judgments are
    named by the file, so that a snapshot finds them in its own columns."""
    if not source:
        return None
    kind, _, raw = source.partition(":")
    if kind == "file":
        return JudgmentFilter.from_file(raw)
    if kind == "import":
        name = (
            ImportJob.objects.filter(pk=int(raw), dataset=dataset)
            .values_list("original_name", flat=True)
            .first()
        )
        return JudgmentFilter.from_file(name) if name else JudgmentFilter(NO_JUDGMENT)
    registered = hooks.judgment_source(kind)
    return JudgmentFilter(registered.judgments(dataset, raw) if registered else NO_JUDGMENT)


def judgment_sources(dataset: Dataset) -> list[tuple[str, str]]:
    """What the page's source control offers: the dataset's uploaded files, the files
    imported without an upload (the import command), then the registered sources'
    (:data:`studies.hooks.judgment_sources`: the campaigns of its studies) (value, label).
    Cached per data version (a campaign's first answer changes it) for five minutes, so
    the cached page stays a handful of queries."""
    key = f"judgment-sources:{dataset.pk}:{dataset.created_at.isoformat()}:{dataset.data_version}"
    found = cache.get(key)
    if isinstance(found, list):
        return found
    choices = _judgment_sources(dataset)
    cache.set(key, choices, 300)
    return choices


def _judgment_sources(dataset: Dataset) -> list[tuple[str, str]]:
    jobs = ImportJob.objects.filter(dataset=dataset, status=ImportJob.Status.SUCCEEDED)
    uploaded = list(jobs.order_by("created_at").values_list("pk", "original_name"))
    choices = [(f"import:{pk}", f"imported file {name}") for pk, name in uploaded]
    written = snapshot.current(dataset)  # its manifest names them: no scan of judgments
    files = (
        written.files
        if written is not None
        else Judgment.objects.filter(output__document__dataset=dataset, annotator__isnull=True)
        .order_by("import_file")
        .values_list("import_file", flat=True)
        .distinct()
    )
    named = {name for _, name in uploaded}
    choices += [(f"file:{name}", f"imported file {name}") for name in files if name not in named]
    for source in hooks.judgment_sources:
        choices += source.choices(dataset)
    return choices


def trained_metrics(dataset: Dataset) -> list[Any]:
    """The dataset's finished learned metrics (for the page's test-documents filter)."""
    return hooks.trained_models(dataset)


def excluded_annotators(dataset: Dataset, params: MatrixParams) -> list[str]:
    """The usernames ``params`` leaves out (annotators flagged on gold items)."""
    if not params.exclude_flagged:
        return []
    users = get_user_model().objects.filter(pk__in=hooks.flagged(dataset))
    return sorted(users.values_list("username", flat=True))


def cached_matrix(dataset: Dataset, params: MatrixParams) -> dict[str, Any] | None:
    result: dict[str, Any] | None = cache.get(params.key(dataset))
    return result


def progress(dataset: Dataset, params: MatrixParams) -> dict[str, int] | None:
    value: dict[str, int] | None = cache.get(params.key(dataset) + ":progress")
    return value


def failed(dataset: Dataset, params: MatrixParams) -> Failure | None:
    """Why the last computation of this matrix failed, while that is remembered
    (:mod:`studies.services.computed`)."""
    return failure(params.key(dataset))


def try_again(dataset: Dataset, params: MatrixParams) -> None:
    """Forget the matrix's failure, so that the next request computes it again."""
    clear_failure(params.key(dataset))


def available_matrix(
    dataset: Dataset, params: MatrixParams, user: Any = None
) -> dict[str, Any] | None:
    """What a page may show now: the cached matrix, or one computed in the request when
    it is estimated cheap (:func:`~studies.services.analysis.matrix_cost.is_cheap`); else None
    after asking a worker to compute it (for ``user``, as the jobs page says). None,
    asking nothing, while a failure is recorded (:func:`failed`; a cheap matrix that
    fails in the request is recorded the same way)."""
    result = cached_matrix(dataset, params)
    if result is not None or failed(dataset, params) is not None:
        return result
    if is_cheap(dataset, params):
        try:
            return compute_and_cache(dataset, params)
        except Exception:  # recorded and logged with its id: the page shows it
            return None
    request_matrix(dataset, params, user)
    return None


def matrix_for(dataset: Dataset, params: MatrixParams) -> dict[str, Any]:
    """The cached matrix, computing and caching it first if needed."""
    return cached_matrix(dataset, params) or compute_and_cache(dataset, params)


def compute_and_cache(dataset: Dataset, params: MatrixParams) -> dict[str, Any]:
    key = params.key(dataset)

    def report(done: int, total: int) -> None:
        cache.set(key + ":progress", {"done": done, "total": total}, 600)

    try:
        with recording(key):
            frame = frame_for(dataset, params)
            result = compute_matrix(frame, params, report)
            result["ceiling"] = ceiling_row(dataset, frame, params)
            label_columns(dataset, frame, result)  # a label aspect's MCC or κ per cell
    finally:
        cache.delete(key + ":progress")
    cache.set(key, result)
    return result


def request_matrix(dataset: Dataset, params: MatrixParams, user: Any = None) -> bool:
    """Enqueue the computation unless one is already under way; True if enqueued."""
    key = params.key(dataset)
    if not cache.add(key + ":progress", {"done": 0, "total": 0}, 600):
        return False
    title = f"{params.level}-level {params.coefficient} matrix of {dataset.name}"
    url = reverse("studies:correlations", args=[dataset.pk])
    track(key + ":progress", "matrix", dataset, title, url, user)
    queue.send(queue.COMPUTE_CORRELATIONS, dataset.pk, asdict(params))
    return True
