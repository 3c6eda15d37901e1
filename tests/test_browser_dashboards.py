"""A researcher reads the correlation dashboard in a real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from studies.services.datasets import ImportOptions, import_file
from tests.factories import dataset_pk
from tests.studies.test_dashboards import synthetic_records

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_overview_switches_level_and_coefficient_opens_a_cell_and_exports_latex(
    live_server, page: Page, cast, write_jsonl
):
    path = write_jsonl(synthetic_records(), name="scored.jsonl")
    import_file(path, ImportOptions(dataset="scored", task="summarization", file_format="jsonl",
                                    file_name=path.name, owner=cast["owner"]))  # fmt: skip
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "owner")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.goto(live_server.url + f"/datasets/{dataset_pk('scored')}/")
    page.click("#open-correlations")
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, sample-level")
    assert page.locator("#matrix-table tbody tr").count() == 2

    page.select_option("#level", "dataset")  # htmx swaps the matrix, no reload
    expect(page.locator("#matrix")).to_contain_text("Spearman ρ, dataset-level")
    page.select_option("#coef", "pearson")
    expect(page.locator("#matrix")).to_contain_text("Pearson r, dataset-level")
    assert "level=dataset" in page.url and "coef=pearson" in page.url

    page.locator("td.cell").first.click()
    expect(page.locator("#cell-detail")).to_contain_text("Pearson r, dataset-level")
    assert page.locator("#cell-detail svg.scatter circle").count() == 60

    with page.expect_download() as download_info:
        page.click("#export-latex")
    latex = download_info.value.path().read_text(encoding="utf-8")
    assert r"\toprule" in latex and "Pearson r, dataset-level" in latex
