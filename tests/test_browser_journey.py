"""The researcher's whole day-one journey in a real Chromium with a real worker: upload a
file, create a study on it and invite an annotator, start a metric run and watch its
progress to the end, browse the outputs and open one, open a matrix cell, and export
the paper table. No CSP violation, console or script error on the way."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, expect

from studies.models import MetricRun, Study
from tests.browser import Watched

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def records() -> str:
    """8 documents × 4 systems with references and a coherence judgment: system s3 copies
    the reference and is judged best."""
    lines = []
    for d in range(8):
        reference = f"The council approved budget {d} after a long debate on schools."
        for s in range(4):
            output = reference if s == 3 else f"Budget {d} talk {'and schools ' * s}went on."
            lines.append(
                json.dumps(
                    {
                        "doc_id": f"doc{d}",
                        "system_id": f"s{s}",
                        "source": f"Source text {d}.",
                        "references": [reference],
                        "output": output,
                        "human": {"coherence": 1 + s + (d % 2) * 0.5},
                    }
                )
            )
    return "\n".join(lines) + "\n"


def test_a_researchers_first_day_from_upload_to_the_paper_table(
    live_server, browser: Browser, cast, celery_worker_process, tmp_path
):
    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page

    # upload: the worker imports it while the page polls
    page.click("text=Upload a file")
    upload = tmp_path / "day-one.jsonl"
    upload.write_text(records())
    page.set_input_files("input[name=file]", str(upload))
    page.fill("input[name=dataset]", "day-one")
    page.select_option("select[name=task]", "summarization")
    page.click("button:has-text('Upload and import')")
    expect(page.locator("#import-state")).to_have_text("Succeeded", timeout=60_000)
    page.click("text=Open day-one")
    expect(page.locator("#n-outputs")).to_have_text("32")
    dataset_url = page.url

    # a study on it, with an annotator invited
    page.click("#new-study")
    expect(page.locator("h1")).to_have_text("New study")
    page.fill("#id_name", "Day one")
    page.locator("input[name=aspects]").first.check()
    page.click("#create-study")
    expect(page.locator("h1")).to_contain_text("Members of")
    page.fill("#id_username", "annotator")
    page.click("#invite-member")
    expect(page.locator("#members")).to_contain_text("annotator")
    assert Study.objects.get(name="Day one").dataset.name == "day-one"

    # a ROUGE run (three runs), followed live to the end
    page.goto(dataset_url)
    page.click("#new-run")
    page.select_option("#id_metric", "rouge")
    page.click("button:has-text('Start')")
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#run-status")).to_have_text("Succeeded", timeout=90_000)
    expect(page.locator("#run-count")).to_have_text("32 / 32")
    assert (
        MetricRun.objects.filter(dataset__name="day-one", metric__startswith="rouge").count() == 3
    )

    # browse the outputs, filter by a system, open one
    page.goto(dataset_url)
    page.click("#browse-outputs")
    expect(page.locator("h1")).to_contain_text("documents and outputs")
    page.select_option("select[name=system]", "s3")
    researcher.settled()
    expect(page).to_have_url(re.compile(r"system=s3"))
    page.locator("table.outputs tbody tr a[href^='/outputs/']").first.click()
    expect(page).to_have_url(re.compile(r"/outputs/\d+/$"))
    expect(page.locator("main")).to_contain_text("rouge1")  # every run's score on it

    # the correlations matrix: open a cell's drill-down
    page.goto(dataset_url)
    page.click("#open-correlations")
    cell = page.locator("#matrix-table td.cell").first
    expect(cell).to_be_visible(timeout=30_000)
    cell.click()
    expect(page.locator("#cell-panel h2")).to_contain_text("vs human")
    researcher.settled()

    # the paper view's table, exported as CSV
    page.click("text=Paper view")
    expect(page.locator("#ranks-table")).to_be_visible()
    with page.expect_download() as download:
        page.click("#ranks-csv")
    with open(download.value.path(), encoding="utf-8") as exported:
        text = exported.read()
    assert sum("rouge" in line for line in text.splitlines()) == 3

    problems = researcher.collect()
    assert problems == [], "\n".join(problems)
