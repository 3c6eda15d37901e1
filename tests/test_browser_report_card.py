"""A researcher reads the judge report card in a real Chromium: from the dataset page to
the card, its verdicts, sorting by a column both ways, and a row's evidence."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import log_in
from tests.studies.report_card_data import build_panel

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def _order(page: Page) -> list[str]:
    rows = page.locator("#report-card-table tbody tr")
    return [rows.nth(k).get_attribute("data-run") or "" for k in range(rows.count())]


def test_the_report_card_sorts_shows_verdicts_and_links_to_the_evidence(
    live_server, page: Page, cast
):
    panel = build_panel(cast["owner"])
    log_in(page, live_server.url, "owner")
    page.goto(f"{live_server.url}/datasets/{panel.dataset.pk}/")
    page.click("#open-report-card")
    table = page.locator("#report-card-table")
    expect(table).to_be_visible()
    # COH: two imported judges and two G-Eval runs; FLU: the imported judges
    expect(table.locator("tbody tr")).to_have_count(6)
    mean = table.locator(f'tr[data-run="{panel.mean.pk}"][data-aspect="COH"]')
    expect(mean.locator(".card-verdict")).to_contain_text("can replace annotators for coherence")
    noisy = table.locator(f'tr[data-run="{panel.noisy.pk}"][data-aspect="COH"]')
    expect(noisy.locator(".card-verdict")).to_contain_text("fails the alternative-annotator test")
    flu = table.locator(f'tr[data-run="{panel.mean.pk}"][data-aspect="FLU"]')
    expect(flu.locator(".alt-missing")).to_contain_text("0 items with ≥ 3 annotators")

    page.click("#sort-verdict")  # htmx swaps the table: can first, cannot last
    expect(page.locator("#sort-verdict")).to_contain_text("▾")
    assert "sort=verdict" in page.url
    verdicts = table.locator("tbody tr .badge.verdict")
    expect(verdicts.first).to_have_text("can")
    expect(verdicts.last).to_have_text("cannot")
    page.click("#sort-low")
    expect(page.locator("#sort-low")).to_contain_text("▾")
    best_first = _order(page)
    lows = [float(x) for x in table.locator("tbody td.card-low").all_inner_texts() if x != "—"]
    assert lows == sorted(lows, reverse=True) and len(lows) >= 4
    page.click("#sort-low")  # again: the other way
    expect(page.locator("#sort-low")).to_contain_text("▴")
    assert "sort=-low" in page.url
    flipped = _order(page)
    present = len(lows)  # rows without a lower bound stay last either way
    assert flipped[:present] == best_first[:present][::-1]

    mean.locator("a.cell-link").click()  # the row's matrix cell
    expect(page.locator("#cell-detail")).to_be_visible()
    assert f"/cell/{panel.mean.pk}/" in page.url
