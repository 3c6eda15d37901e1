"""The client's exceptions: one base class, one class per kind of refusal.

Every 4xx answer of the API has the body ``{"detail": "...", "errors": {field: [messages]}}``;
:class:`ApiError` carries both, and its subclasses say which status it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concordia_client.models import ImportJob, ImportProblem, Run


class ConcordiaError(Exception):
    """Anything the client raises."""


class TransportError(ConcordiaError):
    """The server could not be reached, or the connection broke."""


class Timeout(ConcordiaError, TimeoutError):
    """A request, or a wait for an import, a run or a correlation table, took too long.
    ``last`` is the last state seen (an ImportJob, a Run, a list of runs) or None."""

    def __init__(self, message: str, last: object = None) -> None:
        super().__init__(message)
        self.last = last


class UploadInterrupted(ConcordiaError):
    """A resumable upload stopped before its end: the connection kept failing (``cause``)
    after the client's retries. The server keeps what arrived (``offset`` bytes) until the
    session expires; ``Client.resume_upload(exc.session, path)`` goes on from there."""

    def __init__(self, session: str, offset: int, cause: Exception) -> None:
        self.session = session
        self.offset = offset
        self.cause = cause
        super().__init__(
            f"upload {session} stopped at byte {offset:,}: {cause}; resume it with "
            f"resume_upload({session!r}, path)"
        )


class ApiError(ConcordiaError):
    """The server answered with an error status."""

    def __init__(
        self,
        status: int,
        detail: str,
        errors: Mapping[str, list[str]] | None = None,
        *,
        method: str = "",
        url: str = "",
        body: Any = None,
    ) -> None:
        self.status = status
        self.detail = detail
        self.errors: dict[str, list[str]] = dict(errors or {})
        self.method = method
        self.url = url
        self.body = body
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.method} {self.url}: " if self.method else ""
        text = f"{where}{self.status} {self.detail}"
        problems = [f"{field}: {m}" for field, messages in self.errors.items() for m in messages]
        return text + "".join(f"\n  {p}" for p in problems if p not in self.detail)


class BadRequest(ApiError):
    """400: the request was refused; ``errors`` names the fields."""


class AuthenticationError(ApiError):
    """401 (a missing or wrong token), or a wrong username or password at login."""


class PermissionDenied(ApiError):
    """403: your account may not do this."""


class NotFound(ApiError):
    """404: no such object among yours (another user's objects are not found either)."""


class Conflict(ApiError):
    """409: the object is not in a state that allows this (cancelling a finished run)."""


class RateLimited(ApiError):
    """429 that outlasted the client's retries; ``retry_after`` in seconds if the server said."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        self.retry_after = retry_after
        super().__init__(*args, **kwargs)


class ServerError(ApiError):
    """5xx: the server failed (503 after the client's retries)."""


class ComputationFailed(ServerError):
    """500: computing the correlation matrix or the report card failed on the server (the
    data or the statistic, not the connection). ``error_id`` names the failure in the
    server's log; asking again with ``retry=True`` computes it again."""

    @property
    def error_id(self) -> str:
        return str((self.body or {}).get("error_id", "")) if isinstance(self.body, dict) else ""


STATUS_ERRORS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}


def error_class(status: int) -> type[ApiError]:
    return STATUS_ERRORS.get(status, ServerError if status >= 500 else ApiError)


class ImportFailed(ConcordiaError):
    """The server refused the file; nothing was written. ``problems`` name each line and
    field as the server reported them (the server reports the first fifty, then a count)."""

    def __init__(self, job: ImportJob) -> None:
        self.job = job
        self.problems: list[ImportProblem] = job.problems
        lines = "".join(f"\n  {p}" for p in self.problems)
        super().__init__(f"import of {job.original_name!r} failed:{lines}")


class RunNotSucceeded(ConcordiaError):
    """A run ended without succeeding; ``run`` is its final state."""

    def __init__(self, run: Run) -> None:
        self.run = run
        error = f": {run.error}" if run.error else ""
        super().__init__(f"run {run.id} ({run.label}) {run.status}{error}")


class RunFailed(RunNotSucceeded):
    """The run failed; its error text is in the message and in ``run.error``."""


class RunCancelled(RunNotSucceeded):
    """The run was cancelled (the scores written before are kept)."""
