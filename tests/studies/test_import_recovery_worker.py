"""An import cut off by a database restart is imported again within a minute of the
database's return, with no human action (before, it stayed RUNNING for the hour of
``IMPORT_LEASE_SECONDS``).

The restart is a real fault on the test's own database of the machine's PostgreSQL
server, which other processes share and which is therefore never restarted: while a real
light worker writes the import (a pause before each batch keeps it writing), the
database refuses new connections (``ALLOW_CONNECTIONS false``) and every session on it
but the test's own is terminated, as a restart ends them all; once the worker has found
the database away, connections are allowed again. A maintenance worker runs the sweeper
every second. PostgreSQL only: SQLite has no server to lose.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection

from evalsite.celery import LIGHT_QUEUE
from studies.models import Dataset, ImportJob, Output, TaskKind
from studies.services import queue
from tests.conftest import record
from tests.studies.conftest import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.worker,
]
RECORDS = 300  # 60 documents × 5 systems, written in 30 batches of 10


def backends(where: str = "") -> list[tuple[int, object, object, str]]:
    """(pid, transaction start, query start, state) of the other sessions on the test
    database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, xact_start, query_start, state FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() {where}"
        )
        return list(cursor.fetchall())


def in_write_transaction(job: ImportJob) -> bool:
    """The job is RUNNING and its worker's session is inside the import's transaction."""
    job.refresh_from_db()
    if job.status != ImportJob.Status.RUNNING or not job.session:
        return False
    pid = int(job.session.split("@")[0])
    return any(
        xact is not None and (state == "idle in transaction" or xact < query)
        for _pid, xact, query, state in backends(f"AND pid = {pid}")
    )


class Database:
    """The test database as a restart sees it: :meth:`down` refuses new connections and
    ends every session on it but the test's own; :meth:`up` allows connections again. The
    switch is thrown from the server's ``postgres`` database (a database cannot refuse
    connections from inside itself)."""

    def __init__(self) -> None:
        db = connection.settings_dict
        self.name = db["NAME"]
        self.conninfo = psycopg.conninfo.make_conninfo(
            dbname="postgres",
            host=db["HOST"] or "127.0.0.1",
            port=db["PORT"] or 5432,
            user=db["USER"],
            password=db["PASSWORD"] or None,
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.own = cursor.fetchone()[0]

    def _run(self, sql: str, *params: object) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as admin:
            admin.execute(sql, params)

    def down(self) -> None:
        self._run(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        self._run(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> %s",
            self.name,
            self.own,
        )

    def up(self) -> None:
        self._run(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')


@pytest.fixture
def database() -> Iterator[Database]:
    """The test database, allowed connections again on the way out whatever happened."""
    if connection.vendor != "postgresql":
        pytest.skip("a database restart needs PostgreSQL (SQLite has no server); CI runs it there")
    found = Database()
    try:
        yield found
    finally:
        found.up()


def test_an_import_cut_off_by_a_database_restart_is_imported_again_within_a_minute(
    write_jsonl, cast, redis_server, workers, database
):
    records = [record(f"d{d:03d}", f"s{s}") for d in range(RECORDS // 5) for s in range(5)]
    path = write_jsonl(records)
    job = ImportJob.objects.create(
        upload=ContentFile(Path(path).read_bytes(), name="restart.jsonl"),
        original_name="restart.jsonl",
        file_format="jsonl",
        dataset_name="restart",
        task=TaskKind.objects.get(code="summarization"),
        created_by=cast["owner"],
    )
    w = workers(
        redis_server.start(appendonly=False),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        IMPORT_BATCH_SIZE="10",
        TEST_SLOW_CHUNK_SECONDS="0.3",
        IMPORT_LEASE_SECONDS="3600",  # the hour it used to take
        PENDING_GRACE_SECONDS="600",
    )
    light = w.start("light", LIGHT_QUEUE)
    w.start_maintenance()
    w.app.send_task(queue.IMPORT_UPLOAD, args=[job.pk], queue=LIGHT_QUEUE)
    wait_for(lambda: in_write_transaction(job), 120, w.logs)
    cut_session = job.session

    database.down()
    wait_for(lambda: not backends(), 30, w.logs)  # every other session has ended
    log = w.data_dir / "light.log"
    # the worker found its connection gone and the database away, and left the job
    wait_for(lambda: "the database is still away" in log.read_text(), 60, w.logs)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING and job.session == cut_session
    assert not Dataset.objects.filter(name="restart").exists()  # rolled back

    database.up()
    # within a minute of the database's return
    wait_for(lambda: ImportJob.objects.get(pk=job.pk).is_finished, 60, w.logs)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED, (job.errors, w.logs())
    assert Output.objects.filter(document__dataset__name="restart").count() == RECORDS
    assert job.summary["outputs"] == {"created": RECORDS, "updated": 0}
    (entry,) = job.recovery_log
    assert entry["connection"] and "database session ended" in entry["reason"], entry
    assert light.poll() is None  # the same worker imported it again
