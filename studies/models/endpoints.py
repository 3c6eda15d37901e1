"""Served endpoints (an OpenAI-compatible server: vLLM, SGLang, a hosted API) that runs
may score with, and the responses they gave (the persistent response cache).

An endpoint's API key is write-only: :meth:`Endpoint.set_api_key` encrypts it (Fernet,
from ``cryptography``) with the site's endpoint key (:func:`fernet`: ``ENDPOINT_KEY``,
else a key generated once into the data folder; never one derived from
``SECRET_KEY``); only :meth:`Endpoint.api_key` (the worker, building the request's
``Authorization`` header) ever decrypts it. Nothing shows it: no page, API answer,
export, provenance or log line. A key read from the workers' environment
(``api_key_env``) is an operator's: only a shared endpoint names one, from
``ENDPOINT_KEY_ENV_ALLOWED``, and it is sent only to the base URL an admin saved with
it (``api_key_env_url``).
"""

from __future__ import annotations

import base64
import functools
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from scoring.lm.served.spec import BOUNDS
from studies.models.datasets import unique_name_per_owner

# an endpoint's limits and prices: what its forms, API and command set beside its address
LIMIT_FIELDS = (
    "max_concurrency",
    "rpm",
    "tpm",
    "price_in",
    "price_out",
    "batch_price_in",
    "batch_price_out",
    "timeout",
)
ENV_NAME = RegexValidator(r"^[A-Za-z_][A-Za-z0-9_]*$", "An environment variable's name.")
KEY_FILE_NAME = "endpoint.key"  # under DATA_DIR: the generated key, when none is set


class KeyUnavailable(Exception):
    """The stored key cannot be decrypted (the secret it was encrypted with changed)."""


def finite(value: float) -> None:
    if not math.isfinite(value):
        raise ValidationError("Give a finite number.")


def bounded(name: str) -> list[Any]:
    """The validators of a limit or price: finite, within :data:`BOUNDS` (documented)."""
    low, high = BOUNDS[name]
    return [finite, MinValueValidator(low), MaxValueValidator(high)]


def legacy_key(secret: str) -> Fernet:
    """The key earlier versions derived from ``SECRET_KEY`` (read only: a key stored
    with it is re-encrypted by the migration or ``endpoint rekey``)."""
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"concordia-endpoints", info=b"api-key"
    ).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def generated_key(folder: Path) -> str:
    """The key in ``folder/endpoint.key``, generated there (mode 0600) the first time:
    written to a temporary file and linked into place, so concurrent first uses by
    several processes agree on one key."""
    path = folder / KEY_FILE_NAME
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{KEY_FILE_NAME}.{os.getpid()}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(Fernet.generate_key().decode())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process was first: its key is the key
        finally:
            temporary.unlink()
    return path.read_text(encoding="utf-8").strip()


@functools.cache
def _fernet(current: str, previous: tuple[str, ...], secret: str) -> MultiFernet:
    try:
        keys = [Fernet(key.encode()) for key in (current, *previous)]
    except ValueError as exc:
        raise ImproperlyConfigured(
            "ENDPOINT_KEY (or ENDPOINT_KEY_PREVIOUS) is not a Fernet key: generate one with "
            "python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key()"
            ".decode())'"
        ) from exc
    return MultiFernet([*keys, legacy_key(secret)])


def fernet() -> MultiFernet:
    """The cipher of stored API keys: encrypts with ``ENDPOINT_KEY`` (else the key
    generated into the data folder); decrypts with it, ``ENDPOINT_KEY_PREVIOUS`` and the
    key earlier versions derived from ``SECRET_KEY``."""
    current = str(getattr(settings, "ENDPOINT_KEY", "") or "")
    if not current:
        current = generated_key(Path(settings.DATA_DIR))
    previous = tuple(getattr(settings, "ENDPOINT_KEY_PREVIOUS", ()) or ())
    return _fernet(current, previous, settings.SECRET_KEY)


def rekeyed(token: str) -> str:
    """``token`` (a stored key) encrypted again with the current key (rotation)."""
    return fernet().rotate(token.encode()).decode()


def check_base_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port out of range)
    except ValueError as exc:
        raise ValidationError(f"Not a URL: {exc}.") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Give the server's http(s) URL, e.g. http://gpu-1:8000.")
    if parts.username or parts.password:
        raise ValidationError("Put no credentials in the URL; give the API key instead.")


