"""Which database sessions are open, where the database can tell (PostgreSQL).

A RUNNING import names the session of the worker importing it. Its write is one
transaction, so it writes no heartbeat; but when that session is gone (the database
restarted, or the worker's connection was cut) the import is gone with it, rolled back,
and the sweeper can take it back at once instead of waiting out ``IMPORT_LEASE_SECONDS``.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

_SESSIONS = "SELECT pid, backend_start FROM pg_stat_activity WHERE datname = current_database()"


def _name(pid: int, started: datetime) -> str:
    return f"{pid}@{started.isoformat()}"


def current() -> str:
    """This connection's session ('' where the database has none to ask about: SQLite)."""
    if connection.vendor != "postgresql":
        return ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        pid, started = cursor.fetchone()
    return _name(pid, started)


def open_sessions() -> set[str] | None:
    """The sessions open on this database now (None where the database cannot say)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(_SESSIONS)
        return {_name(pid, started) for pid, started in cursor.fetchall()}
