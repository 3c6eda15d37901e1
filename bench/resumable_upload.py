"""Resumable uploads at their acceptance size: a JSONL dataset of about 1 GB (long outputs)
sent to a real server (gunicorn, ``DEBUG=false``) and imported by a real Celery worker,
cut off at half the file and resumed, through the Python client and in Chromium.

Run from the repository root (SQLite and the file-system broker in a throwaway folder,
removed at the end with every file of the run; Chromium at ``$CHROMIUM_PATH`` or
/usr/bin/chromium)::

    .venv/bin/python bench/resumable_upload.py              # about 1 GB
    .venv/bin/python bench/resumable_upload.py --mb 100     # a quick run

``IMPORT_MAX_FILE_BYTES`` is raised to the file's size for the run (its default is
512 MiB); chunks are the server's ``REQUEST_MAX_BODY_BYTES`` (5 MiB).

Four uploads of the same file, one at a time:

- *plain chunks* (the baseline): a bare loop of ``PATCH`` requests through the API, no
  interruption, no checksum; the session is cancelled after the last byte (not imported);
- *client, cut at 50 %*: ``Client.upload(resumable=True)`` through a proxy that cuts the
  connection in the middle of the chunk holding the file's middle byte and then refuses
  every connection: the client gives up (``UploadInterrupted``) and a new client's
  ``resume_upload`` sends the rest once the proxy is back, completes it and waits for the
  worker's import;
- *Chromium, plain*: the upload page sends the whole file, uninterrupted, and follows its
  import (the browser's baseline);
- *Chromium, offline at 50 %*: the page loses the network (``set_offline``) at half the
  file for ``--outage`` seconds, resumes by itself, completes, and the page follows the
  import to its end.

Printed per upload: the seconds until every byte was on the server and the upload
completed (an interrupted run's outage included; for the client, its SHA-256 of the
file and the server's check of it too), MB/s, the ratio to the baseline measured in the
same run, the seconds from there to the end of the import, and the checks: the stored
file's SHA-256 is the source's, one import job, every record imported once. Also the
peak RSS of the gunicorn workers (the chunks stream to disk) and the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, print_table, scratch_dir  # noqa: E402
from _django import production_settings, start_django, use_data_dir  # noqa: E402

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "client" / "src"))
from concordia_client import Client, UploadInterrupted  # noqa: E402

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402
from tests.dropproxy import DropProxy  # noqa: E402

OUTPUT_WORDS = 20_000  # about 120 KB of text per output
PASSWORD = "bench-password-1"


def write_dataset(path: Path, megabytes: int) -> int:
    """A valid import file of about ``megabytes`` MB: outputs of ~120 KB; its records."""
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    text = " ".join(words[i % len(words)] for i in range(OUTPUT_WORDS))
    n = 0
    with path.open("w", encoding="utf-8") as out:
        while out.tell() < megabytes * 1_000_000:
            line = {
                "doc_id": f"d{n // 4}",
                "system_id": f"s{n % 4}",
                "source": f"Source document {n // 4}.",
                "references": [f"Reference {n // 4}."],
                "output": f"{n} {text}",
                "human": {"coherence": 1 + n % 5},
            }
            out.write(json.dumps(line) + "\n")
            n += 1
    return n


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def serve(env: dict[str, str]) -> tuple[list[subprocess.Popen[bytes]], int]:
    """gunicorn (2 gthread workers) and a light Celery worker (imports); the port."""
    from evalsite.celery import LIGHT_QUEUE, worker_command

    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    web = [str(gunicorn), "evalsite.wsgi:application", "-b", f"127.0.0.1:{port}"]
    web += ["-k", "gthread", "-w", "2", "--threads", "4", "--timeout", "120"]
    logs = Path(env["CONCORDIA_DATA_DIR"])
    procs = [
        subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, **env},
            stdout=(logs / f"{name}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for name, command in (
            ("web", web + ["--log-level", "warning"]),
            ("worker", worker_command("bench-light@%h", LIGHT_QUEUE)),
        )
    ]
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/login/", timeout=1)
            return procs, port
        except httpx.HTTPError:
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise SystemExit("gunicorn did not start") from None
            time.sleep(0.2)


def gunicorn_peak_rss_mib(web: subprocess.Popen[bytes]) -> float:
    """The largest peak RSS (VmHWM) among gunicorn's worker processes, in MiB."""
    peak = 0
    children = Path(f"/proc/{web.pid}/task/{web.pid}/children").read_text().split()
    for pid in children:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
    return peak / 1024


