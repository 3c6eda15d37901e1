"""A researcher in a real Chromium: log in, upload, watch the worker import, open the dataset."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser import log_in_as_owner

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]

GOOD = "\n".join(
    json.dumps(
        {
            "doc_id": f"d{i // 3}",
            "system_id": f"s{i % 3}",
            "source": f"Source {i // 3}.",
            "references": ["Ref."],
            "output": f"Output {i}.",
            "human": {"coherence": 1 + i % 5},
        }
    )
    for i in range(30)
)


def test_researcher_uploads_a_file_and_sees_it_imported(
    live_server, page, cast, celery_worker_process, tmp_path
):
    log_in_as_owner(page, live_server.url)
    page.click("text=Upload a file")
    good = tmp_path / "browser.jsonl"
    good.write_text(GOOD + "\n")
    page.set_input_files("input[name=file]", str(good))
    page.fill("input[name=dataset]", "from-browser")
    page.click("button:has-text('Upload and import')")
    expect(page.locator("h1")).to_have_text("Import of browser.jsonl")
    # the status partial polls through htmx until the worker is done
    expect(page.locator("#import-state")).to_have_text("Succeeded", timeout=30_000)
    assert page.evaluate("typeof htmx") == "object"
    expect(page.locator("#import-status")).to_contain_text("30 records imported")
    page.click("text=Open from-browser")
    expect(page.locator("#n-documents")).to_have_text("10")
    expect(page.locator("#n-outputs")).to_have_text("30")


def test_researcher_sees_located_errors_for_a_bad_file(
    live_server, page, cast, celery_worker_process, tmp_path
):
    log_in_as_owner(page, live_server.url)
    page.goto(live_server.url + "/datasets/upload/")
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    page.set_input_files("input[name=file]", str(notes))
    page.fill("input[name=dataset]", "broken")
    page.click("button:has-text('Upload and import')")
    expect(page.locator(".error")).to_contain_text("use a .jsonl or .csv file")

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        GOOD.splitlines()[0]
        + '\n{"doc_id": "d9", "system_id": "s1", "source": "x", "output": "y", '
        '"human": {"coherence": "great"}}\n'
    )
    page.set_input_files("input[name=file]", str(bad))
    page.click("button:has-text('Upload and import')")
    expect(page.locator("#import-state")).to_have_text("Failed", timeout=30_000)
    expect(page.locator(".errors")).to_contain_text(
        re.compile(r"line 2, field 'human.coherence': expected a number, got 'great'")
    )
