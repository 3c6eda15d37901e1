"""What the benchmarks that need the app share: Django on a throwaway SQLite database
(imported by ``learned_metric.py`` and ``routing.py``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def setup_django(tmp: Path) -> None:
    """Set Django up with its data (SQLite database, caches) under ``tmp``, migrated.

    The models stay where ``install_model`` put them (``CONCORDIA_MODEL_DIR``, else the
    repository's ``data/models``): the throwaway data folder has none."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("CONCORDIA_MODEL_DIR", str(REPO / "data" / "models"))
    os.environ["CONCORDIA_DATA_DIR"] = str(tmp)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
