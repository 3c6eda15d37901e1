"""Hostile text is shown, never executed: XSS vectors in every text a user controls,
imported through the real import service, on every page that shows them, in Chromium.

Each vector sets ``window.__xss`` (or the title to "pwned", or calls ``alert``) if it
ever runs. On each page: nothing ran, no dialog opened, no element came from the data
(event handlers, ``javascript:`` URLs, frames, htmx attributes, scripts with the marker),
no request went to the logout URL, and every vector's literal text is in the page.
Waits use ``page.evaluate`` polling and Playwright's locators, never ``wait_for_function``
(the content security policy forbids eval).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from annotation.models import Campaign
from studies.models import Aspect, Dataset, MetricRun, Study
from studies.services.imports import ImportOptions, import_file
from tests.annotation.conftest import new_campaign
from tests.browser import log_in
from tests.conftest import XSS_CHECKS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]

VECTORS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    "<svg onload=window.__xss=3>",
    '<a href="javascript:window.__xss=4">x4</a>',
    '"><script>window.__xss=5</script>',
    "'><img src=x onerror=window.__xss=6>",
    "'-alert(7)-'",
    "{{7*7}} x8",
    "{% debug %} x9",
    "</textarea><script>window.__xss=10</script>",
    '<iframe srcdoc="<script>parent.__xss=11</script>"></iframe>',
    "&lt;img src=x onerror=window.__xss=12&gt; &#60;b&#62;x12",
    "</script><script>window.__xss=13</script>",
    "\uff1cscript\uff1ewindow.__xss=14\uff1c/script\uff1e \u202e<scr\u200bipt>x14",
    '<div hx-get="/logout/" hx-trigger="load" hx-target="body">x15</div>',
    '<div hx-on:htmx:load="window.__xss=16">x16</div>',
    "<img src=x onerror=\"document.title='pwned'\">",
    "<details open ontoggle=window.__xss=18>x18</details>",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=19>",
    '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=20">',
    '" onmouseover="window.__xss=21" x="',
    "`${window.__xss=22}`",
    "javascript:window.__xss=23",
]
N_DOCS = 10  # × 2 systems: 20 outputs, all of them on a run page's "highest scores"
N_RUNS = 8  # each run's label holds three vectors

# Elements and attributes that only hostile data could have put into these pages.
INJECTED = """() => {
  const marker = /__xss|alert\\(|pwned|logout/i;
  const found = [];
  for (const el of document.querySelectorAll("*")) {
    const tag = el.tagName.toLowerCase();
    if (["img", "iframe", "object", "embed", "math", "base", "frame"].includes(tag)
        || (tag === "meta" && el.hasAttribute("http-equiv"))
        // a JSON data block (a chart's spec, via json_script) is never executed; a
        // breakout from it would show up as another element here
        || (tag === "script" && el.type !== "application/json" && marker.test(el.textContent))) {
      found.push(el.outerHTML.slice(0, 120));
    }
    for (const a of el.attributes) {
      const name = a.name.toLowerCase();
      const handler = name.startsWith("on") || name.startsWith("hx-") || name.startsWith("data-hx-")
        || name === "srcdoc";
      const url = ["href", "src", "action", "formaction", "data", "xlink:href"].includes(name);
      if ((handler && marker.test(a.value)) || (url && /^\\s*javascript:/i.test(a.value))) {
        found.push(`${tag}[${name}=${a.value.slice(0, 60)}]`);
      }
    }
  }
  return found;
}"""


def hostile_records() -> list[dict[str, Any]]:
    """20 outputs; every vector is in doc ids, system ids, outputs, sources, references,
    a dialogue context; an aspect and eight metric columns to correlate."""
    everything = " ".join(VECTORS)
    records = []
    for k in range(2 * N_DOCS):
        doc, system = divmod(k, 2)
        doc_vectors = [VECTORS[doc], *([VECTORS[doc + N_DOCS]] if doc + N_DOCS < 20 else [])]
        records.append(
            {
                "doc_id": f"d{doc} " + " ".join(doc_vectors),
                "system_id": f"s{system} {VECTORS[(2 * N_DOCS + k) % len(VECTORS)]}",
                "source": f"Source {doc}: {everything}",
                "references": [everything, VECTORS[doc]],
                "output": f"o{k} {VECTORS[k]}",
                "context": {"turns": [{"speaker": VECTORS[doc], "text": everything}]},
                "human": {"hostile_aspect": float(k % 5 + 1)},
                "metrics": {f"m{r}": ((k * 7 + r * 3) % 11) / 10 for r in range(N_RUNS)},
            }
        )
    return records


def whole_vectors(limit: int) -> str:
    """As many vectors, whole, as fit in ``limit`` characters."""
    text = ""
    for vector in VECTORS:
        if len(text) + len(vector) + 1 > limit:
            break
        text = f"{text} {vector}".strip()
    return text


def build(owner: Any, annotator: Any, write_jsonl: Any) -> dict[str, Any]:
    """The hostile dataset (the import creates its aspect and runs), one small dataset per
    vector for the list page, and a campaign over the hostile outputs."""
    path: Path = write_jsonl(hostile_records(), name="hostile.jsonl")
    import_file(
        path,
        ImportOptions(
            dataset="hostile",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=owner,
            create_aspects=True,
            description=" ".join(VECTORS),
        ),
    )
    # imports take slugs only, but a row from before that check (or written by hand) may
    # hold any name: the pages must escape it too
    dataset_name = VECTORS[4]
    Dataset.objects.filter(owner=owner, name="hostile").update(name=dataset_name)
    for i, vector in enumerate(VECTORS):
        small = write_jsonl(
            [{"doc_id": "d", "system_id": "s", "source": "x", "output": "y"}], name=f"v{i}.jsonl"
        )
        import_file(
            small,
            ImportOptions(
                dataset=f"xss-{i}",
                task="summarization",
                file_format="jsonl",
                file_name=small.name,
                owner=owner,
                description=vector,
            ),
        )
    # names the forms take as free text: an aspect edit, run labels, study and campaign
    aspect = Aspect.objects.get(owner=owner, key="hostile_aspect")
    aspect.name, aspect.definition = whole_vectors(100), " ".join(VECTORS)
    aspect._changed_by = owner
    aspect.save()
    runs = list(MetricRun.objects.filter(dataset__name=dataset_name).order_by("metric"))
    assert len(runs) == N_RUNS
    for r, run in enumerate(runs):
        run.label = " ".join(VECTORS[3 * r : 3 * r + 3])
        assert len(run.label) <= 200
        run.save(update_fields=["label"])
    study = Study.objects.create(name=whole_vectors(200), dataset=runs[0].dataset, owner=owner)
    campaign: Campaign = new_campaign(
        study,
        owner,
        [annotator],
        aspect_codes=(aspect.code,),
        name=whole_vectors(200),
        show_references=True,
    )
    return {"dataset": runs[0].dataset, "run": runs[0], "campaign": campaign, "study": study}


class Watch:
    """What a browser context saw that hostile data could have caused."""

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", self._dialog)
        page.on("request", lambda request: self.requests.append(request.url))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


def settled(page: Page) -> None:
    """Loaded, htmx running, and a moment for onerror/onload/htmx load triggers to fire."""
    deadline = time.monotonic() + 10
    while not page.evaluate("() => typeof htmx === 'object' && document.readyState === 'complete'"):
        assert time.monotonic() < deadline, "the page did not finish loading"
        page.wait_for_timeout(50)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)


def check_page(
    page: Page, watch: Watch, name: str, findings: dict[str, list[str]], shown: str = ""
) -> None:
    """Record on ``findings[name]`` everything that shows a vector was not inert; every
    vector (or those in ``shown``, for a page with only a name) must be there as text."""
    settled(page)
    problems = []
    flag = page.evaluate("() => [window.__xss === undefined ? null : window.__xss, document.title]")
    if flag[0] is not None:
        problems.append(f"executed: window.__xss = {flag[0]!r}")
    if flag[1] == "pwned":
        problems.append("executed: the title was set to 'pwned'")
    problems += [f"executed: dialog {d}" for d in watch.dialogs]
    problems += [f"request to {url}" for url in watch.requests if "logout" in url]
    problems += [f"injected: {html}" for html in page.evaluate(INJECTED)]
    text = page.evaluate("() => document.documentElement.textContent")
    problems += [
        f"not shown as text: vector {i + 1} {v!r}"
        for i, v in enumerate(VECTORS)
        if v in (shown or v) and v not in text
    ]
    if "49 x8" in text or "sys.path" in text or "'csrf_token'" in text:
        problems.append("a template tag in the data was evaluated")
    findings[name] = problems
    XSS_CHECKS["pages"] += 1
    XSS_CHECKS["executed"] += sum(p.startswith(("executed", "request")) for p in problems)
    XSS_CHECKS["injected"] += sum(p.startswith("injected") for p in problems)
    watch.dialogs.clear()
    watch.requests.clear()


CHARTS_DRAWN = """() => [...document.querySelectorAll("[data-chart]")]
  .every((box) => box.getAttribute("data-drawn") === "yes")"""


def visit(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    page.wait_for_function(CHARTS_DRAWN)  # Vega-Lite charts (their labels are the data)


def test_hostile_text_is_shown_escaped_and_never_runs_on_any_page(
    live_server, page: Page, browser: Browser, cast, write_jsonl
):
    built = build(cast["owner"], cast["annotator"], write_jsonl)
    dataset, run, campaign = built["dataset"], built["run"], built["campaign"]
    base = live_server.url
    findings: dict[str, list[str]] = {}
    XSS_CHECKS["vectors"] = len(VECTORS)

    watch = Watch(page)
    log_in(page, base, "owner")
    owner_pages = {
        "dataset list": "/datasets/",
        "dataset page": f"/datasets/{dataset.pk}/",
        "correlations": f"/datasets/{dataset.pk}/correlations/",
    }
    for name, url in owner_pages.items():
        visit(page, base + url)
        check_page(page, watch, name, findings)

    page.locator("td.cell").first.click()  # the drill-down, swapped in by htmx
    expect(page.locator("#cell-detail")).to_contain_text("vs human")
    page.wait_for_function(CHARTS_DRAWN)
    check_page(page, watch, "cell drill-down (htmx)", findings)

    cell_url = page.locator("td.cell").first.get_attribute("hx-get")
    assert cell_url
    more_pages = {
        "cell page": cell_url,
        "paper view": f"/datasets/{dataset.pk}/correlations/paper/",
        "run page": f"/runs/{run.pk}/",
        "metric vs metric": f"/datasets/{dataset.pk}/compare/?a={run.pk}&b={run.pk}",
    }
    for name, url in more_pages.items():
        visit(page, base + url)
        check_page(page, watch, name, findings)
    visit(page, f"{base}/campaigns/{campaign.pk}/")
    check_page(page, watch, "campaign page", findings, shown=campaign.name)
    study = built["study"]
    for name, url in {
        "researcher's home": "/",
        "study page": f"/studies/{study.pk}/",
        "study members": f"/studies/{study.pk}/members/",
    }.items():
        visit(page, base + url)
        check_page(page, watch, name, findings, shown=study.name)

    context = browser.new_context()
    annotator_page = context.new_page()
    annotator_watch = Watch(annotator_page)
    log_in(annotator_page, base, "annotator")
    visit(annotator_page, base + "/annotate/")
    check_page(
        annotator_page, annotator_watch, "annotator's campaigns", findings, shown=campaign.name
    )
    annotator_page.click(f"#start-{campaign.pk}")
    expect(annotator_page.locator("#answer-form")).to_be_visible()
    assert "/items/" in annotator_page.url
    check_page(annotator_page, annotator_watch, "annotation item", findings)
    context.close()

    assert {name: problems for name, problems in findings.items() if problems} == {}
    assert len(findings) == 14
