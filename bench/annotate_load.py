"""Load benchmark of the annotation queue: many annotators at once on a real server.

Run from the repository root (PostgreSQL must listen on 127.0.0.1:5432)::

    .venv/bin/python bench/annotate_load.py               # 50 annotators, 3 runs of 20 s
    .venv/bin/python bench/annotate_load.py --quick       # 1 run of 8 s

It creates a throwaway database (``--database``, dropped at the end), serves the app with
gunicorn (``gthread`` workers, ``DEBUG=false``), and lets ``--annotators`` simulated
annotators (threads, stdlib ``http.client``) each claim an item, think, submit their
Likert answers through the htmx endpoint (which stores them and hands back the next
item) and go on, for ``--seconds`` per run. Each run gets a fresh campaign (180
outputs, 2 aspects, overlap 3: small enough that a run fills the first judgment of
every item and goes on to the second, the queue's slower path).

Printed, median (min-max) over the runs: submits per second, p50 and p95 submit
latency (client side, the whole request). The think time is drawn uniformly from
``--think`` seconds: a fast keyboard annotator (real ones take longer, which only lowers
the load). A last run without think time shows the saturated server. After every run
the database is checked: every submit the client saw succeed is one done assignment
with one judgment per aspect (none lost, none duplicated), and no item has more done
assignments and live leases than the overlap. A last run gives 1-second leases, so
that many lapse while their answer is on the way. Target: p95 < 100 ms with think time.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO, median_range
from _django import secret_key, start_django

PG = "postgres://postgres@127.0.0.1:5432"
NEXT_SUBMIT = re.compile(r'hx-post="(/annotate/\d+/items/(\d+)/submit/)"')


@dataclass
class Annotator:
    username: str
    session: str
    csrf: str = field(default_factory=lambda: secrets.token_hex(16))  # a 32-character secret
    latencies: list[float] = field(default_factory=list)
    submitted: list[int] = field(default_factory=list)  # item ids the server accepted
    errors: list[str] = field(default_factory=list)
    lost_leases: int = 0


def admin_sql(statement: str) -> None:
    import psycopg

    with psycopg.connect(PG + "/postgres", autocommit=True) as conn:
        conn.execute(statement)


def setup_django(database: str, tmp: Path) -> dict[str, str]:
    env = {
        "DATABASE_URL": f"{PG}/{database}",
        "CONCORDIA_DATA_DIR": str(tmp),
        "DEBUG": "false",
        "SECRET_KEY": secret_key(),
        "ALLOWED_HOSTS": "127.0.0.1",
        "HTTPS": "false",  # gunicorn serves plain HTTP on the loopback: no redirect, plain cookies
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "STATIC_ROOT": str(tmp / "static"),
    }
    os.environ.update(env)
    start_django()
    from django.core.management import call_command

    call_command("collectstatic", verbosity=0, interactive=False)  # DEBUG=false: hashed names
    return env


def make_users(n_annotators: int) -> tuple[Any, list[Any]]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = get_user_model().objects
    owner = users.create(username="bench-owner")
    annotators = users.bulk_create(
        get_user_model()(username=f"bench{k:02d}") for k in range(n_annotators)
    )
    Group.objects.get(name="annotator").user_set.add(*annotators)
    return owner, annotators


def new_campaign(
    owner: Any, annotators: list[Any], run: int, docs: int = 60, systems: int = 3
) -> Any:
    """A fresh dataset (so that no run sees another's judgments) and its campaign."""
    from annotation.services.campaigns import CampaignSpec, create_campaign
    from studies.models import Aspect, Dataset, Document, Output, Study, TaskKind

    dataset = Dataset.objects.create(
        name=f"bench-{run}", task=TaskKind.objects.get(code="summarization"), owner=owner
    )
    documents = Document.objects.bulk_create(
        Document(dataset=dataset, doc_key=f"d{d:04d}", source=f"Source text {d}. " * 20)
        for d in range(docs)
    )
    Output.objects.bulk_create(
        Output(document=doc, system_id=f"s{s}", text=f"Summary {s} of {doc.doc_key}. " * 5)
        for doc in documents
        for s in range(systems)
    )
    study = Study.objects.create(name=f"bench {run}", dataset=dataset, owner=owner)
    aspects = list(Aspect.objects.filter(code__in=("COH", "FLU")))
    spec = CampaignSpec(
        name=f"run {run}", aspects=aspects, overlap=3, annotators=annotators, seed=run
    )
    return create_campaign(study, spec, owner)


def sessions(users: list[Any]) -> list[Annotator]:
    """Logged-in sessions made directly (no password hashing in the measured part)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    result = []
    for user in users:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        result.append(Annotator(user.username, store.session_key))
    return result


def request(
    port: int, who: Annotator, method: str, path: str, body: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        "Cookie": f"sessionid={who.session}; csrftoken={who.csrf}",
        "X-CSRFToken": who.csrf,
        "HX-Request": "true",
        "HX-Target": "annotate",
    }
    data = None
    if body is not None:
        data = urllib.parse.urlencode(body)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


def annotate(
    port: int,
    who: Annotator,
    campaign: int,
    aspects: list[int],
    deadline: float,
    think: tuple[float, float],
    rng: random.Random,
) -> None:
    status, headers, _ = request(port, who, "POST", f"/annotate/{campaign}/next/", {})
    match = re.search(r"/items/(\d+)/", headers.get("Location", ""))
    if status != 302 or match is None:
        who.errors.append(f"next: {status} {headers.get('Location', '')}")
        return
    path, item = f"/annotate/{campaign}/items/{match[1]}/submit/", int(match[1])
    while True:
        if think[1]:
            time.sleep(rng.uniform(*think))
        if time.monotonic() >= deadline:
            return
        answers = {f"aspect-{pk}": str(rng.randint(1, 5)) for pk in aspects}
        started = time.perf_counter()
        status, _, page = request(port, who, "POST", path, answers)
        who.latencies.append(time.perf_counter() - started)
        if status != 200:
            who.errors.append(f"submit: {status}")
            return
        if "Your answer was not saved" in page:
            who.lost_leases += 1  # the lease lapsed and others filled the item: refused
        else:
            who.submitted.append(item)
        following = NEXT_SUBMIT.search(page)
        if following is None:  # nothing left for this annotator
            return
        path, item = following[1], int(following[2])


def check(campaign: Any, annotators: list[Annotator], n_aspects: int) -> list[str]:
    """Every accepted submit is one done assignment with its judgments; no item over the overlap."""
    from django.db.models import Q
    from django.utils import timezone

    from annotation.models import Assignment
    from studies.models import Judgment

    problems = []
    done = Assignment.objects.filter(item__campaign=campaign, status="done")
    server = Counter(done.values_list("annotator__username", "item_id"))
    client = Counter((a.username, item) for a in annotators for item in a.submitted)
    if server != client:
        problems.append(f"done assignments differ from accepted submits: {len(server ^ client)}")
    judgments = Judgment.objects.filter(output__in=campaign.items.values("output_a"))
    per = Counter(judgments.values_list("annotator_id", "output_id"))
    if len(per) != done.count() or set(per.values()) - {n_aspects}:
        problems.append(f"{done.count()} done but {len(per)} judged outputs {set(per.values())}")
    live = Q(status="done") | Q(status="leased", expires_at__gt=timezone.now())
    per_item = Counter(
        Assignment.objects.filter(live, item__campaign=campaign).values_list("item_id", flat=True)
    )
    if per_item and max(per_item.values()) > campaign.overlap:
        problems.append(f"an item has {max(per_item.values())} > {campaign.overlap} annotators")
    return problems


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tear_down(server: subprocess.Popen[bytes] | None, database: str) -> None:
    """Stop the server and drop the benchmark's database."""
    if server is not None:
        server.terminate()
        server.wait(timeout=30)
    from django.db import connections

    connections.close_all()
    admin_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def serve(env: dict[str, str], workers: int, threads: int) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    cmd = [
        str(gunicorn),
        "evalsite.wsgi:application",
        "-b",
        f"127.0.0.1:{port}",
        "-k",
        "gthread",
        "-w",
        str(workers),
        "--threads",
        str(threads),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **env})
    for _ in range(200):
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/login/")
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("gunicorn did not start")


