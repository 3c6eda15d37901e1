"""A phone's window (390×844) in a real Chromium: no researcher or annotator page is wider
than the window (wide tables scroll in their own box), with SummEval-like document keys
(48 characters, no space) among the data; and the rating buttons' labels wrap between
words, never inside one."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page

from studies.models import Aspect, Endpoint, MetricRun, Study
from studies.services.analysis.planner import PlannerParams
from studies.services.catalog.endpoints import create_endpoint
from tests.annotation.conftest import make_study, new_campaign
from tests.annotation.routing_data import informative_campaign, make_routed_study
from tests.browser import log_in, ready
from tests.factories import import_jsonl, synthetic_records

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]
PHONE = {"width": 390, "height": 844}
LONG_KEY = "dm-test-8764fb95bfad8ee849274873a92fb8d6b400eee2"  # SummEval's kind of doc_id

# How much wider than the window the page is, and the elements sticking out furthest.
WIDER = """() => {
  const over = document.documentElement.scrollWidth - window.innerWidth;
  if (over <= 0) return null;
  const out = Array.from(document.querySelectorAll('body *'))
    .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
    .filter((e) => !e.parentElement || e.parentElement.getBoundingClientRect().right <= window.innerWidth + 1)
    .slice(0, 4).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} (${Math.round(e.getBoundingClientRect().width)} px)`);
  return `${over} px wider than the window: ${out.join(', ')}`;
}"""

# Words of the rating buttons' labels (the point and its anchor) and of the scales'
# legends that are split over two lines, and labels styled to break inside words.
SPLIT_WORDS = """() => {
  const labels = Array.from(document.querySelectorAll('#annotate .point, #annotate .legend li'));
  const split = [], breaking = [];
  for (const label of labels) {
    for (const el of [label, ...label.querySelectorAll('*')]) {
      const style = getComputedStyle(el);
      if (style.wordBreak === 'break-all' || style.overflowWrap === 'anywhere') breaking.push(el.textContent);
    }
    const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  return {split, breaking, labels: labels.filter((l) => l.getClientRects().length).length};
}"""


def _world(owner: Any, annotator: Any, write_jsonl: Any) -> dict[str, Any]:
    """Every kind of page's data: a scored dataset with long document keys, a study with
    Likert, pairwise and informative campaigns, an endpoint."""
    records = synthetic_records()
    for r in records:
        r["doc_id"] = f"{LONG_KEY}-{r['doc_id']}"
        r["source"] = f"{r['source']} " + "A sentence of the source, told at length. " * 40
    path = write_jsonl(records, name="scored.jsonl")
    import_jsonl(path, "scored", owner)
    runs = list(MetricRun.objects.filter(dataset__name="scored").order_by("pk"))
    campaign = new_campaign(make_study(owner), owner, [annotator], aspect_codes=("COH", "FLU"))
    pairs = new_campaign(campaign.study, owner, [annotator], name="Pairs", mode="pairwise")
    study, run_a, run_b = make_routed_study(owner)
    routed = informative_campaign(study, owner, [annotator], run_a, run_b)
    scored_study = Study.objects.create(name="Scored", dataset=runs[0].dataset, owner=owner)
    endpoint = create_endpoint("judge", "http://127.0.0.1:9", "m", owner=owner)
    Endpoint.objects.filter(pk=endpoint.pk).update(probe_requested_at=timezone.now())
    return {
        "runs": runs,
        "campaigns": (campaign, pairs, routed),
        "study": scored_study,
        "endpoint": endpoint,
    }


def _researcher_pages(world: dict[str, Any]) -> list[str]:
    run = world["runs"][0]
    data = f"/datasets/{run.dataset_id}"
    score = run.scores.select_related("output").first()
    plan = PlannerParams(
        aspect=Aspect.objects.get(code="COH").pk, a=world["runs"][0].pk, b=world["runs"][1].pk
    )
    endpoint = world["endpoint"].pk
    return [
        "/",
        "/datasets/",
        "/datasets/upload/",
        f"{data}/",
        f"{data}/outputs/",
        f"{data}/outputs/?q=sentence&sort=-run:{run.pk}",
        f"/outputs/{score.output_id}/",
        f"/documents/{score.output.document_id}/",
        f"{data}/runs/new/",
        f"/runs/{run.pk}/",
        f"{data}/correlations/",
        f"{data}/correlations/paper/",
        f"{data}/ppi/",
        f"{data}/diagnostics/",
        f"{data}/report-card/",
        f"{data}/compare/?a={run.pk}&b={world['runs'][1].pk}",
        f"{data}/planner/?{plan.query}",
        "/steps/summarization/COH/",
        "/endpoints/",
        "/endpoints/new/",
        f"/endpoints/{endpoint}/",
        f"/endpoints/{endpoint}/edit/",
        "/jobs/",
        "/studies/new/",
        f"/studies/{world['study'].pk}/",
        f"/studies/{world['study'].pk}/members/",
        f"/studies/{world['study'].pk}/report-card/",
        "/campaigns/",
        "/campaigns/new/",
        *[f"/campaigns/{c.pk}/" for c in world["campaigns"]],
        "/learned/",
        f"/learned/new/?dataset={run.dataset_id}",
        "/account/token/",
    ]


def _widths(page: Page, base: str, paths: list[str]) -> list[str]:
    wide = []
    for path in paths:
        response = page.goto(base + path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("load")
        found = page.evaluate(WIDER)
        if found:
            wide.append(f"{path}: {found}")
    return wide


def test_no_page_is_wider_than_a_phone(
    live_server, browser: Browser, cast, write_jsonl, allow_loopback
):
    world = _world(cast["owner"], cast["annotator"], write_jsonl)
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server.url, "owner")
    paths = _researcher_pages(world)
    wide = _widths(page, live_server.url, paths)
    context.close()

    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    campaign, pairs, routed = world["campaigns"]
    visited = ["/annotate/", f"/annotate/{campaign.pk}/guidelines/"]
    wide += _widths(page, live_server.url, visited)
    for c in (campaign, pairs, routed):
        page.goto(f"{live_server.url}/annotate/")
        page.click(f"#start-{c.pk}")
        ready(page)
        visited.append(page.url)
        if found := page.evaluate(WIDER):
            wide.append(f"{c.name}'s item: {found}")
    context.close()
    assert len(paths) + len(visited) >= 35
    assert wide == [], "\n".join(wide)


@pytest.mark.parametrize("width", [390, 1024, 1366])
def test_rating_labels_wrap_between_words(live_server, browser: Browser, cast, width):
    codes = ("COH", "CON", "FLU", "REL")  # anchors such as "disfluent and ungrammatical"
    likert = new_campaign(
        make_study(cast["owner"]), cast["owner"], [cast["annotator"]], aspect_codes=codes
    )
    pairs = new_campaign(
        likert.study, cast["owner"], [cast["annotator"]], name="Pairs", mode="pairwise"
    )
    context = browser.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    for campaign, n_labels in ((likert, 4 * 5), (pairs, 2 * 3)):  # points × aspects at least
        page.goto(f"{live_server.url}/annotate/")
        page.click(f"#start-{campaign.pk}")
        ready(page)
        found = page.evaluate(SPLIT_WORDS)
        assert found["labels"] >= n_labels, found
        assert found["split"] == [] and found["breaking"] == [], (width, campaign.mode, found)
    context.close()
