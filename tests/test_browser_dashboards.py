"""A researcher reads the correlation dashboard in a real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.factories import dataset_pk, import_scored

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def log_in_with_a_scored_dataset(live_server, page: Page, cast, write_jsonl) -> None:  # type: ignore[no-untyped-def]
    """The owner, logged in, with the synthetic "scored" dataset imported."""
    import_scored(write_jsonl, cast["owner"])
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "owner")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")


def test_overview_switches_level_and_coefficient_opens_a_cell_and_exports_latex(
    live_server, page: Page, cast, write_jsonl
):
    log_in_with_a_scored_dataset(live_server, page, cast, write_jsonl)
    page.goto(live_server.url + f"/datasets/{dataset_pk('scored')}/")
    page.click("#open-correlations")
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, sample-level")
    assert page.locator("#matrix-table tbody tr:not(.ceiling)").count() == 2  # two runs
    expect(page.locator("#ceiling-row")).to_be_visible()  # two annotators judged: the ceiling line

    page.select_option("#level", "dataset")  # htmx swaps the matrix, no reload
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, dataset-level")
    page.select_option("#coef", "pearson")
    expect(page.locator("#matrix")).to_contain_text("Pearson r, dataset-level")
    assert "level=dataset" in page.url and "coef=pearson" in page.url

    page.locator("td.cell").first.click()
    expect(page.locator("#cell-detail")).to_contain_text("Pearson r, dataset-level")
    expect(page.locator("#cell-scatter[data-drawn=yes] svg")).to_be_attached()  # Vega-Lite

    with page.expect_download() as download_info:
        page.click("#export-latex")
    latex = download_info.value.path().read_text(encoding="utf-8")
    assert r"\toprule" in latex and "Pearson r, dataset-level" in latex


def test_each_statistic_is_offered_at_its_levels_and_tie_calibration_shows_epsilon(
    live_server, page: Page, cast, write_jsonl
):
    log_in_with_a_scored_dataset(live_server, page, cast, write_jsonl)
    page.goto(live_server.url + f"/datasets/{dataset_pk('scored')}/correlations/")
    # Sample level: SPA is not offered, acc23 is; tie calibration waits for acc23.
    expect(page.locator("#coef option[value=spa]")).to_be_disabled()
    expect(page.locator("#tie-calibration")).to_be_disabled()
    page.select_option("#coef", "acc23")
    expect(page.locator("#matrix")).to_contain_text("Pairwise accuracy acc23, sample-level")
    expect(page.locator("#tie-calibration")).to_be_enabled()
    page.check("#tie-calibration")
    expect(page.locator("#matrix")).to_contain_text("tie-calibrated")
    expect(page.locator("#matrix .epsilon").first).to_contain_text("ε=")
    assert "ties=calibrate" in page.url
    # System level: acc23 is not offered there, SPA is; asked anyway, the page says why.
    page.select_option("#level", "system")
    expect(page.locator("#matrix-problem")).to_contain_text("not at system level")
    expect(page.locator("#coef option[value=acc23]")).to_be_disabled()
    page.select_option("#coef", "spa")
    expect(page.locator("#matrix")).to_contain_text("Soft pairwise accuracy (SPA), system-level")
    expect(page.locator("#average")).to_be_disabled()
