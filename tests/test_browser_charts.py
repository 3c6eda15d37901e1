"""The drill-down's Vega-Lite charts draw in a real Chromium under the strict content
security policy: no violation, no script error, a legend entry per system, and only the
SVG and PNG downloads as actions."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from learned.models import TrainedMetric
from studies.models import Aspect, MetricRun
from tests.browser import Watched
from tests.factories import import_scored

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_cell_page_draws_vega_charts_with_a_legend_and_no_csp_violation(
    live_server, browser: Browser, cast, write_jsonl
):
    import_scored(write_jsonl, cast["owner"])
    run = MetricRun.objects.get(dataset__name="scored", label="good")
    other = MetricRun.objects.get(dataset__name="scored", label="noise")
    coh = Aspect.objects.get(code="COH")
    cell = f"/datasets/{run.dataset_id}/correlations/cell/{run.pk}/{coh.pk}/"
    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page

    researcher.open(cell + "?level=dataset&coef=pearson")
    for chart in ("#cell-scatter", "#cell-bars"):
        expect(page.locator(f"{chart}[data-drawn=yes] svg").first).to_be_attached()
    legend = page.locator("#cell-scatter .role-legend-label text")
    expect(legend).to_have_count(5)
    assert sorted(legend.all_text_contents()) == [f"sys{s}" for s in range(5)]
    assert page.locator("#cell-scatter .role-mark path, #cell-scatter .role-mark > *").count() > 0
    actions = page.locator("#cell-scatter .vega-actions a")
    assert actions.all_text_contents() == ["Save as SVG", "Save as PNG"]
    with page.expect_download() as download:  # the SVG export works under the CSP
        actions.first.dispatch_event("mousedown")
        actions.first.click()
    assert "<svg" in download.value.path().read_text(encoding="utf-8")
    with page.expect_download() as download:  # and the PNG one
        actions.nth(1).dispatch_event("mousedown")
        actions.nth(1).click()
    assert download.value.path().read_bytes().startswith(b"\x89PNG")
    # no <style> was injected by vega-embed or its tooltip (the CSP would block it)
    assert page.locator("head style").count() == 0

    researcher.open(cell + "?level=system&coef=pearson")  # the system means
    expect(page.locator("#cell-scatter[data-drawn=yes] svg")).to_be_attached()
    expect(page.locator("#cell-n")).to_have_text("5 systems")
    page.select_option("#cell-compare-b", str(other.pk))
    with page.expect_navigation():
        page.click("#cell-compare button")
    expect(page.locator("#compare-scatter[data-drawn=yes] svg")).to_be_attached()

    researcher.open(f"/datasets/{run.dataset_id}/correlations/")  # a cell swapped in by htmx
    page.locator("td.cell").first.click()
    expect(page.locator("#cell-scatter[data-drawn=yes] svg")).to_be_attached()
    expect(page.locator("#cell-histogram[data-drawn=yes] svg")).to_be_attached()

    job = TrainedMetric.objects.create(
        label="learned:test",
        dataset=run.dataset,
        aspect=coh,
        status=TrainedMetric.Status.RUNNING,
        created_by=cast["owner"],
        progress={"epoch": 2, "epochs": 3},
        curves=[
            {"epoch": 1, "loss": 0.9, "validation_accuracy": 0.6},
            {"epoch": 2, "loss": 0.7, "validation_accuracy": 0.66},
        ],
    )
    researcher.open(f"/learned/{job.pk}/")  # the training curves, redrawn on every poll
    expect(page.locator("#curve[data-drawn=yes] svg")).to_be_attached()
    TrainedMetric.objects.filter(pk=job.pk).update(status=TrainedMetric.Status.CANCELLED)
    expect(page.locator("#curve[data-drawn=yes] svg")).to_be_attached()

    assert researcher.collect() == [], "\n".join(researcher.problems)
