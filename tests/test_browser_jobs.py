"""Light work never waits behind model work (issue: an upload sat "Pending" for minutes
while a learned metric trained), nor does a short metric (issue 43: a 10-s ROUGE-L run
waited 34 min behind GPTScore and G-Eval). With the real worker layout of the demo (a
model worker, a quick worker, a light worker, …) busy on a long GPTScore run, a ROUGE-L
run sent after it finishes first, an upload imports and a matrix computes within
seconds, and the jobs page shows each lane's worker alive, the run, its progress and
ETA, with the "waiting" messages linking to it. Real workers, real Chromium."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import Browser, expect

from studies.models import Dataset, ImportJob, MetricRun
from studies.services.imports import ImportOptions, import_file
from studies.services.runs import RunRequest, cancel_run, start_run
from tests.browser import Watched
from tests.conftest import record
from tests.tiny_models import tiny_gpt2

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]

LONG_DOCS = 1600  # × 10 systems: GPTScore on the tiny model for minutes (cancelled at the end)


def _upload_lines() -> str:
    lines = []
    for d in range(6):
        for s in range(3):
            fields = record(f"u{d}", f"s{s}", output=f"Output {d} {s} " + "word " * s)
            fields["human"] = {"coherence": 1 + s + d % 2}
            fields["metrics"] = {"length": float(s + d)}
            lines.append(json.dumps(fields))
    return "\n".join(lines) + "\n"


def _wait(condition, timeout: float) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.2)
    return time.monotonic() - started


def test_an_upload_and_a_matrix_finish_in_seconds_while_a_long_model_run_holds_the_worker(
    live_server,
    browser: Browser,
    cast,
    celery_worker_process,
    tmp_path,
    write_jsonl,
    settings,
    capsys,
):
    settings.CONCORDIA = {**settings.CONCORDIA, "DASHBOARD_INLINE_SECONDS": 0.0}  # to a worker
    long_file = write_jsonl(
        [
            record(f"d{d:03d}", f"s{s}", output=f"The council approved budget {d} {s} today.")
            for d in range(LONG_DOCS)
            for s in range(10)
        ]
    )
    options = ImportOptions(
        dataset="long",
        task="summarization",
        file_format="jsonl",
        file_name=long_file.name,
        owner=cast["owner"],
    )
    import_file(long_file, options)
    long_run = start_run(
        Dataset.objects.get(name="long"),
        RunRequest(aspect="COH", model=tiny_gpt2(tmp_path / "tiny")),
        user=cast["owner"],
        local_paths=True,
    )
    try:
        _wait(lambda: MetricRun.objects.get(pk=long_run.pk).done >= 20, 300)
        rouge = start_run(  # sent after the long run, on the same dataset: done first
            Dataset.objects.get(name="long"), RunRequest(metric="rougeL"), user=cast["owner"]
        )
        # seconds on a quiet machine; queued behind the long run it would take its minutes
        rouge_seconds = _wait(lambda: MetricRun.objects.get(pk=rouge.pk).is_finished, 300)
        assert MetricRun.objects.get(pk=rouge.pk).status == "succeeded"
        assert MetricRun.objects.get(pk=long_run.pk).status == "running"

        researcher = Watched(browser, live_server.url)
        researcher.log_in("owner")
        page = researcher.page
        researcher.open("/jobs/")
        for lane in ("model", "quick", "light", "io"):  # each lane's worker reports itself
            expect(page.locator(f"#lane-{lane} li.worker.alive").first).to_be_visible(
                timeout=30_000
            )
        run_row = page.locator("#lane-model tr.job[data-kind=run]")
        expect(run_row).to_contain_text("running", timeout=10_000)
        expect(run_row).to_contain_text(f"/ {LONG_DOCS * 10}")
        expect(run_row).to_contain_text("owner")
        expect(page.locator("#lane-light")).to_contain_text("Idle")

        # the upload imports while the model worker is busy
        upload = tmp_path / "quick.jsonl"
        upload.write_text(_upload_lines())
        researcher.open("/datasets/upload/")
        page.set_input_files("input[name=file]", str(upload))
        page.fill("input[name=dataset]", "quick")
        page.select_option("select[name=task]", "summarization")
        started = time.monotonic()
        page.click("button:has-text('Upload and import')")
        expect(page.locator("#import-state")).to_have_text("Succeeded", timeout=30_000)
        import_seconds = time.monotonic() - started
        assert MetricRun.objects.get(pk=long_run.pk).status == "running"

        # a matrix the web server does not compute itself: the light worker's, in seconds
        quick = Dataset.objects.get(name="quick")
        started = time.monotonic()
        researcher.open(f"/datasets/{quick.pk}/correlations/?level=system&coef=kendall")
        waiting = page.locator("#matrix")
        if waiting.locator(".jobs-link").count():  # still queued: it says where to look
            assert waiting.locator(".jobs-link").get_attribute("href") == "/jobs/"
        expect(page.locator("#matrix-table")).to_be_visible(timeout=30_000)
        matrix_seconds = time.monotonic() - started
        long_run.refresh_from_db()
        assert long_run.status == "running" and long_run.done < long_run.total

        researcher.open("/jobs/")
        expect(run_row).to_contain_text("left")  # its ETA at its own rate
        researcher.collect()
        assert researcher.problems == [], researcher.problems
        with capsys.disabled():
            print(
                f"\nlight work beside a model run: ROUGE-L {rouge_seconds:.1f} s, import "
                f"{import_seconds:.1f} s, matrix {matrix_seconds:.1f} s; the run at "
                f"{long_run.done}/{long_run.total}"
            )
        assert ImportJob.objects.get(dataset=quick).status == "succeeded"
        page.close()  # no poll reaches the server once the test's database is gone
    finally:
        cancel_run(MetricRun.objects.get(pk=long_run.pk))
        _wait(
            lambda: (
                not MetricRun.objects.get(pk=long_run.pk).shards.filter(status="running").exists()
            ),
            60,
        )
