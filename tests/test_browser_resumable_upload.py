"""The upload page in a real Chromium sends a file of a few MB as a resumable upload in
small chunks: its connection cut mid-way (requests aborted), it resumes from the offset
the server holds; the page reloaded mid-way, picking the same file again resumes it (not
from byte 0); a real worker imports the file exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from studies.models import Dataset, ImportJob, Output, UploadSession
from studies.services.uploads import file_path
from tests.browser import log_in_as_owner, wait_for
from tests.conftest import record

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]

CHUNK = 256 * 1024  # REQUEST_MAX_BODY_BYTES for this test: the page's chunk size
N_RECORDS = 600


def write_file(path: Path) -> bytes:
    """About 3 MB: 600 outputs of ~5 KB."""
    lines = [
        json.dumps(record(f"d{i // 3}", f"s{i % 3}", output=f"Output {i}: " + "text " * 1000))
        for i in range(N_RECORDS)
    ]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


class Network:
    """Decides the fate of each request to the uploads API: passed on (its chunk's offset
    recorded) or aborted, as a dropped connection."""

    def __init__(self) -> None:
        self.cut = False  # abort every request while set
        self.abort_after: int | None = None  # chunks to pass before cutting
        self.failures_left = 0  # requests to abort once cut by abort_after, then heal
        self.chunks: list[int] = []  # offsets of the chunks passed on
        self.aborted = 0

    def handle(self, route: Route) -> None:
        request = route.request
        if self.abort_after is not None and len(self.chunks) >= self.abort_after:
            self.abort_after, self.cut = None, True
        if self.cut:
            self.aborted += 1
            if self.failures_left:
                self.failures_left -= 1
                self.cut = self.failures_left > 0
            route.abort("connectionreset")
            return
        if request.method == "PATCH":
            self.chunks.append(int(request.headers["upload-offset"]))
        route.continue_()


def choose(page: Page, base: str, path: Path) -> None:
    page.goto(base + "/datasets/upload/")
    page.set_input_files("input[name=file]", str(path))
    page.fill("input[name=dataset]", "resumed")
    page.click("button:has-text('Upload and import')")


def test_an_upload_cut_off_and_reloaded_resumes_and_imports_once(
    live_server, page, cast, settings, celery_worker_process, tmp_path
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = CHUNK
    source = tmp_path / "large.jsonl"
    data = write_file(source)
    network = Network()
    page.route("**/api/uploads/**", network.handle)
    log_in_as_owner(page, live_server.url)

    # 1. four chunks arrive, then the connection is gone: the page keeps retrying
    network.abort_after = 4
    choose(page, live_server.url, source)
    wait_for(page, lambda: network.aborted >= 2, "requests aborted after the fourth chunk")
    expect(page.locator("#upload-progress")).to_have_attribute("data-state", "retrying")
    session = UploadSession.objects.get()
    assert session.offset == 4 * CHUNK and network.chunks == [i * CHUNK for i in range(4)]

    # 2. the page is reloaded while cut off; with the network back, the same file resumes
    page.reload()
    network.cut = False
    network.abort_after, network.failures_left = 7, 6  # and it drops again after 3 chunks
    choose(page, live_server.url, source)
    expect(page.locator("h1")).to_have_text("Import of large.jsonl", timeout=60_000)
    expect(page.locator("#import-state")).to_have_text("Succeeded", timeout=60_000)

    # each byte was sent once: resumed at 4 chunks, not 0, and after the second cut from
    # the offset the server held
    assert network.chunks == list(range(0, len(data), CHUNK)), network.chunks
    assert network.aborted >= 8
    session.refresh_from_db()
    job = ImportJob.objects.get()
    assert session.job == job and session.offset == session.size == len(data)
    assert file_path(session).read_bytes() == data
    assert job.status == "succeeded" and job.summary["outputs"]["created"] == N_RECORDS
    dataset = Dataset.objects.get(name="resumed", owner=cast["owner"])
    assert Output.objects.filter(document__dataset=dataset).count() == N_RECORDS
    assert page.evaluate("Object.keys(window.localStorage)") == []  # nothing left to resume


def test_the_page_shows_a_refused_start_on_its_fields(live_server, page, cast, settings, tmp_path):
    settings.CONCORDIA = {**settings.CONCORDIA, "IMPORT_MAX_FILE_BYTES": 1024}
    source = tmp_path / "large.jsonl"
    write_file(source)
    log_in_as_owner(page, live_server.url)
    choose(page, live_server.url, source)
    expect(page.locator(".field.has-error .error")).to_contain_text("import limit of 1,024 bytes")
    expect(page.locator("#upload-progress")).to_be_hidden()
    assert not UploadSession.objects.exists()
