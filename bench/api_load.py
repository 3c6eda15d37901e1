"""Load benchmark of the REST API: researchers reading cached correlations while
annotators post judgments, all at once, on a real server.

Run from the repository root (PostgreSQL on 127.0.0.1:5432, Redis on 127.0.0.1:6379)::

    .venv/bin/python bench/api_load.py              # 20 clients, 3 runs of 15 s
    .venv/bin/python bench/api_load.py --quick      # 1 run of 6 s

Like ``bench/annotate_load.py`` (whose database, server and integrity-check pieces it
reuses) it creates a throwaway PostgreSQL database (dropped at the end) and serves the
app with gunicorn (``gthread``, ``DEBUG=false``), with the cache in Redis database
``--cache-db`` (flushed before and after). The demo dataset is imported and its
correlation matrix computed once (the cache a page or the command fills); then
``--clients`` token-authenticated clients (threads, stdlib ``http.client``) run for
``--seconds``: half of them researchers reading the matrix
(``GET /api/datasets/{id}/correlations/``), half annotators leasing an item
(``POST …/next/``) and submitting their answers (``POST …/submit/``).

Each client pauses ``--think`` seconds (uniform) before each request, as people reading
a table or an item do; a last run without pauses shows the saturated server.
Printed, median (min-max) over the runs: p50 and p95 latency per request kind, requests
per second, HTTP errors (any 5xx fails the run), and the integrity check of every run:
each submit the client saw accepted is one done assignment with one judgment per aspect
(none lost, none duplicated), no item over its overlap. The baseline is the same cached
read by a single client on the idle server, measured in the same run; the ratio shows
what the concurrent load costs. Target: p95 < 150 ms for a cached correlation read.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_range  # noqa: E402
from annotate_load import (  # noqa: E402
    Annotator,
    admin_sql,
    check,
    new_campaign,
    serve,
    setup_django,
    tear_down,
)

TARGET_P95_MS = 150.0


def call(
    port: int, token: str, method: str, path: str, body: Any = None
) -> tuple[int, bytes, float]:
    """One request on a fresh connection: (status, body, seconds)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    started = time.perf_counter()
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        content = response.read()
        return response.status, content, time.perf_counter() - started
    finally:
        conn.close()


