"""Every kind of page works in a real Chromium under the strict content security policy
(no inline script, style or eval), with no violation reported: researcher pages and their
htmx swaps, the output browser's search typed fast, the annotation pages (Likert and
pairwise) through Submit, Skip, the previous item and a comment in a resized box, the
Django admin, and the lockout page."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, expect

from annotation.models import Campaign
from studies.models import Aspect, Endpoint, MetricRun
from studies.services.analysis import planner
from studies.services.analysis.planner import PlannerParams
from studies.services.catalog.endpoints import create_endpoint
from tests.annotation.conftest import make_study, new_campaign
from tests.annotation.routing_data import informative_campaign, make_routed_study
from tests.browser import Watched
from tests.conftest import wait_until_true
from tests.factories import import_scored

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def annotate(annotator: Watched, campaign: Campaign, keys: str) -> None:
    """Start the campaign, answer an item with a comment typed in a box the annotator made
    taller (the browser writes its height in a style attribute), submit, go Back and
    Forward (the item pages are loaded again, never rebuilt from htmx's copies: an old
    copy would show answers since changed), skip the next item, go back to the answered
    one (its link, then the key) and change the answer: every step an htmx swap."""
    page = annotator.page
    annotator.open("/annotate/")
    page.click(f"#start-{campaign.pk}")
    expect(page.locator("#answer-form")).to_be_visible()
    for key in keys:
        page.keyboard.press(key)  # annotate.js, a static script, handles the keys
    page.click(".comment summary")
    page.fill("#comment", "The output repeats itself.")
    box = page.locator("#comment").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)  # resize grip
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] + 40, steps=4)
    page.mouse.up()
    assert page.evaluate("document.querySelector('#comment').hasAttribute('style')")
    page.click("#submit-answer")
    expect(page.locator("#progress-text")).to_contain_text("1 /")
    annotator.settled()
    page.go_back()  # the answered item, loaded again: as stored, not as it was
    expect(page.locator("#revisit-note")).to_be_visible()
    expect(page.locator("#progress-text")).to_contain_text("1 /")
    page.go_forward()
    expect(page.locator("#revisit-note")).to_have_count(0)
    expect(page.locator("#progress-text")).to_contain_text("1 /")
    annotator.settled()
    page.click("[data-skip]")
    page.fill("#skip-reason", "cannot tell")
    page.click("#confirm-skip")
    expect(page.locator("#progress-text")).to_contain_text("2 /")
    annotator.settled()
    page.click("#previous-item")
    expect(page.locator("#revisit-note")).to_be_visible()
    expect(page.locator("#comment")).to_have_value("The output repeats itself.")
    annotator.settled()
    page.keyboard.press(keys[-1] if keys[-1] != "1" else "2")
    page.click("#submit-answer")  # the change saved, back to the current item
    expect(page.locator("#revisit-note")).to_have_count(0)
    annotator.settled()
    page.keyboard.press("p")
    expect(page.locator("#revisit-note")).to_be_visible()
    annotator.settled()
    annotator.collect()


def test_pages_work_under_the_content_security_policy_without_violations(
    live_server, browser: Browser, cast, write_jsonl, allow_loopback
):
    import_scored(write_jsonl, cast["owner"])
    run = MetricRun.objects.filter(dataset__name="scored").first()
    assert run is not None
    scored = f"/datasets/{run.dataset_id}"
    campaign = new_campaign(make_study(cast["owner"]), cast["owner"], [cast["annotator"]])
    pairs = new_campaign(
        campaign.study, cast["owner"], [cast["annotator"]], name="Pairs", mode="pairwise"
    )
    study, run_a, run_b = make_routed_study(cast["owner"])
    routed = informative_campaign(study, cast["owner"], [cast["annotator"]], run_a, run_b)

    endpoint = create_endpoint("judge", "http://127.0.0.1:9", "m", owner=cast["owner"])
    Endpoint.objects.filter(pk=endpoint.pk).update(probe_requested_at=timezone.now())
    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    for page_path in (
        "/",
        "/datasets/",
        "/endpoints/",
        "/endpoints/new/",
        f"/endpoints/{endpoint.pk}/",  # polls its probe's findings (htmx)
        f"/endpoints/{endpoint.pk}/edit/",
        f"/endpoints/{endpoint.pk}/delete/",
        f"{scored}/",
        "/datasets/upload/",
        f"{scored}/runs/new/",
        f"/runs/{run.pk}/",
        "/steps/summarization/COH/",
        "/campaigns/",
        f"/campaigns/{campaign.pk}/",
        "/campaigns/new/",
        "/learned/",
        f"/learned/new/?dataset={run.dataset_id}",
        f"/campaigns/{routed.pk}/",
        "/studies/new/",
        f"/studies/new/?dataset={run.dataset_id}",
        f"/studies/{campaign.study_id}/",
        f"/studies/{campaign.study_id}/members/",
        f"/campaigns/new/?study={campaign.study_id}",
        f"{scored}/outputs/",
        f"{scored}/outputs/?system=sys1&sort=-run:{run.pk}",
        f"/outputs/{run.scores.first().output_id}/",
        f"/documents/{run.scores.first().output.document_id}/",
        f"{scored}/compare/",
        f"{scored}/compare/?a={run.pk}&b={run.pk}",
    ):
        researcher.open(page_path)
    researcher.open(f"{scored}/correlations/")
    page = researcher.page
    expect(page.locator("#matrix-table")).to_be_visible()
    page.select_option("#level", "dataset")  # an htmx swap
    expect(page.locator("#matrix")).to_contain_text("dataset-level")
    cell = page.locator("td.cell").first
    colour = cell.evaluate("td => getComputedStyle(td).backgroundColor")
    assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), colour  # heat.css applies
    cell.click()
    expect(page.locator("#cell-scatter[data-drawn=yes] svg")).to_be_attached()  # Vega-Lite
    researcher.collect()
    researcher.open(f"{scored}/correlations/paper/")
    with page.expect_navigation():
        page.select_option("select[name=level]", "system")  # static/js/app.js submits it
    assert "level=system" in page.url
    researcher.collect()
    researcher.open(f"{scored}/correlations/")
    page.check("#weight-competence")  # an htmx swap with the competence-weighted matrix
    expect(page.locator("#matrix")).to_be_visible()
    wait_until_true(page, "location.search.includes('weights=competence')")
    researcher.open(f"{scored}/ppi/")
    expect(page.locator("#ppi-table tbody tr")).to_have_count(5)
    with page.expect_navigation():
        page.select_option("#ppi-vs", "sys3")  # app.js submits the form
    assert "vs=sys3" in page.url
    expect(page.locator("#ppi-differences")).to_contain_text("System − sys3")
    researcher.collect()
    researcher.open(f"{scored}/diagnostics/")
    expect(page.locator("#length-table")).to_be_visible()
    expect(page.locator("#system-gaps > tbody > tr")).to_have_count(5)
    with page.expect_navigation():
        page.select_option("#diag-level", "system")  # app.js submits the form
    assert "level=system" in page.url
    page.locator("details.doc-disagreement summary").first.click()
    researcher.collect()
    runs = list(MetricRun.objects.filter(dataset__name="scored").order_by("pk"))
    plan = PlannerParams(aspect=Aspect.objects.get(code="COH").pk, a=runs[0].pk, b=runs[1].pk)
    planner.compute_and_cache(runs[0].dataset, plan)  # as the worker would
    researcher.open(f"{scored}/planner/?{plan.query}")
    expect(page.locator("#planner-chart[data-drawn=yes] svg")).to_be_attached()
    expect(page.locator("#planner-table tbody tr").first).to_be_visible()
    researcher.open(f"{scored}/planner/")
    page.select_option("#planner-aspect", str(plan.aspect))  # htmx asks for the plan alone
    page.wait_for_url(f"**aspect={plan.aspect}**")
    researcher.open(f"{scored}/correlations/")
    with page.expect_navigation():
        page.once("dialog", lambda dialog: dialog.accept())  # it asks first, with an estimate
        page.click("#add-sentinels")  # a POST, then back to the matrix
    expect(page.locator(".messages")).to_contain_text("Started 3 sentinel run(s)")
    researcher.collect()
    researcher.open(f"{scored}/outputs/")
    search = page.locator("#out-q")
    search.press_sequentially("doc01", delay=20)  # faster than the search waits for
    expect(page.locator("#outputs-count")).to_contain_text("5 outputs")
    search.press_sequentially("x", delay=5)
    search.press("Backspace")  # two more searches, the first still on its way
    researcher.settled()
    wait_until_true(page, "new URLSearchParams(location.search).get('q') === 'doc01'")
    expect(page.locator("#outputs-count")).to_contain_text("5 outputs")
    researcher.collect()
    researcher.open("/api/docs/")  # Swagger UI: its start script is a file, not inline
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Concordia", timeout=60_000)
    researcher.collect()

    annotator = Watched(browser, live_server.url)
    annotator.log_in("annotator")
    annotate(annotator, campaign, "34")
    annotate(annotator, pairs, "13")
    researcher.open(f"/campaigns/{campaign.pk}/")  # the comment, on the campaign's page
    expect(page.locator("#comments-table")).to_contain_text("The output repeats itself.")
    researcher.collect()

    admin = Watched(browser, live_server.url)
    admin.log_in("boss", "/admin/login/")
    for page_path in (
        "/admin/",
        "/admin/studies/metricrun/",
        f"/admin/studies/metricrun/{run.pk}/change/",
        "/admin/studies/aspect/add/",
        "/admin/axes/accessattempt/",
    ):
        admin.open(page_path)
    admin.collect()

    stranger = Watched(browser, live_server.url)
    for i in range(10):
        stranger.open("/login/")
        stranger.page.fill("input[name=username]", "outsider")
        stranger.page.fill("input[name=password]", f"wrong-{i}")
        stranger.page.click("[type=submit]")
    expect(stranger.page.locator("#locked-out")).to_contain_text("Too many failed logins")
    stranger.collect()

    problems = researcher.problems + annotator.problems + admin.problems + stranger.problems
    assert researcher.visited + annotator.visited + admin.visited >= 20
    assert problems == [], "\n".join(problems)
