"""The annotation page in a real Chromium: digits fill the aspects in order and every new
item starts on its first aspect; the rating buttons stay on one row at common widths; on
a phone the answers stay in reach over a long source, which scrolls in its own region."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from annotation.models import Assignment
from studies.models import Judgment, Study
from tests.annotation.conftest import make_study, new_campaign
from tests.browser import FOCUSED, log_in, ready
from tests.conftest import wait_until_true
from tests.factories import DatasetFactory, DocumentFactory, OutputFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]
ASPECTS = ("COH", "FLU", "REL")  # shown by code: Coherence, Fluency, Relevance


def _item_id(page: Page) -> int:
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def test_digits_fill_the_aspects_in_order_and_each_new_item_starts_on_the_first(
    live_server, page: Page, cast
):
    campaign = new_campaign(
        make_study(cast["owner"]), cast["owner"], [cast["annotator"]], aspect_codes=ASPECTS
    )
    log_in(page, live_server.url, "annotator")
    page.goto(f"{live_server.url}/annotate/{campaign.pk}/guidelines/")
    expect(page.locator("#guidelines-start")).to_contain_text("12 items left for you")
    page.click(f"#guidelines-start #start-{campaign.pk}")  # start from the guidelines
    expect(page.locator("#progress-text")).to_have_text("0 / 12")
    ready(page)
    page.evaluate("window.sameDocument = true")  # gone if a submit reloaded the page

    given = [("4", "2", "5"), ("1", "3", "2"), ("5", "5", "1")]
    rated = []
    for k, digits in enumerate(given):
        assert page.evaluate(FOCUSED) == "aspect-COH", f"item {k + 1} starts elsewhere"
        for j, digit in enumerate(digits):
            page.keyboard.press(digit)
            following = ASPECTS[min(j + 1, len(ASPECTS) - 1)]  # the last one keeps the focus
            assert page.evaluate(FOCUSED) == f"aspect-{following}"
            checked = page.locator(f"#aspect-{ASPECTS[j]} input:checked")
            expect(checked).to_have_attribute("data-key", digit)
        item_url = page.url
        rated.append(_item_id(page))
        page.keyboard.press("Enter")  # the focus is on Relevance when the item is sent
        expect(page.locator("#progress-text")).to_have_text(f"{k + 1} / 12")
        expect(page).not_to_have_url(item_url)  # htmx pushed the next item's URL
    assert page.evaluate("window.sameDocument") is True  # saved through htmx, no reload
    assert page.evaluate(FOCUSED) == "aspect-COH"

    # A digit with no aspect focused goes to the first unanswered aspect.
    page.keyboard.press("3")
    page.locator("#submit-answer").focus()
    page.keyboard.press("4")
    expect(page.locator("#aspect-FLU input:checked")).to_have_attribute("data-key", "4")
    expect(page.locator("#aspect-COH input:checked")).to_have_attribute("data-key", "3")

    by_item = dict(
        Assignment.objects.filter(annotator=cast["annotator"]).values_list(
            "item_id", "item__output_a_id"
        )
    )
    values = {
        (j.output_id, j.aspect.code): j.value
        for j in Judgment.objects.filter(annotator=cast["annotator"]).select_related("aspect")
    }
    assert [tuple(values[(by_item[i], code)] for code in ASPECTS) for i in rated] == [
        tuple(float(d) for d in digits) for digits in given
    ]


def _rows(page: Page) -> list[set[float]]:
    """For each aspect, the distinct tops of its rating buttons (one row: one value)."""
    return page.evaluate(
        """Array.from(document.querySelectorAll('#annotate .points')).map((row) =>
             Array.from(row.querySelectorAll('.point')).map((p) => Math.round(p.getBoundingClientRect().top)))"""
    )


@pytest.mark.parametrize("width", [1280, 1024, 390])
def test_the_rating_buttons_stay_on_one_row(live_server, browser: Browser, cast, width):
    campaign = new_campaign(
        make_study(cast["owner"]), cast["owner"], [cast["annotator"]], aspect_codes=ASPECTS
    )
    pairwise = new_campaign(
        Study.objects.get(),
        cast["owner"],
        [cast["annotator"]],
        name="Pairs",
        mode="pairwise",
        aspect_codes=ASPECTS,
    )
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    for c, n_points in ((campaign, 5), (pairwise, 3)):
        page.goto(f"{live_server.url}/annotate/")
        page.click(f"#start-{c.pk}")
        ready(page)
        rows = _rows(page)
        assert len(rows) == len(ASPECTS) and all(len(row) == n_points for row in rows)
        assert all(len(set(row)) == 1 for row in rows), (width, c.mode, rows)
        outside = page.evaluate(
            """Array.from(document.querySelectorAll('#annotate .point')).filter((p) => {
                 const box = p.getBoundingClientRect(), field = p.closest('fieldset').getBoundingClientRect();
                 return box.left < field.left || box.right > field.right || box.right > window.innerWidth;
               }).length"""
        )
        assert outside == 0  # every button fits inside its aspect and the screen
        spread = page.evaluate(
            """Math.max(...Array.from(document.querySelectorAll('#annotate .points')).map((row) => {
                 const w = Array.from(row.querySelectorAll('.point')).map((p) => p.getBoundingClientRect().width);
                 return Math.max(...w) - Math.min(...w);
               }))"""
        )
        assert spread < 2, (width, c.mode, spread)  # equal buttons, anchored or not
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1]  # nothing sticks out sideways either
    context.close()


ON_SCREEN = """(selector) => {
  const el = document.querySelector(selector), box = el.getBoundingClientRect();
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  if (x < 0 || y < 0 || x > window.innerWidth || y > window.innerHeight) return false;
  const hit = document.elementFromPoint(x, y);  // not clipped by the bar, nor covered
  return hit !== null && (hit === el || el.contains(hit));
}"""


def test_on_a_phone_the_answers_stay_in_reach_over_a_long_source(
    live_server, browser: Browser, cast
):
    dataset = DatasetFactory(name="long", owner=cast["owner"])
    source = " ".join(f"Sentence {k} of a long news story about the harbour." for k in range(120))
    for d in range(2):
        OutputFactory(
            document=DocumentFactory(dataset=dataset, source=source), text=f"Summary {d}."
        )
    study = Study.objects.create(name="Long", dataset=dataset, owner=cast["owner"])
    campaign = new_campaign(study, cast["owner"], [cast["annotator"]], aspect_codes=ASPECTS)
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    page.goto(f"{live_server.url}/annotate/")
    page.click(f"#start-{campaign.pk}")
    ready(page)
    # far longer than the screen, the source scrolls in its own region above the output
    assert page.evaluate("document.querySelector('#context').scrollHeight") > 3 * 844
    assert page.evaluate(ON_SCREEN, ".output h2")
    assert page.evaluate("window.scrollY") == 0
    for selector in (
        "#aspect-COH .point:first-child",
        "#aspect-COH .point:last-child",
        "#submit-answer",
        "[data-skip]",
    ):
        assert page.evaluate(ON_SCREEN, selector), selector
    # Tap a rating per aspect and submit: the answer bar scrolls, the page does not.
    for code, nth in (("COH", 3), ("FLU", 1), ("REL", 4)):
        point = f"#aspect-{code} .point:nth-child({nth + 1})"
        if not page.evaluate(ON_SCREEN, point):  # scroll the bar, as a finger would
            page.mouse.move(195, 700)
            page.mouse.wheel(0, 400)
            wait_until_true(page, f"({ON_SCREEN})({point!r})")
        page.locator(point).tap()
        assert page.evaluate(ON_SCREEN, "#submit-answer")
    assert page.evaluate("window.scrollY") == 0  # the whole source was never scrolled past
    page.locator("#submit-answer").tap()
    expect(page.locator("#progress-text")).to_have_text("1 / 2")
    assert sorted(Judgment.objects.values_list("aspect__code", "value")) == [
        ("COH", 4.0),
        ("FLU", 2.0),
        ("REL", 5.0),
    ]
    # Halfway down the next source the output and the answers are still on screen.
    box = page.locator("#context").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # over the source
    page.mouse.wheel(0, 1500)
    wait_until_true(page, "document.querySelector('#context').scrollTop > 1000")
    assert page.evaluate("window.scrollY") == 0  # the source scrolled, not the page
    for selector in (".output h2", "#aspect-COH .point:nth-child(3)", "#submit-answer"):
        assert page.evaluate(ON_SCREEN, selector), selector
    context.close()


def test_p_goes_back_to_the_answered_item_where_a_change_is_saved_in_place(
    live_server, page: Page, cast
):
    campaign = new_campaign(
        make_study(cast["owner"]), cast["owner"], [cast["annotator"]], aspect_codes=("COH",)
    )
    log_in(page, live_server.url, "annotator")
    page.goto(f"{live_server.url}/annotate/")
    page.click(f"#start-{campaign.pk}")
    ready(page)
    expect(page.locator("#previous-item")).to_have_count(0)  # nothing answered yet
    first = _item_id(page)
    page.keyboard.press("2")
    page.click(".comment summary")
    page.locator("#comment").press_sequentially("1 2 s p: typed keys stay in the comment")
    page.keyboard.press("Enter")  # a new line in the comment, not a submit
    expect(page.locator("#skip-dialog")).to_be_hidden()
    expect(page.locator("#progress-text")).to_have_text("0 / 12")
    page.click("#submit-answer")
    expect(page.locator("#progress-text")).to_have_text("1 / 12")
    second = _item_id(page)
    wait_until_true(page, f"{FOCUSED} === 'aspect-COH'")

    page.keyboard.press("p")  # back to the first item, its answer and comment shown
    expect(page.locator("#revisit-note")).to_be_visible()
    assert _item_id(page) == first
    expect(page.locator("#aspect-COH input:checked")).to_have_attribute("data-key", "2")
    expect(page.locator("#comment")).to_have_value("1 2 s p: typed keys stay in the comment")
    expect(page.locator("[data-skip]")).to_have_count(0)  # an answer is changed, not skipped
    wait_until_true(page, f"{FOCUSED} === 'aspect-COH'")
    page.keyboard.press("5")
    page.keyboard.press("Enter")  # saved; the queue goes on where it was
    expect(page.locator("#revisit-note")).to_have_count(0)
    assert _item_id(page) == second
    expect(page.locator("#progress-text")).to_have_text("1 / 12")

    judged = Judgment.objects.filter(annotator=cast["annotator"])
    assert list(judged.values_list("value", flat=True)) == [5.0]  # changed, not added
    done = Assignment.objects.get(annotator=cast["annotator"], item_id=first)
    assert done.comment == "1 2 s p: typed keys stay in the comment"
