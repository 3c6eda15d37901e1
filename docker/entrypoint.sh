#!/usr/bin/env bash
# Entrypoint of the Concordia image. The first argument picks the role:
#
#   web          wait for the database, migrate (and load the demo if LOAD_DEMO=true),
#                then exec gunicorn on 0.0.0.0:8000
#   worker       wait for the database, then exec a Celery worker; extra arguments go
#                to `celery worker` (e.g. `worker --hostname gpu@%h`)
#   beat         wait for the database, then exec celery beat embedded in a one-task worker
#                on the `maintenance` queue: beat sends the periodic sweeper that recovers
#                lost runs and this worker runs it, so no run can delay it (run exactly
#                one); schedule file under CONCORDIA_DATA_DIR; extra arguments go to
#                `celery worker`
#   healthcheck  GET /login/ on the local web server; exit 0 when it answers 200
#   anything else is exec'd as given (`python manage.py shell`, `bash`, ...)
#
# Environment (besides the app's own settings, see evalsite/settings.py):
#   DB_WAIT_TIMEOUT      seconds to wait for PostgreSQL (default 60)
#   LOAD_DEMO            true: `manage.py demo --setup-only` after migrating (idempotent;
#                        creates users admin/admin, researcher/researcher, annotator/annotator)
#   WEB_CONCURRENCY      gunicorn worker processes (default 2)
#   GUNICORN_TIMEOUT     gunicorn worker timeout in seconds (default 120)
#   CELERY_QUEUES        queues the worker consumes (default cpu,gpu; quick-worker: quick;
#                        light-worker: light; io-worker: io)
#   CELERY_CONCURRENCY   worker processes (default: Celery's, one per CPU)
#   LOG_LEVEL            also the Celery worker's log level (default INFO)
set -euo pipefail

log() { printf '[entrypoint] %s\n' "$*" >&2; }

is_true() {
    case "${1,,}" in
        1 | true | yes | on) return 0 ;;
        *) return 1 ;;
    esac
}

# Wait until PostgreSQL accepts a connection, when DATABASE_URL (or DATABASE_URL_FILE,
# read as settings read it) names one; SQLite needs no waiting. Bounded, so a wrong URL
# fails the container visibly instead of hanging.
wait_for_database() {
    python - <<'PY'
import os
import sys
import time

url = os.environ.get("DATABASE_URL", "")
if os.environ.get("DATABASE_URL_FILE"):
    with open(os.environ["DATABASE_URL_FILE"], encoding="utf-8") as fh:
        url = fh.read().strip()
scheme, _, rest = url.partition("://")
if scheme not in ("postgres", "postgresql", "pgsql", "postgis"):
    sys.exit(0)

import psycopg

conninfo = "postgresql://" + rest  # libpq knows neither pgsql:// nor postgis://
timeout = float(os.environ.get("DB_WAIT_TIMEOUT") or 60)
deadline = time.monotonic() + timeout
while True:
    try:
        psycopg.connect(conninfo, connect_timeout=3).close()
        break
    except psycopg.OperationalError as exc:
        if time.monotonic() >= deadline:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            print(f"[entrypoint] database not reachable after {timeout:.0f} s: {reason}",
                  file=sys.stderr)
            sys.exit(1)
        time.sleep(1)
print("[entrypoint] database is up", file=sys.stderr)
PY
}

role="${1:-web}"
if [[ $# -gt 0 ]]; then shift; fi

case "$role" in
    web)
        wait_for_database
        log "applying migrations"
        python manage.py migrate --noinput
        if is_true "${LOAD_DEMO:-false}"; then
            log "LOAD_DEMO is set: loading the demo study and demo users"
            python manage.py demo --setup-only
        fi
        # --worker-tmp-dir: gunicorn's heartbeat files on tmpfs, not the overlay filesystem
        # (whose fsync stalls can make it kill healthy workers).
        exec gunicorn evalsite.wsgi:application \
            --bind 0.0.0.0:8000 \
            --workers "${WEB_CONCURRENCY:-2}" \
            --timeout "${GUNICORN_TIMEOUT:-120}" \
            --worker-tmp-dir /dev/shm \
            --access-logfile - \
            --error-logfile - \
            "$@"
        ;;
    worker)
        wait_for_database
        args=(--queues "${CELERY_QUEUES:-cpu,gpu}" --loglevel "${LOG_LEVEL:-INFO}")
        if [[ -n "${CELERY_CONCURRENCY:-}" ]]; then
            args+=(--concurrency "$CELERY_CONCURRENCY")
        fi
        exec celery -A evalsite worker "${args[@]}" "$@"
        ;;
    beat)
        wait_for_database
        # The solo pool: one sweep at a time, in the process itself (it loads no model).
        exec celery -A evalsite worker --queues maintenance --pool solo --hostname "beat@%h" \
            --loglevel "${LOG_LEVEL:-INFO}" --beat \
            --schedule "${CONCORDIA_DATA_DIR:-/data}/celerybeat-schedule" "$@"
        ;;
    healthcheck)
        # Sends the first ALLOWED_HOSTS entry as Host, so the check passes whatever hosts
        # the deployment allows (a plain request to localhost would get 400 otherwise).
        exec python - <<'PY'
import os
import sys
import urllib.request

hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
host = hosts[0].lstrip(".") if hosts and hosts[0] != "*" else "localhost"
# X-Forwarded-Proto: as the TLS proxy sends it, so that SECURE_SSL_REDIRECT answers 200.
request = urllib.request.Request(
    "http://127.0.0.1:8000/login/", headers={"Host": host, "X-Forwarded-Proto": "https"}
)
try:
    with urllib.request.urlopen(request, timeout=5) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception as exc:
    print(f"healthcheck failed: {exc}", file=sys.stderr)
    sys.exit(1)
PY
        ;;
    *)
        exec "$role" "$@"
        ;;
esac
