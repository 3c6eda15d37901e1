"""No silent revert, in a real Chromium (issue 43): after "Save change" on an answered
item, the browser's Back shows the stored answer, not the page as it was, and a second
tab still showing the old answer cannot put it back: its Enter is refused with both
values named, and the tab then shows what is stored."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from annotation.models import Assignment
from studies.models import Judgment
from tests.annotation.conftest import make_study, new_campaign
from tests.browser import FOCUSED, log_in, ready
from tests.conftest import wait_until_true

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def _item_id(url: str) -> int:
    return int(url.rstrip("/").rsplit("/", 1)[1])


def test_back_after_save_change_and_a_second_tab_never_put_the_old_answer_back(
    live_server, browser: Browser, cast
):
    campaign = new_campaign(
        make_study(cast["owner"]), cast["owner"], [cast["annotator"]], aspect_codes=("COH",)
    )
    context = browser.new_context()
    page = context.new_page()
    log_in(page, live_server.url, "annotator")
    page.goto(f"{live_server.url}/annotate/")
    page.click(f"#start-{campaign.pk}")
    ready(page)
    first = _item_id(page.url)
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page.locator("#progress-text")).to_have_text("1 / 12")
    wait_until_true(page, f"{FOCUSED} === 'aspect-COH'")

    page.keyboard.press("p")  # back to the first item: change 2 into 5
    expect(page.locator("#revisit-note")).to_contain_text("press Save change")
    assert _item_id(page.url) == first
    wait_until_true(page, f"{FOCUSED} === 'aspect-COH'")
    page.keyboard.press("5")
    page.keyboard.press("Enter")
    expect(page.locator("#revisit-note")).to_have_count(0)
    output = Assignment.objects.get(annotator=cast["annotator"], item_id=first).item.output_a_id
    judged = Judgment.objects.filter(output_id=output, annotator=cast["annotator"])
    assert list(judged.values_list("value", flat=True)) == [5.0]

    page.go_back()  # the browser's Back: the first item as stored, 5, not the old page's 2
    expect(page).to_have_url(f"{live_server.url}/annotate/{campaign.pk}/items/{first}/")
    expect(page.locator("#revisit-note")).to_be_visible()
    expect(page.locator("#aspect-COH input:checked")).to_have_attribute("data-key", "5")
    ready(page)

    other = context.new_page()  # a second tab on the same item, showing 5
    other.goto(page.url)
    ready(other)
    expect(other.locator("#aspect-COH input:checked")).to_have_attribute("data-key", "5")

    wait_until_true(page, f"{FOCUSED} === 'aspect-COH'")  # the first tab changes it to 3
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator("#revisit-note")).to_have_count(0)
    assert list(judged.values_list("value", flat=True)) == [3.0]

    other.locator("#submit-answer").click()  # the second tab still shows 5: refused
    error = other.locator("#annotate-error")
    expect(error).to_contain_text("Coherence is stored as 3, and this page sent 5")
    expect(other.locator("#aspect-COH input:checked")).to_have_attribute("data-key", "3")
    assert list(judged.values_list("value", flat=True)) == [3.0]  # not reverted
    context.close()
