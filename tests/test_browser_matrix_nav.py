"""The correlations page in a real Chromium: after Back the level and coefficient controls
show the choices of the restored URL; a matrix cell is reached with Tab and opened with
Enter; a column's sort toggles and lives in the URL."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.browser import Watched
from tests.conftest import wait_until_true
from tests.factories import dataset_pk, import_scored

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


@pytest.fixture
def researcher(live_server, browser: Browser, cast, write_jsonl) -> Watched:  # type: ignore[no-untyped-def]
    import_scored(write_jsonl, cast["owner"])
    watched = Watched(browser, live_server.url)
    watched.log_in("owner")
    watched.open(f"/datasets/{dataset_pk('scored')}/correlations/")
    expect(watched.page.locator("#matrix-table")).to_be_visible()
    return watched


def test_back_restores_the_level_and_coefficient_of_the_url(researcher: Watched):
    page = researcher.page
    page.select_option("#level", "dataset")
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, dataset-level")
    researcher.settled()
    page.select_option("#coef", "pearson")
    expect(page.locator("#matrix")).to_contain_text("Pearson r, dataset-level")
    researcher.settled()

    page.go_back()  # level=dataset, Spearman
    wait_until_true(page, "!location.search.includes('coef=pearson')")
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, dataset-level")
    expect(page.locator("#level")).to_have_value("dataset")
    expect(page.locator("#coef")).to_have_value("spearman")

    page.go_back()  # the page as first opened: sample level
    wait_until_true(page, "!location.search.includes('level=dataset')")
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, sample-level")
    expect(page.locator("#level")).to_have_value("sample")
    expect(page.locator("#coef")).to_have_value("spearman")

    page.go_forward()
    wait_until_true(page, "location.search.includes('level=dataset')")
    expect(page.locator("#level")).to_have_value("dataset")
    assert researcher.collect() == []


def test_a_matrix_cell_is_reached_with_tab_and_opened_with_enter(researcher: Watched):
    page = researcher.page
    page.locator("body").focus()
    for _ in range(200):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('td.cell')"):
            break
    else:
        pytest.fail("Tab never reached a matrix cell")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none"), outline  # a visible focus ring
    label = page.evaluate("document.activeElement.getAttribute('aria-label')")
    page.keyboard.press("Enter")
    expect(page.locator("#cell-detail")).to_be_visible()
    run_label = label.split(" × ")[0]
    expect(page.locator("#cell-detail")).to_contain_text(run_label)
    assert researcher.collect() == []


def test_sorting_a_column_toggles_and_is_kept_in_the_url(researcher: Watched):
    page = researcher.page
    page.locator("#matrix-table thead a.sort-link", has_text="COH").click()
    wait_until_true(page, "new URLSearchParams(location.search).get('sort') === 'COH'")
    expect(page.locator("#matrix-table thead")).to_contain_text("COH ▾")
    researcher.settled()
    page.locator("#matrix-table thead a.sort-link", has_text="COH").click()
    wait_until_true(page, "new URLSearchParams(location.search).get('sort') === '-COH'")
    expect(page.locator("#matrix-table thead")).to_contain_text("COH ▴")
    researcher.settled()
    # the filter form keeps the sort when another choice is made
    page.select_option("#level", "dataset")
    wait_until_true(page, "location.search.includes('level=dataset')")
    assert "sort=-COH" in page.url
    assert researcher.collect() == []
