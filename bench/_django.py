"""What the benchmarks that need the app share: production's settings (DEBUG off, a valid
random ``SECRET_KEY``), a throwaway data folder, and Django set up and migrated.

Most scripts call ``setup_django(tmp)`` (a throwaway SQLite database under ``tmp``);
one with a database of its own sets the environment itself and calls ``start_django``."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from _common import REPO


def secret_key() -> str:
    """A random key the settings accept with DEBUG off (50 characters or more, at least 5
    different ones, as Django's deploy check asks): 67 URL-safe characters."""
    return secrets.token_urlsafe(50)


def _unset(name: str) -> bool:
    """Whether neither ``name`` nor ``name_FILE`` (the settings read both) is given."""
    return not os.environ.get(name) and not os.environ.get(f"{name}_FILE")


def production_settings(allowed_hosts: str = "testserver") -> None:
    """Time what production runs: DEBUG off (with DEBUG on, Django also keeps the text of
    every query), a random valid ``SECRET_KEY`` and ``allowed_hosts``, each unless the
    environment gives its own."""
    if "DEBUG" not in os.environ and "DEBUG_FILE" not in os.environ:
        os.environ["DEBUG"] = "false"
    if _unset("SECRET_KEY"):
        os.environ["SECRET_KEY"] = secret_key()
    if _unset("ALLOWED_HOSTS"):
        os.environ["ALLOWED_HOSTS"] = allowed_hosts


def use_data_dir(tmp: Path) -> None:
    """Keep the app's data (SQLite database, caches) under ``tmp``, never ``./data``.

    The models stay where ``install_model`` put them (``CONCORDIA_MODEL_DIR``, else the
    repository's ``data/models``): the throwaway data folder has none."""
    os.environ.setdefault("CONCORDIA_MODEL_DIR", str(REPO / "data" / "models"))
    os.environ["CONCORDIA_DATA_DIR"] = str(tmp)
    os.environ.pop("DATABASE_URL", None)


def start_django(migrate: bool = True) -> None:
    """Set Django up with the settings the environment holds now, and migrate."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def setup_django(tmp: Path) -> None:
    """Set Django up with its data under ``tmp`` (a throwaway SQLite database), migrated."""
    use_data_dir(tmp)
    start_django()


def serve_static_unhashed() -> None:
    """Production settings without a collectstatic run: serve static names unhashed."""
    from django.conf import settings

    settings.STORAGES["staticfiles"] = {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
    }