def plain_chunks(base: str, token: str, path: Path) -> float:
    """The baseline: a bare PATCH loop, uninterrupted; the session cancelled after."""
    size = path.stat().st_size
    headers = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        body = {"file_name": path.name, "size": size, "dataset": "plain"}
        session = http.post("/api/uploads/", json=body).raise_for_status().json()
        started = time.perf_counter()
        offset = 0
        with path.open("rb") as handle:
            while offset < size:
                chunk = handle.read(session["chunk_max"])
                answer = http.patch(
                    f"/api/uploads/{session['id']}/",
                    content=chunk,
                    headers={
                        "Content-Type": "application/offset+octet-stream",
                        "Upload-Offset": str(offset),
                    },
                ).raise_for_status()
                offset = int(answer.headers["Upload-Offset"])
        seconds = time.perf_counter() - started
        http.delete(f"/api/uploads/{session['id']}/").raise_for_status()
    return seconds


def client_cut_at_half(base: str, token: str, path: Path) -> dict[str, Any]:
    """Client upload cut mid-chunk at 50 % with the network then gone; resume_upload."""
    size = path.stat().st_size
    port = int(base.rsplit(":", 1)[1])
    proxy = DropProxy(("127.0.0.1", port))
    outage = {"begun": False}

    def progress(received: int, total: int) -> None:
        if proxy.cuts and not outage["begun"]:
            outage["begun"] = True
            proxy.go_down()  # the connection dropped; the network stays away

    try:
        started = time.perf_counter()
        with Client(proxy.url, token, timeout=120, max_retries=0) as api:
            proxy.cut_after(size // 2)
            try:
                api.upload(path, dataset="client", resumable=True, max_retries=1, progress=progress)
            except UploadInterrupted as exc:
                stopped = exc
            else:
                raise SystemExit("the client's upload was not interrupted")
        proxy.go_up()
        with Client(proxy.url, token, timeout=300, poll_interval=1.0) as api:
            job = api.resume_upload(stopped.session, path, wait=False, progress=progress)
            completed = time.perf_counter()
            job = api.wait_for_import(job, timeout=3600)
        imported = time.perf_counter()
    finally:
        proxy.close()
    return {
        "session": stopped.session,
        "stopped_at": stopped.offset,
        "sent": completed - started,
        "imported": imported - completed,
        "job": job.id,
    }


def chromium_run(base: str, path: Path, dataset: str, outage: float | None) -> dict[str, Any]:
    """The upload page in Chromium into ``dataset``, offline at 50 % for ``outage``
    seconds (None: never), followed to the end of the import. No request is routed
    through Playwright (that would copy every chunk through it)."""
    from playwright.sync_api import sync_playwright

    size = path.stat().st_size
    result: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(3_600_000)
        page.goto(base + "/login/")
        page.fill("input[name=username]", "bench")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(base + "/")
        page.goto(base + "/datasets/upload/")
        page.set_input_files("input[name=file]", str(path))
        page.fill("input[name=dataset]", dataset)
        started = time.perf_counter()
        page.click("button:has-text('Upload and import')")
        if outage is not None:
            bar = "document.getElementById('upload-bar').getAttribute('data-offset')"
            while int(page.evaluate(bar) or 0) < size // 2:
                page.wait_for_timeout(50)
            context.set_offline(True)
            result["offline_at"] = int(page.evaluate(bar) or 0)
            page.wait_for_timeout(outage * 1000)
            context.set_offline(False)
        page.wait_for_url("**/imports/*/")  # every byte sent, the upload completed
        sent = time.perf_counter()
        page.wait_for_selector("#import-state:has-text('Succeeded')")
        result.update(sent=sent - started, imported=time.perf_counter() - sent)
        browser.close()
    return result


def check(dataset: str, records: int, digest: str) -> str:
    """'ok' when the dataset holds every record once, from one job, of the same bytes."""
    from studies.models import Dataset, ImportJob, Output, UploadSession
    from studies.services.uploads import file_path

    jobs = ImportJob.objects.filter(dataset_name=dataset)
    job = jobs.get()
    outputs = Output.objects.filter(document__dataset=Dataset.objects.get(name=dataset)).count()
    session = UploadSession.objects.get(job=job)
    problems = []
    if jobs.count() != 1 or job.status != "succeeded":
        problems.append(f"{jobs.count()} jobs, {job.status}")
    if outputs != records or job.summary["outputs"]["created"] != records:
        problems.append(f"{outputs} outputs of {records}")
    if sha256_of(file_path(session)) != digest:
        problems.append("the stored file differs")
    return "ok" if not problems else "; ".join(problems)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1000, help="the file's size, in MB")
    parser.add_argument("--outage", type=float, default=5.0, help="Chromium's offline seconds")
    args = parser.parse_args()
    with scratch_dir("concordia-resumable-") as tmp:
        use_data_dir(tmp)
        production_settings("127.0.0.1,localhost")
        os.environ.pop("CELERY_BROKER_URL", None)  # the file-system broker under tmp
        os.environ.pop("CELERY_RESULT_BACKEND", None)
        env = {
            "CONCORDIA_DATA_DIR": str(tmp),
            "HTTPS": "false",
            "LOG_LEVEL": "WARNING",
            "STATIC_ROOT": str(tmp / "static"),
            "IMPORT_MAX_FILE_BYTES": str(args.mb * 1_000_000 + 10_000_000),
        }
        os.environ.update(env)
        start_django()
        from django.contrib.auth.models import Group, User
        from django.core.management import call_command

        from studies.services.tokens import token_for

        call_command("collectstatic", verbosity=0, interactive=False)
        user = User.objects.create_user("bench", password=PASSWORD)
        Group.objects.get(name="researcher").user_set.add(user)
        token = token_for(user).key

        source = tmp / "large.jsonl"
        started = time.perf_counter()
        records = write_dataset(source, args.mb)
        size, digest = source.stat().st_size, sha256_of(source)
        print(
            f"{source.name}: {size:,} bytes, {records:,} records "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        procs, port = serve({**os.environ, **env})
        base = f"http://127.0.0.1:{port}"
        try:
            baseline = plain_chunks(base, token, source)
            client = client_cut_at_half(base, token, source)
            browser_plain = chromium_run(base, source, "browser-plain", None)
            browser = chromium_run(base, source, "browser", args.outage)
            rss = gunicorn_peak_rss_mib(procs[0])
            checks = {
                name: check(name, records, digest)
                for name in ("client", "browser-plain", "browser")
            }
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
        mb = size / 1e6

        def row(name: str, sent: float, imported: float | None, note: str) -> list[str]:
            after = "" if imported is None else f"{imported:.1f}"
            return [name, f"{sent:.1f}", f"{mb / sent:.1f}", f"{sent / baseline:.2f}", after, note]

        print_table(
            ["upload", "s to send", "MB/s", "x plain", "s to import", "check"],
            [
                row("plain chunks (baseline)", baseline, None, "cancelled"),
                row(
                    "client, cut at 50 %, resume_upload",
                    client["sent"],
                    client["imported"],
                    f"{checks['client']} (stopped at byte {client['stopped_at']:,})",
                ),
                row(
                    "Chromium, plain",
                    browser_plain["sent"],
                    browser_plain["imported"],
                    checks["browser-plain"],
                ),
                row(
                    f"Chromium, offline {args.outage:g} s at 50 %",
                    browser["sent"],
                    browser["imported"],
                    f"{checks['browser']} (offline at byte {browser['offline_at']:,})",
                ),
            ],
            left=1,
        )
        print(f"gunicorn workers' peak RSS: {rss:.0f} MiB; load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