class Endpoint(models.Model):
    """An OpenAI-compatible endpoint serving one model, with its limits and prices. An
    admin's shared endpoint has no owner; a researcher's own is theirs alone (another
    researcher neither sees nor uses it). Names are unique per owner."""

    class Protocol(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible (vLLM, SGLang, hosted APIs)"

    name = models.SlugField(max_length=100)
    protocol = models.CharField(max_length=16, choices=Protocol.choices, default=Protocol.OPENAI)
    base_url = models.CharField(
        max_length=500,
        validators=[check_base_url],
        help_text="The server's root, e.g. http://gpu-1:8000 (a trailing /v1 is fine).",
    )
    model_id = models.CharField(max_length=200, help_text="The model id the server serves.")
    api_key_encrypted = models.TextField(blank=True, editable=False)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[ENV_NAME],
        help_text="A shared endpoint's only: the environment variable the workers read the "
        "key from (one ENDPOINT_KEY_ENV_ALLOWED lists).",
    )
    api_key_env_url = models.CharField(
        max_length=500,
        blank=True,
        editable=False,
        help_text="The base URL an admin saved with api_key_env: the only one it is sent to.",
    )
    max_concurrency = models.PositiveIntegerField(
        default=8, validators=bounded("max_concurrency"), help_text="Requests at once (1-256)."
    )
    rpm = models.PositiveIntegerField(
        null=True, blank=True, validators=bounded("rpm"), help_text="Requests a minute."
    )
    tpm = models.PositiveIntegerField(
        null=True, blank=True, validators=bounded("tpm"), help_text="Tokens a minute."
    )
    price_in = models.FloatField(
        default=0.0,
        validators=bounded("price_in"),
        help_text="Per million input tokens (at most 10,000).",
    )
    price_out = models.FloatField(
        default=0.0,
        validators=bounded("price_out"),
        help_text="Per million output tokens (at most 10,000).",
    )
    # what its batch interface charges (a run written as a batch file: usually half);
    # empty: no batch price given. Bounded as the online prices are.
    batch_price_in = models.FloatField(
        null=True,
        blank=True,
        validators=bounded("price_in"),
        help_text="Per million input tokens through the batch interface (optional).",
    )
    batch_price_out = models.FloatField(
        null=True,
        blank=True,
        validators=bounded("price_out"),
        help_text="Per million output tokens through the batch interface (optional).",
    )
    timeout = models.FloatField(
        default=60.0,
        validators=bounded("timeout"),
        help_text="Seconds per request, the whole answer included (0.1-600).",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="endpoints",
        help_text="Empty: shared by an admin with every researcher.",
    )
    capabilities = models.JSONField(
        default=dict, blank=True, help_text="What the last probe found."
    )
    probed_at = models.DateTimeField(null=True, blank=True)
    probe_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="A probe waits for an io worker since then."
    )
    probe_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            *unique_name_per_owner("endpoint_unique_name_per_owner", "endpoint_unique_shared_name"),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="endpoint_concurrency_positive"
            ),
            # the documented bounds (BOUNDS), for every writer: on PostgreSQL NaN sorts
            # above every number, so it fails the upper bounds too
            models.CheckConstraint(
                condition=Q(
                    max_concurrency__lte=BOUNDS["max_concurrency"][1],
                    timeout__gte=BOUNDS["timeout"][0],
                    timeout__lte=BOUNDS["timeout"][1],
                    price_in__gte=0,
                    price_in__lte=BOUNDS["price_in"][1],
                    price_out__gte=0,
                    price_out__lte=BOUNDS["price_out"][1],
                ),
                name="endpoint_settings_bounded",
            ),
            models.CheckConstraint(
                condition=(
                    Q(batch_price_in__isnull=True)
                    | Q(batch_price_in__gte=0, batch_price_in__lte=BOUNDS["price_in"][1])
                )
                & (
                    Q(batch_price_out__isnull=True)
                    | Q(batch_price_out__gte=0, batch_price_out__lte=BOUNDS["price_out"][1])
                ),
                name="endpoint_batch_prices_bounded",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Endpoint {self.pk}: {self.name} ({self.model_id})>"

    @property
    def has_batch_price(self) -> bool:
        """Whether a batch price was given (either one: the other counts as 0)."""
        return self.batch_price_in is not None or self.batch_price_out is not None

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)

    def set_api_key(self, key: str | None) -> None:
        """Store ``key`` encrypted (empty or None: no stored key). Save afterwards."""
        self.api_key_encrypted = fernet().encrypt(key.encode()).decode() if key else ""

    def api_key(self) -> str | None:
        """The stored key, decrypted (the worker's request header only)."""
        if not self.api_key_encrypted:
            return None
        try:
            return fernet().decrypt(self.api_key_encrypted.encode()).decode()
        except InvalidToken as exc:
            raise KeyUnavailable(
                f"the stored API key of endpoint {self.name!r} cannot be decrypted (did "
                "ENDPOINT_KEY change without ENDPOINT_KEY_PREVIOUS keeping the old one?): "
                "store it again"
            ) from exc

    @property
    def host(self) -> str:
        """The host (and port) of the base URL: what provenance records."""
        return urlsplit(self.base_url).netloc.rsplit("@", 1)[-1]

    def parts(self) -> SplitResult:
        """The base URL's parts (its ``hostname`` and ``port`` for the egress check)."""
        return urlsplit(self.base_url)


class ServedResponse(models.Model):
    """A served model's answer to one exact request (the response cache): a repeated,
    resumed or recovered run never pays for it twice. ``key`` is
    :func:`scoring.lm.served.cache.cache_key` (who answered and for whom, the model id
    and version, route and request body)."""

    key = models.CharField(max_length=64, primary_key=True)
    model_id = models.CharField(max_length=200, db_index=True)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model_id} {self.key[:12]}"

    @classmethod
    def lookup_many(cls, keys: list[str]) -> dict[str, dict[str, Any]]:
        rows = cls.objects.filter(key__in=keys).values_list("key", "response")
        return {key: value for key, value in rows if isinstance(value, dict)}
