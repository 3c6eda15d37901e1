"""Typed readers for settings taken from environment variables.

Each helper rejects a malformed value loudly instead of silently falling back, and
accepts a ``NAME_FILE`` variable pointing at a file holding the value (Docker secrets).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class EnvError(ValueError):
    """Raised when an environment variable holds a value of the wrong shape."""


def env_str(name: str, default: str | None = None) -> str | None:
    """Return ``name`` from the environment, or the content of ``name_FILE``, or ``default``."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise EnvError(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = env_str(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise EnvError(f"{name}={raw!r} is not a boolean (use one of 1/0, true/false, yes/no, on/off)")


def _env_number(name: str, default: Any, convert: Any, kind: str, minimum: Any) -> Any:
    """The variable read with ``convert`` (``int`` or ``float``), at least ``minimum``."""
    raw = env_str(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = convert(raw)
    except ValueError as exc:
        raise EnvError(f"{name}={raw!r} is not {kind}") from exc
    if minimum is not None and value < minimum:
        raise EnvError(f"{name}={value} must be at least {minimum}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value: int = _env_number(name, default, int, "an integer", minimum)
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = env_str(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    value: float = _env_number(name, default, float, "a number", minimum)
    return value


def env_networks(name: str) -> tuple[IPNetwork, ...]:
    """A comma-separated list of IP addresses and networks (``10.0.0.2, 172.16.0.0/12,
    ::1``); empty when unset. An entry that is neither, or a network with host bits set
    (``10.0.0.1/8``: which was meant?), is refused with its position."""
    networks = []
    for position, item in enumerate(env_list(name, []), start=1):
        try:
            networks.append(ipaddress.ip_network(item))
        except ValueError as exc:
            raise EnvError(
                f"{name}: entry {position}, {item!r}, is not an IP address or network "
                f"(e.g. 10.0.0.2 or 172.16.0.0/12): {exc}"
            ) from exc
    return tuple(networks)
