"""Every model change has its migration: ``makemigrations --check`` finds nothing to write
(a shared choices class once changed another app's field without one)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_and_their_migrations_agree() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"a model change has no migration:\n{out.getvalue()}\n(exit {exc.code})")
    assert "No changes detected" in out.getvalue()
