"""A researcher browses a dataset's outputs in a real Chromium: filters by system, sorts
by a run's score (htmx swaps, the URL pushed), opens an output and comes Back to the same
filtered, sorted list; all under the strict content security policy."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from studies.models import MetricRun, MetricScore
from tests.browser import Watched
from tests.conftest import wait_until_true
from tests.factories import import_scored

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_researcher_filters_sorts_opens_an_output_and_comes_back(
    live_server, browser: Browser, cast, write_jsonl
):
    import_scored(write_jsonl, cast["owner"])
    run = MetricRun.objects.get(dataset__name="scored", label="good")
    best = (
        MetricScore.objects.filter(run=run, output__system_id="sys2")
        .select_related("output__document")
        .order_by("-value")
        .first()
    )
    assert best is not None and best.output.document.doc_key != "doc00"  # sorting moves it up

    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page
    researcher.open(f"/datasets/{run.dataset_id}/")
    with page.expect_navigation():
        page.click("#browse-outputs")
    expect(page.locator("#outputs-count")).to_contain_text("60 outputs")

    page.select_option("#out-system", "sys2")  # an htmx swap of the table
    expect(page.locator("#outputs-count")).to_contain_text("12 outputs")
    researcher.settled()
    wait_until_true(page, "location.search.includes('system=sys2')")
    expect(page.locator("#outputs-table tbody tr").first.locator("td").first).to_have_text("doc00")

    page.click(f"a.sort[data-sort='run:{run.pk}']")  # descending first
    expect(page.locator(f"a.sort[data-sort='run:{run.pk}']")).to_contain_text("▼")
    researcher.settled()
    wait_until_true(page, f"location.search.includes('sort=-run%3A{run.pk}')")
    first_row = page.locator("#outputs-table tbody tr").first
    expect(first_row.locator("td").first).to_have_text(best.output.document.doc_key)
    expect(page.locator("#outputs-count")).to_contain_text("12 outputs")

    with page.expect_navigation():
        first_row.locator("a.output-link").click()
    assert page.url.endswith(f"/outputs/{best.output_id}/")
    expect(page.locator("#output-scores")).to_contain_text("good")
    expect(page.locator("#output-scores")).to_contain_text(f"{best.value:.4f}")
    expect(page.locator("#output-judgments")).to_contain_text("imported from scored.jsonl")
    expect(page.locator("#document-source")).to_contain_text(best.output.document.source)

    page.go_back()
    wait_until_true(
        page,
        "location.pathname.endsWith('/outputs/') && !!document.querySelector('#outputs-table')",
    )
    assert "system=sys2" in page.url and f"sort=-run%3A{run.pk}" in page.url
    expect(page.locator("#outputs-count")).to_contain_text("12 outputs")
    expect(page.locator("#outputs-table tbody tr").first.locator("td").first).to_have_text(
        best.output.document.doc_key
    )
    expect(page.locator("#out-system")).to_have_value("sys2")

    researcher.settled()
    page.select_option("#out-system", "sys3")  # a new filter keeps the sort
    best3 = (
        MetricScore.objects.filter(run=run, output__system_id="sys3")
        .select_related("output__document")
        .order_by("-value")
        .first()
    )
    assert best3 is not None
    expect(page.locator("#outputs-table tbody tr").first.locator("td").nth(1)).to_have_text("sys3")
    expect(page.locator("#outputs-table tbody tr").first.locator("td").first).to_have_text(
        best3.output.document.doc_key
    )
    wait_until_true(page, f"location.search.includes('sort=-run%3A{run.pk}')")
    problems = researcher.collect()
    assert problems == [], "\n".join(problems)
