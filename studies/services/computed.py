"""What a failed computation of a cached page (a correlation matrix, a report card)
leaves behind, so that the page says so instead of asking a worker again on every poll.

A page's result lives in the cache under its key (the parameters and the dataset's data
version). When computing it raises, :func:`recording` stores a :class:`Failure` under
the same key (the error, an id that the log's traceback carries too, and when) for
:data:`FAILURE_SECONDS`; while it is there the page shows it with a *Try again* button,
its export and the API answer with it, and nothing is sent again. Trying again
(:func:`clear_failure`) removes it. New data gives a new key, so a fix in the data needs
no retry.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from django.core.cache import cache
from django.utils import timezone

log = logging.getLogger(__name__)
FAILURE_SECONDS = 3600  # after an hour the page asks a worker again by itself
MAX_ERROR = 500  # characters of the error kept for the page


@dataclass(frozen=True)
class Failure:
    """Why computing a page failed: ``error`` (the exception's type and message),
    ``error_id`` (in the log line with the traceback) and ``at`` (ISO time)."""

    error: str
    error_id: str
    at: str

    def message(self, what: str) -> str:
        """One sentence for a page, an export or the API."""
        return f"Computing the {what} failed: {self.error} (error {self.error_id}, {self.at})."


def _key(key: str) -> str:
    return key + ":failed"


def failure(key: str) -> Failure | None:
    """The failure recorded for the page cached under ``key``, if any."""
    found = cache.get(_key(key))
    return Failure(**found) if isinstance(found, dict) else None


def record_failure(key: str, exc: BaseException) -> Failure:
    """Store why computing the page under ``key`` failed, and log it with its id."""
    error_id = uuid.uuid4().hex[:8]
    log.error("computing %s failed (error %s)", key, error_id, exc_info=exc)
    text = f"{type(exc).__name__}: {exc}"
    found = Failure(
        error=text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…",
        error_id=error_id,
        at=timezone.now().isoformat(timespec="seconds"),
    )
    cache.set(_key(key), asdict(found), FAILURE_SECONDS)
    return found


def clear_failure(key: str) -> None:
    """Forget the failure, so that the next request computes the page again."""
    cache.delete(_key(key))


@contextmanager
def recording(key: str) -> Iterator[None]:
    """Record an exception raised while computing the page under ``key`` (and raise it
    on: a worker's task still fails, a command still stops)."""
    try:
        yield
    except Exception as exc:
        record_failure(key, exc)
        raise