class Tally:
    """Latencies and statuses of one client, by request kind."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {"read": [], "next": [], "submit": []}
        self.statuses: Counter[tuple[str, int]] = Counter()


def pause(think: tuple[float, float], rng: random.Random) -> None:
    if think[1]:
        time.sleep(rng.uniform(*think))


def reader(
    port: int,
    token: str,
    path: str,
    expected: bytes,
    deadline: float,
    think: tuple[float, float],
    rng: random.Random,
    tally: Tally,
) -> None:
    while time.monotonic() < deadline:
        pause(think, rng)
        status, body, seconds = call(port, token, "GET", path)
        tally.latencies["read"].append(seconds)
        tally.statuses[("read", status)] += 1
        if status == 200 and body != expected:
            tally.statuses[("read-different-body", status)] += 1


def annotator(
    port: int,
    token: str,
    who: Annotator,
    campaign: int,
    aspects: list[int],
    deadline: float,
    think: tuple[float, float],
    rng: random.Random,
    tally: Tally,
) -> None:
    while time.monotonic() < deadline:
        pause(think, rng)
        status, body, seconds = call(
            port, token, "POST", f"/api/annotate/campaigns/{campaign}/next/"
        )
        tally.latencies["next"].append(seconds)
        tally.statuses[("next", status)] += 1
        if status != 200:
            return  # 204: nothing left for this annotator
        assignment = json.loads(body)
        pause(think, rng)  # reading the item
        answers = {str(pk): rng.randint(1, 5) for pk in aspects}
        status, body, seconds = call(
            port,
            token,
            "POST",
            f"/api/annotate/assignments/{assignment['id']}/submit/",
            {"answers": answers},
        )
        tally.latencies["submit"].append(seconds)
        tally.statuses[("submit", status)] += 1
        if status == 200:
            who.submitted.append(assignment["item"])
        elif status == 409:
            who.lost_leases += 1
        else:
            who.errors.append(f"submit {status}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(int(len(ordered) * q), len(ordered) - 1)] if ordered else float("nan")


def one_run(
    port: int,
    setup: dict[str, Any],
    run: int,
    seconds: float,
    clients: int,
    readers: int,
    think: tuple[float, float],
) -> dict[str, Any]:
    from studies.services.tokens import token_for

    owner, users = setup["owner"], setup["annotators"][: clients - readers]
    campaign = new_campaign(owner, users, run)
    aspects = list(campaign.aspects.values_list("pk", flat=True))
    people = [Annotator(u.username, "") for u in users]
    tokens = [token_for(u).key for u in users]
    tallies = [Tally() for _ in range(clients)]
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=reader,
            args=(
                port,
                setup["owner_token"],
                setup["path"],
                setup["body"],
                deadline,
                think,
                random.Random(k),
                tallies[k],
            ),
        )
        for k in range(readers)
    ]
    threads += [
        threading.Thread(
            target=annotator,
            args=(
                port,
                tokens[k],
                people[k],
                campaign.pk,
                aspects,
                deadline,
                think,
                random.Random(run * 100 + k),
                tallies[readers + k],
            ),
        )
        for k in range(clients - readers)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    lat = {
        kind: [x for t in tallies for x in t.latencies[kind]] for kind in ("read", "next", "submit")
    }
    statuses = sum((t.statuses for t in tallies), Counter())
    return {
        "per_s": {kind: len(v) / elapsed for kind, v in lat.items()},
        "p50": {kind: percentile(v, 0.5) for kind, v in lat.items()},
        "p95": {kind: percentile(v, 0.95) for kind, v in lat.items()},
        "statuses": statuses,
        "server_errors": sum(n for (_, code), n in statuses.items() if code >= 500),
        "lost_leases": sum(p.lost_leases for p in people),
        "problems": check(campaign, people, len(aspects)) + [e for p in people for e in p.errors],
    }


def prepare(tmp: Path, n_annotators: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from studies.demo_data import write_demo_jsonl
    from studies.models import Dataset
    from studies.services.imports import ImportOptions, import_file
    from studies.services.tokens import token_for

    users = get_user_model().objects
    owner = users.create(username="bench-owner")
    Group.objects.get(name="researcher").user_set.add(owner)
    annotators = users.bulk_create(
        get_user_model()(username=f"bench{k:02d}") for k in range(n_annotators)
    )
    Group.objects.get(name="annotator").user_set.add(*annotators)
    path = tmp / "demo.jsonl"
    write_demo_jsonl(path)
    import_file(
        path,
        ImportOptions(
            dataset="demo",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=owner,
        ),
    )
    dataset = Dataset.objects.get(name="demo")
    return {
        "owner": owner,
        "annotators": annotators,
        "owner_token": token_for(owner).key,
        "path": f"/api/datasets/{dataset.pk}/correlations/?level=sample&coef=spearman",
    }


def flush_cache(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def summary(runs: list[dict[str, Any]], baseline: list[float], target: bool = True) -> None:
    def fig(key: str, kind: str, fmt: str = ".1f") -> str:
        return median_range((r[key][kind] for r in runs), fmt)

    base = statistics.median(baseline) * 1000
    print(f"{len(runs)} run(s); median (min-max) over runs")
    for kind, label in (
        ("read", "cached correlation read"),
        ("next", "lease next item"),
        ("submit", "submit judgments"),
    ):
        print(
            f"  {label:25} p50 {fig('p50', kind)} ms   p95 {fig('p95', kind)} ms   {fig('per_s', kind)} req/s"
        )
    read_p50 = statistics.median(r["p50"]["read"] for r in runs)
    read_p95 = statistics.median(r["p95"]["read"] for r in runs)
    print(
        f"  baseline: the same read by one client on the idle server, median {base:.1f} ms; "
        f"loaded p50 / baseline = {read_p50 / base:.2f}x"
    )
    verdict = "met" if read_p95 < TARGET_P95_MS else "MISSED"
    if target:
        print(
            f"  target p95 < {TARGET_P95_MS:.0f} ms for the cached read: {verdict} ({read_p95:.1f} ms)"
        )
    statuses = sum((r["statuses"] for r in runs), Counter())
    print(f"  statuses       {dict(sorted(statuses.items()))}")
    errors = sum(r["server_errors"] for r in runs)
    print(f"  5xx            {errors}")
    lost = sum(r["lost_leases"] for r in runs)
    if lost:
        print(f"  refused late   {lost} answers on lapsed leases (409)")
    problems = [p for r in runs for p in r["problems"]]
    print(
        "  integrity      "
        + (
            "; ".join(problems)
            if problems
            else "ok: every accepted submit stored once, none lost, none duplicated, no item over its overlap"
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--readers", type=int, default=None, help="default: half the clients")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--think", default="0.2,1.0", help="pause range in seconds between a client's requests"
    )
    parser.add_argument(
        "--no-think-seconds", type=float, default=8, help="0 to skip the saturated run"
    )
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--database", default="concordia_bench_api")
    parser.add_argument("--cache-db", type=int, default=10, help="Redis database for the cache")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds, args.no_think_seconds = 1, 6, 4
    think = tuple(float(x) for x in args.think.split(","))
    readers = args.clients // 2 if args.readers is None else args.readers
    if args.database in {"test", "postgres", "template0", "template1"}:
        raise SystemExit("use a database of its own: it is dropped at the end")
    cache_url = f"redis://127.0.0.1:6379/{args.cache_db}"
    os.environ["CACHE_URL"] = cache_url
    flush_cache(cache_url)
    admin_sql(f'DROP DATABASE IF EXISTS "{args.database}"')
    admin_sql(f'CREATE DATABASE "{args.database}"')
    server = None
    try:
        with tempfile.TemporaryDirectory(prefix="api-bench-") as tmp:
            env = {**setup_django(args.database, Path(tmp)), "CACHE_URL": cache_url}
            setup = prepare(Path(tmp), args.clients - readers)
            server, port = serve(env, args.workers, args.threads)
            status, body, cold = call(
                port, setup["owner_token"], "GET", setup["path"]
            )  # computes and caches
            assert status == 200, body[:500]
            setup["body"] = body
            baseline = [
                call(port, setup["owner_token"], "GET", setup["path"])[2] for _ in range(30)
            ]
            load = os.getloadavg()
            print(
                f"{args.clients} clients ({readers} reading correlations, {args.clients - readers} annotating), "
                f"gunicorn gthread {args.workers}x{args.threads} on PostgreSQL, cache in Redis, "
                f"{os.cpu_count()} CPUs; {args.seconds:g} s per run; cold matrix {cold * 1000:.0f} ms "
                f"({len(body) // 1024} KiB)"
            )
            print(f"with think time (uniform {think[0]:g}-{think[1]:g} s before each request):")
            runs = [
                one_run(port, setup, k, args.seconds, args.clients, readers, think)  # type: ignore[arg-type]
                for k in range(args.runs)
            ]
            summary(runs, baseline)
            if args.no_think_seconds:
                print("without think time (saturated: each client sends its next request at once):")
                saturated = [
                    one_run(
                        port, setup, 50, args.no_think_seconds, args.clients, readers, (0.0, 0.0)
                    )
                ]
                summary(saturated, baseline, target=False)
                runs += saturated
            after = os.getloadavg()
            print(
                f"  load average   {load[0]:.2f} before, {after[0]:.2f} after (1 min; the machine is shared)"
            )
            if any(r["server_errors"] or r["problems"] for r in runs):
                raise SystemExit(1)
    finally:
        tear_down(server, args.database)
        flush_cache(cache_url)


if __name__ == "__main__":
    main()
