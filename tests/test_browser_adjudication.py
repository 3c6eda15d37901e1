"""The disagreement review in a real Chromium: an adjudicator works through the queue
with the keyboard alone (a digit picks, Enter saves and shows the next output, through
htmx), and the adjudicated values are stored as their own source."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from studies.models import Adjudication, Judgment
from tests.browser import FOCUSED, log_in, ready
from tests.factories import review_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_an_adjudicator_works_through_the_queue_with_the_keyboard(live_server, page: Page, cast):
    study, run, ids = review_study(cast["owner"])
    judgments = list(Judgment.objects.order_by("pk").values_list("pk", "value"))
    log_in(page, live_server.url, "owner")
    page.goto(f"{live_server.url}/studies/{study.pk}/adjudicate/")
    ready(page)
    page.evaluate("window.sameDocument = true")  # gone if a save reloaded the page
    queue = [ids[("d1", "a")], ids[("d0", "b")], ids[("d1", "b")]]  # largest first
    given = ["2", "4", "3"]
    for k, (output, digit) in enumerate(zip(queue, given, strict=True)):
        expect(page.locator("#annotate")).to_have_attribute("data-item", str(output))
        assert page.evaluate(FOCUSED) == "aspect-COH", f"item {k + 1} starts elsewhere"
        page.keyboard.press("ArrowRight")  # the arrows step the choice, the digit sets it
        page.keyboard.press(digit)
        expect(page.locator("#aspect-COH input:checked")).to_have_attribute("data-key", digit)
        page.keyboard.press("Enter")
        expect(page.locator("#progress-text")).to_contain_text(f"{k + 1} adjudicated")
    expect(page.locator("#annotate")).to_have_attribute("data-item", str(ids[("d2", "a")]))
    assert page.evaluate("window.sameDocument") is True
    stored = dict(Adjudication.objects.values_list("output_id", "value"))
    assert stored == {pk: float(d) for pk, d in zip(queue, given, strict=True)}
    assert set(Adjudication.objects.values_list("adjudicator__username", "run_id")) == {
        ("owner", run.pk)
    }
    assert list(Judgment.objects.order_by("pk").values_list("pk", "value")) == judgments
