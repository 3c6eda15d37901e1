"""What the annotator judges is on screen: on the Likert and the pairwise page, at a
laptop's size (1366×900) and a phone's (390×844), with a source thousands of characters
long, the output(s) and every rating button and Submit are in view without scrolling,
and the source scrolls in a region of its own (beside them on the laptop, above them on
the phone). Once with a source built here, once with SummEval's longest when
../shared/data is there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from studies.models import Study
from tests.annotation.conftest import new_campaign
from tests.browser import log_in, ready
from tests.conftest import SHARED_DATA
from tests.factories import DatasetFactory, DocumentFactory, OutputFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]
SUMMEVAL = SHARED_DATA / "summeval.jsonl"
ASPECTS = ("COH", "CON", "FLU", "REL")  # SummEval's four
SIZES = {"laptop": (1366, 900), "phone": (390, 844)}

# Where the texts and controls are, read without scrolling. An element counts as seen
# when the point probed (its top line for a text, its middle for a control) lies in the
# window and is not hidden by a scroll region's edge or covered by something else.
LAYOUT = """() => {
  const seen = (el, y) => {
    const box = el.getBoundingClientRect(), x = box.left + Math.min(box.width / 2, 40);
    if (y < 0 || y > window.innerHeight || x < 0 || x > window.innerWidth) return false;
    const hit = document.elementFromPoint(x, y);
    return hit !== null && (hit === el || el.contains(hit));
  };
  const scroller = (el) => {  // the element's nearest scrolling region, the page's if none
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (/(auto|scroll)/.test(getComputedStyle(p).overflowY) && p.scrollHeight > p.clientHeight) return p;
    }
    return document.scrollingElement;
  };
  const source = document.querySelector('#annotate .source');
  const region = scroller(source), box = region.getBoundingClientRect();
  const outputs = Array.from(document.querySelectorAll('#annotate .output'));
  const first = outputs[0].getBoundingClientRect();
  return {
    scrollY: window.scrollY,
    sourceLength: source.textContent.length,
    sourceRegionIsPage: region === document.scrollingElement,
    sourceRegion: {left: box.left, right: box.right, top: box.top, bottom: box.bottom, height: box.height,
                   scrolls: region.scrollHeight > region.clientHeight + 50},
    outputs: outputs.map((o) => {
      const b = o.getBoundingClientRect();
      return {top: b.top, left: b.left, seen: seen(o, b.top + 24)};
    }),
    firstOutput: {top: first.top, left: first.left},
    pointsUnseen: Array.from(document.querySelectorAll('#annotate .point')).filter((p) => {
      const b = p.getBoundingClientRect();
      return !(b.top >= 0 && b.bottom <= window.innerHeight && seen(p, b.top + b.height / 2));
    }).map((p) => p.closest('fieldset').id + ':' + p.textContent.trim()),
    submitSeen: (() => {
      const s = document.querySelector('#submit-answer'), b = s.getBoundingClientRect();
      return b.top >= 0 && b.bottom <= window.innerHeight && seen(s, b.top + b.height / 2);
    })(),
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  };
}"""


def _texts(kind: str) -> tuple[str, list[str]]:
    """A long source and two outputs of it: built here, or SummEval's longest source."""
    if kind == "built":
        source = "\n".join(
            f"Paragraph {k}. " + "The harbour authority said the new quay would open in May. " * 6
            for k in range(12)
        )
        summary = "The harbour's new quay opens in May, the authority said, after delays. " * 3
        return source, [summary, "A new quay will open in the harbour. " * 5]
    if not SUMMEVAL.exists():
        pytest.skip(f"{SUMMEVAL} is absent (../shared/data is not beside the repository)")
    records = [json.loads(line) for line in SUMMEVAL.open(encoding="utf-8")]
    longest = max(records, key=lambda r: len(r["source"]))
    outputs = sorted(
        (r["output"] for r in records if r["doc_id"] == longest["doc_id"]), key=len, reverse=True
    )
    return longest["source"], outputs[:2]


def _campaigns(owner: Any, annotator: Any, kind: str) -> dict[str, Any]:
    source, outputs = _texts(kind)
    assert len(source) > 3000
    dataset = DatasetFactory(name="long", owner=owner)
    document = DocumentFactory(dataset=dataset, doc_key="long", source=source)
    for k, text in enumerate(outputs):
        OutputFactory(document=document, system_id=f"s{k}", text=text)
    study = Study.objects.create(name="Long", dataset=dataset, owner=owner)
    return {
        mode: new_campaign(
            study, owner, [annotator], name=mode, mode=mode, aspect_codes=ASPECTS, overlap=1
        )
        for mode in ("likert", "pairwise")
    }


def _open(page: Page, base: str, campaign: Any) -> dict[str, Any]:
    page.goto(f"{base}/annotate/")
    page.click(f"#start-{campaign.pk}")
    ready(page)
    layout: dict[str, Any] = page.evaluate(LAYOUT)
    return layout


@pytest.mark.parametrize("kind", ["built", "summeval"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_outputs_and_the_ratings_are_in_view_beside_a_scrolling_source(
    live_server, browser: Browser, cast, kind, size
):
    campaigns = _campaigns(cast["owner"], cast["annotator"], kind)
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    for mode, campaign in campaigns.items():
        at = _open(page, live_server.url, campaign)
        page.screenshot(path=f"/tmp/explore/{size}-{kind}-{mode}.png")  # XXX
        where = f"{mode} at {width}×{height}: {at}"
        assert at["scrollY"] == 0 and at["sourceLength"] > 3000, where
        assert len(at["outputs"]) == (2 if mode == "pairwise" else 1), where
        assert all(o["seen"] for o in at["outputs"]), where  # each output's top line
        assert at["pointsUnseen"] == [], where  # every rating button of every aspect
        assert at["submitSeen"], where
        assert at["overflow"] <= 0, where
        region = at["sourceRegion"]
        assert not at["sourceRegionIsPage"] and region["scrolls"], where  # its own scrolling
        if size == "laptop":  # beside the outputs
            assert region["right"] <= at["firstOutput"]["left"], where
            assert region["bottom"] <= height, where
        else:  # above them, a few lines high
            assert region["bottom"] <= at["firstOutput"]["top"], where
            assert region["height"] <= 0.3 * height, where
    context.close()