def one_run(
    port: int,
    owner: Any,
    users: list[Any],
    run: int,
    seconds: float,
    think: tuple[float, float],
    lease: int = 300,
) -> dict[str, Any]:
    from annotation.models import Campaign

    campaign = new_campaign(owner, users, run)
    Campaign.objects.filter(pk=campaign.pk).update(lease_seconds=lease)
    aspects = list(campaign.aspects.values_list("pk", flat=True))
    annotators = sessions(users)
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=annotate,
            args=(port, a, campaign.pk, aspects, deadline, think, random.Random(run * 1000 + k)),
        )
        for k, a in enumerate(annotators)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    latencies = sorted(x for a in annotators for x in a.latencies)
    errors = [e for a in annotators for e in a.errors]
    return {
        "submits": len(latencies),
        "per_s": len(latencies) / elapsed,
        "p50": 1000 * latencies[len(latencies) // 2] if latencies else float("nan"),
        "p95": 1000 * latencies[int(len(latencies) * 0.95)] if latencies else float("nan"),
        "errors": errors,
        "lost_leases": sum(a.lost_leases for a in annotators),
        "problems": check(campaign, annotators, len(aspects)),
    }


def summary(label: str, runs: list[dict[str, Any]]) -> None:
    def fig(key: str, fmt: str) -> str:
        return median_range((r[key] for r in runs), fmt)

    print(f"{label}: {len(runs)} run(s), {sum(r['submits'] for r in runs)} submits")
    print(f"  throughput     {fig('per_s', '.1f')} submits/s")
    print(f"  submit p50     {fig('p50', '.1f')} ms")
    print(f"  submit p95     {fig('p95', '.1f')} ms")
    errors = [e for r in runs for e in r["errors"]]
    problems = [p for r in runs for p in r["problems"]]
    print(f"  HTTP errors    {len(errors)} {Counter(errors).most_common(3) if errors else ''}")
    if any(r["lost_leases"] for r in runs):
        print(f"  refused late   {sum(r['lost_leases'] for r in runs)} answers on lapsed leases")
    print(
        "  integrity      "
        + (
            "; ".join(problems)
            if problems
            else "ok: none lost, none duplicated, no item over its overlap"
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--think", default="2,6", help="think time range in seconds")
    parser.add_argument("--no-think-seconds", type=float, default=8, help="0 to skip that run")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--database", default="concordia_bench_annotate")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds, args.no_think_seconds = 1, 8, 4
    if args.database in {"test", "postgres", "template0", "template1"}:
        raise SystemExit("use a database of its own: it is dropped at the end")
    think = tuple(float(x) for x in args.think.split(","))
    admin_sql(f'DROP DATABASE IF EXISTS "{args.database}"')
    admin_sql(f'CREATE DATABASE "{args.database}"')
    server = None
    try:
        with tempfile.TemporaryDirectory(prefix="annotate-bench-") as tmp:
            env = setup_django(args.database, Path(tmp))
            owner, users = make_users(args.annotators)
            server, port = serve(env, args.workers, args.threads)
            print(
                f"{args.annotators} annotators, gunicorn gthread {args.workers}x{args.threads} "
                f"on PostgreSQL, {os.cpu_count()} CPUs; think time uniform "
                f"{think[0]:g}-{think[1]:g} s per item, {args.seconds:g} s per run after a 3 s warm-up"
            )
            one_run(port, owner, users, 99, 3, (0.0, 0.0))  # warm-up: connections, templates
            runs = [
                one_run(port, owner, users, k, args.seconds, think)  # type: ignore[arg-type]
                for k in range(args.runs)
            ]
            summary("with think time", runs)
            if args.no_think_seconds:
                saturated = [one_run(port, owner, users, 100, args.no_think_seconds, (0.0, 0.0))]
                summary("without think time (saturated)", saturated)
            # 1-second leases and 0-1.5 s think time: many leases lapse while their answer
            # is on the way, the race the campaign lock must win
            stress = [one_run(port, owner, users, 101, 8, (0.0, 1.5), lease=1)]
            summary("lapsing leases (1 s leases, think 0-1.5 s)", stress)
    finally:
        tear_down(server, args.database)


if __name__ == "__main__":
    main()
