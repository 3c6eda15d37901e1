"""The HTTP layer: one ``httpx.Client``, the token, bounded retries, errors as exceptions."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import IO, Any

import httpx

from concordia_client.errors import (
    ApiError,
    ComputationFailed,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
    error_class,
)
from concordia_client.operations import Operation

log = logging.getLogger("concordia_client")

QueryValue = str | int | float | bool
RETRIED = frozenset({429, 503})  # the server did nothing; Retry-After says when to ask again


def retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds (a number or an HTTP date), None if absent.
    (scoring/lm/served/client.py has its twin: this package imports nothing of the project.)"""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _query(op: Operation, query: Mapping[str, QueryValue | None]) -> dict[str, str]:
    sent = {k: v for k, v in query.items() if v is not None}
    unknown = set(sent) - op.query
    if unknown:  # a bug in the client: the operations table is what the tests check
        raise ValueError(f"{op.method} {op.path} takes no query parameter {sorted(unknown)}")
    return {
        k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in sent.items()
    }


class Http:
    """Sends one operation, retrying 429 and 503 answers (and GETs whose connection
    failed) at most ``max_retries`` times; a Retry-After above ``max_retry_wait`` seconds
    is not waited for."""

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
        transport: httpx.BaseTransport | None,
        user_agent: str,
    ) -> None:
        headers = {"User-Agent": user_agent}
        if token:
            headers["Authorization"] = f"Token {token}"
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.client = httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def send(
        self,
        op: Operation,
        path_args: Mapping[str, int | str] | None = None,
        *,
        query: Mapping[str, QueryValue | None] | None = None,
        json: Mapping[str, Any] | None = None,
        form: Mapping[str, str] | None = None,
        files: Mapping[str, tuple[str, IO[bytes]]] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """The answer to one operation (2xx); any other status raises its ApiError.
        ``content`` is a raw body of the operation's type, ``headers`` its header
        parameters."""
        sent = {*(json or {}), *(form or {}), *(files or {})}
        if not sent <= op.body:
            raise ValueError(f"{op.method} {op.path} takes no field {sorted(sent - op.body)}")
        if not set(headers or {}) <= op.headers:
            unknown = sorted(set(headers or {}) - op.headers)
            raise ValueError(f"{op.method} {op.path} takes no header {unknown}")
        url = op.url(**(path_args or {}))
        params = _query(op, query or {})
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        if content is not None:
            extra["content"] = content
            headers = {**(headers or {}), "Content-Type": str(op.content_type)}
        if headers:
            extra["headers"] = dict(headers)
        attempt = 0
        while True:
            for _, handle in (files or {}).values():
                handle.seek(0)  # a retry sends the file again
            request = self.client.build_request(
                op.method, url, params=params, json=json, data=form, files=files, **extra
            )
            try:
                response = self.client.send(request, stream=stream)
            except httpx.TimeoutException as exc:
                raise Timeout(f"{op.method} {url}: no answer in time ({exc})") from exc
            except httpx.TransportError as exc:
                if op.method != "GET" or attempt >= self.max_retries:
                    raise TransportError(f"{op.method} {url}: {exc}") from exc
                delay = 0.5 * 2**attempt
            else:
                wait = self._retry_delay(response, attempt)
                if wait is None:
                    return self._checked(op, response)
                response.close()
                delay = wait
            log.info("%s %s: retrying in %.1f s", op.method, url, delay)
            time.sleep(delay)
            attempt += 1

    def _retry_delay(self, response: httpx.Response, attempt: int) -> float | None:
        if response.status_code not in RETRIED or attempt >= self.max_retries:
            return None
        wait = retry_after(response)
        delay = 0.5 * 2**attempt if wait is None else wait
        return delay if delay <= self.max_retry_wait else None

    def _checked(self, op: Operation, response: httpx.Response) -> httpx.Response:
        if response.status_code < 400:
            return response
        response.read()
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        detail, errors = response.reason_phrase, {}
        if isinstance(body, dict):
            detail = str(body.get("detail") or detail)
            if isinstance(body.get("errors"), dict):
                errors = body["errors"]
        cls = error_class(response.status_code)
        if cls is ServerError and isinstance(body, dict) and body.get("error_id"):
            cls = ComputationFailed  # a computed page failed; its body names the error
        kwargs: dict[str, Any] = {"method": op.method, "url": str(response.url), "body": body}
        if cls is RateLimited:
            kwargs["retry_after"] = retry_after(response)
        error: ApiError = cls(response.status_code, detail, errors, **kwargs)
        raise error

    def close(self) -> None:
        self.client.close()
