"""Where the import benchmark writes, and how to undo it: a temporary data folder (with
the SQLite database) or, given a PostgreSQL ``DATABASE_URL``, a throwaway database
beside the one it names."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from _django import production_settings

# one per bench process: two benches on one server never drop each other's database
BENCH_DB = f"concordia_bench_ingest_{os.getpid()}"


@dataclass
class Environment:
    """Where the bench writes, and how to undo it."""

    tmp: Path
    database: str
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 -- report and carry on cleaning
                print(f"warning: cleanup failed: {exc}", file=sys.stderr)


def prepare_environment() -> Environment:
    """Point Django at a temporary data dir (and a throwaway PostgreSQL database if asked),
    with production's settings unless the environment gives its own."""
    tmp = Path(tempfile.mkdtemp(prefix="concordia-bench-"))
    env = Environment(tmp=tmp, database="SQLite (temporary file)")
    env.cleanups.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    os.environ["CONCORDIA_DATA_DIR"] = str(tmp / "data")
    production_settings()
    url = os.environ.get("DATABASE_URL")
    if url:
        scheme = urlsplit(url).scheme
        if not scheme.startswith("postgres"):
            env.close()
            raise SystemExit(
                f"DATABASE_URL with scheme {scheme!r}: only PostgreSQL is supported "
                "(unset DATABASE_URL to benchmark a temporary SQLite file)."
            )
        bench_url = urlsplit(url)._replace(path=f"/{BENCH_DB}").geturl()
        _create_database(url)
        env.cleanups.append(lambda: _drop_database(url))
        os.environ["DATABASE_URL"] = bench_url
        env.database = f"PostgreSQL ({_redact(bench_url)})"
    return env


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    return parts.geturl()


def _create_database(admin_url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(BENCH_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))


def _drop_database(admin_url: str) -> None:
    import psycopg
    from django.db import connections
    from psycopg import sql

    connections.close_all()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB))
        )
