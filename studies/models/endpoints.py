"""Served endpoints (an OpenAI-compatible server: vLLM, SGLang, a hosted API) that runs
may score with, and the responses they gave (the persistent response cache).

An endpoint's API key is write-only: :meth:`Endpoint.set_api_key` encrypts it (Fernet,
from ``cryptography``) with a key derived from ``SECRET_KEY`` by HKDF, or read from the
file ``ENDPOINT_KEY_FILE`` names; only :meth:`Endpoint.api_key` (the worker, building
the request's ``Authorization`` header) ever decrypts it. Nothing shows it: no page,
API answer, export, provenance or log line.
"""

from __future__ import annotations

import base64
import functools
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from studies.models.datasets import unique_name_per_owner

# an endpoint's limits and prices: what its forms, API and command set beside its address
LIMIT_FIELDS = ("max_concurrency", "rpm", "tpm", "price_in", "price_out", "timeout")
ENV_NAME = RegexValidator(r"^[A-Za-z_][A-Za-z0-9_]*$", "An environment variable's name.")


class KeyUnavailable(Exception):
    """The stored key cannot be decrypted (the secret it was encrypted with changed)."""


@functools.cache
def _fernet(secret: str, key_file: str) -> Fernet:
    if key_file:
        return Fernet(Path(key_file).read_text(encoding="utf-8").strip().encode())
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"concordia-endpoints", info=b"api-key"
    ).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def fernet() -> Fernet:
    """The cipher of stored API keys: ``ENDPOINT_KEY_FILE``'s key, else one derived
    from ``SECRET_KEY``."""
    return _fernet(settings.SECRET_KEY, str(getattr(settings, "ENDPOINT_KEY_FILE", "") or ""))


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
        help_text="Or: the environment variable the worker reads the key from.",
    )
    max_concurrency = models.PositiveIntegerField(default=8, validators=[MinValueValidator(1)])
    rpm = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Requests a minute."
    )
    tpm = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Tokens a minute."
    )
    price_in = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0)], help_text="Per million input tokens."
    )
    price_out = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0)], help_text="Per million output tokens."
    )
    timeout = models.FloatField(
        default=60.0, validators=[MinValueValidator(0.1)], help_text="Seconds per request."
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
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Endpoint {self.pk}: {self.name} ({self.model_id})>"

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
                "SECRET_KEY or ENDPOINT_KEY_FILE change?): store it again"
            ) from exc

    @property
    def host(self) -> str:
        """The host (and port) of the base URL: what provenance records."""
        return urlsplit(self.base_url).netloc.rsplit("@", 1)[-1]


class ServedResponse(models.Model):
    """A served model's answer to one exact request (the response cache): a repeated,
    resumed or recovered run never pays for it twice. ``key`` is
    :func:`scoring.lm.served.cache.cache_key` (the model id, route and request body)."""

    key = models.CharField(max_length=64, primary_key=True)
    model_id = models.CharField(max_length=200, db_index=True)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model_id} {self.key[:12]}"

    @classmethod
    def lookup(cls, key: str) -> dict[str, Any] | None:
        found = cls.objects.filter(key=key).values_list("response", flat=True).first()
        return found if isinstance(found, dict) else None
