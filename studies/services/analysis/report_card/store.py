"""Where a report card comes from: the cache (keyed on the dataset's data version), the
request for a small dataset, or the light worker, which the jobs page shows while it
computes. Nothing slow runs in a web request. A computation that fails is recorded
(:mod:`studies.services.computed`): the page shows it and sends nothing again until
someone tries again."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

from studies.models import Dataset
from studies.services import heartbeat
from studies.services.analysis.matrix_cost import is_cheap, matrix_size
from studies.services.analysis.report_card.card import compute_card
from studies.services.analysis.report_card.params import CardParams
from studies.services.computed import Failure, clear_failure, failure, recording
from studies.services.jobs import track
from studies.services.queue import COMPUTE_REPORT_CARD, send

# Seconds per document and resample of one row (agreement intervals and the alt-test;
# 24 rows of 100 documents × 1000 resamples took 13.6 s on 2 busy cores)
AGREEMENT_SECONDS = 5e-6


def estimated_seconds(dataset: Dataset, params: CardParams) -> float:
    """What the card costs beyond its matrix: each possible row's agreement intervals."""
    size = matrix_size(dataset)
    return AGREEMENT_SECONDS * size.documents * size.runs * size.aspects * params.resamples


def is_cheap_card(dataset: Dataset, params: CardParams) -> bool:
    """True when the card (its matrix included) fits the inline budget."""
    budget: float = settings.CONCORDIA["DASHBOARD_INLINE_SECONDS"]
    return is_cheap(dataset, params.matrix_params) and estimated_seconds(dataset, params) <= budget


def cached_card(dataset: Dataset, params: CardParams) -> dict[str, Any] | None:
    found: dict[str, Any] | None = cache.get(params.key(dataset))
    return found


def progress(dataset: Dataset, params: CardParams) -> dict[str, int] | None:
    found: dict[str, int] | None = cache.get(params.key(dataset) + ":progress")
    return found


def progress_seconds() -> float:
    """How long the progress entry (the "being computed" mark) outlives its computer's
    last heartbeat: a worker that died is noticed, and the card asked again, this soon."""
    return max(3 * heartbeat.interval(), 1.0)


def failed(dataset: Dataset, params: CardParams) -> Failure | None:
    """Why the last computation of this card failed, while that is remembered."""
    return failure(params.key(dataset))


def compute_and_cache(dataset: Dataset, params: CardParams) -> dict[str, Any]:
    key = params.key(dataset)
    latest = {"done": 0, "total": 0}

    def report(done: int, total: int) -> None:
        latest.update(done=done, total=total)
        cache.set(key + ":progress", dict(latest), progress_seconds())

    def beat() -> None:  # a phase with no progress to report (the matrix) still beats
        cache.set(key + ":progress", dict(latest), progress_seconds())

    try:
        with heartbeat.beating(beat, heartbeat.interval(), f"report card {key}"), recording(key):
            card = compute_card(dataset, params, report)
    finally:
        cache.delete(key + ":progress")
    cache.set(key, card)
    return card


def card_for(dataset: Dataset, params: CardParams) -> dict[str, Any]:
    """The cached card, computing and caching it first if needed (commands, tasks)."""
    return cached_card(dataset, params) or compute_and_cache(dataset, params)


def available_card(dataset: Dataset, params: CardParams, user: Any = None) -> dict[str, Any] | None:
    """What a request may show now: the cached card, or one computed in the request when
    it is cheap; else None after asking the light worker for it (for ``user``, as the
    jobs page says). None, asking nothing, while a failure is recorded (:func:`failed`;
    a cheap card that fails in the request is recorded the same way)."""
    found = cached_card(dataset, params)
    if found is not None or failed(dataset, params) is not None:
        return found
    if is_cheap_card(dataset, params):
        try:
            return compute_and_cache(dataset, params)
        except Exception:  # recorded and logged with its id: the page shows it
            return None
    request_card(dataset, params, user)
    return None


def try_again(dataset: Dataset, params: CardParams) -> None:
    """Forget the card's failure, so that the next request computes it again."""
    clear_failure(params.key(dataset))


def request_card(dataset: Dataset, params: CardParams, user: Any = None) -> bool:
    """Enqueue the computation unless one is under way; True if enqueued."""
    key = params.key(dataset) + ":progress"
    if not cache.add(key, {"done": 0, "total": 0}, 600):  # the worker's beats take over
        return False
    url = reverse("studies:dataset-report-card", args=[dataset.pk]) + "?" + params.query
    track(key, "report card", dataset, f"judge report card of {dataset.name}", url, user)
    send(COMPUTE_REPORT_CARD, dataset.pk, asdict(params))
    return True


def compute_in_worker(dataset: Dataset, params: CardParams) -> str:
    """The worker's side of :func:`available_card`."""
    card = compute_and_cache(dataset, params)
    return f"{len(card['rows'])} rows in {card['seconds']} s"
