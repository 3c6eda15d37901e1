"""The rules that keep served endpoints from being turned against the site: one place
that the page form, the admin, the API serializer and the command all call, and that
the worker checks again before it sends anything.

* **Keys.** A key read from the workers' environment (``api_key_env``) is an operator's
  secret: only a shared endpoint (no owner: an admin's) names one, only a variable that
  ``ENDPOINT_KEY_ENV_ALLOWED`` lists, and it is sent only to the base URL an admin saved
  with it (``api_key_env_url``, bound by :func:`bind_key_env` on an admin's save). A
  researcher's endpoint sends its own stored, encrypted key or none.
* **Egress.** A researcher's endpoint must resolve to public addresses
  (:class:`~scoring.lm.served.egress.EgressPolicy`), checked when it is saved and again
  by the worker at connect time, unless an operator allows its network
  (``ENDPOINT_ALLOWED_NETWORKS``) or host name (``ENDPOINT_ALLOWED_HOSTS``). Shared
  endpoints are the operator's, trusted to run on internal hosts (a vLLM beside the
  workers) and not checked.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError

from scoring.lm.served import EgressPolicy, EgressRefused
from studies.models import Endpoint


def egress_policy() -> EgressPolicy:
    """The deployment's policy for researchers' endpoints (settings' allow-lists)."""
    return EgressPolicy(
        allowed_networks=tuple(settings.ENDPOINT_ALLOWED_NETWORKS),
        allowed_hosts=frozenset(settings.ENDPOINT_ALLOWED_HOSTS),
    )


def egress_of(endpoint: Endpoint) -> EgressPolicy | None:
    """The policy the endpoint is reached under: None (trusted) for a shared one."""
    return None if endpoint.owner_id is None else egress_policy()


def egress_refusal(endpoint: Endpoint) -> str | None:
    """Why the endpoint's host may not be reached now (resolved), or None."""
    policy = egress_of(endpoint)
    if policy is None:
        return None
    try:
        parts = endpoint.parts()
        policy.check(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
    except ValueError:
        return None  # not a URL: the base URL's own validator says so
    except EgressRefused as exc:
        return str(exc)
    return None


def key_env_refusal(endpoint: Endpoint) -> str | None:
    """Why the endpoint may not read its key from ``api_key_env``, or None."""
    name = endpoint.api_key_env
    if not name:
        return None
    if endpoint.owner_id is not None:
        return (
            "Only a shared endpoint (an admin's) reads its key from the workers' environment; "
            "give this endpoint its own key instead."
        )
    allowed = settings.ENDPOINT_KEY_ENV_ALLOWED
    if name not in allowed:
        listed = ", ".join(f"${n}" for n in allowed) or "none"
        return (
            f"${name} is not a variable an endpoint may read its key from "
            f"(ENDPOINT_KEY_ENV_ALLOWED lists {listed})."
        )
    return None


def check_endpoint(endpoint: Endpoint) -> None:
    """Raise a ValidationError (by field) when the endpoint breaks the key or the egress
    policy. Forms, the serializer and the command call it before saving."""
    errors: dict[str, str] = {}
    key = key_env_refusal(endpoint)
    if key:
        errors["api_key_env"] = key
    where = egress_refusal(endpoint)
    if where:
        errors["base_url"] = f"Not reachable for a researcher's endpoint: {where}."
    if errors:
        raise ValidationError(errors)


def bind_key_env(endpoint: Endpoint) -> None:
    """An admin's save: the environment key goes to this base URL, and only there."""
    endpoint.api_key_env_url = endpoint.base_url if endpoint.api_key_env else ""


def env_key_refusal(endpoint: Endpoint) -> str | None:
    """Why the worker must not send the environment key of ``endpoint`` (checked before
    every use, whoever saved the row and however), or None."""
    refused = key_env_refusal(endpoint)
    if refused:
        return refused
    if endpoint.api_key_env_url != endpoint.base_url:
        return (
            f"its base URL is not the one an admin saved with ${endpoint.api_key_env}, so "
            "the key is not sent: an admin must save the endpoint again"
        )
    return None
