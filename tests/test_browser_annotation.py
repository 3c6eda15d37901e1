"""Annotation in a real Chromium: an annotator works with the keyboard only, a second
annotator gets other items until the overlap is reached, the researcher reads α."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from playwright.sync_api import Browser, Page, expect

from annotation.models import Assignment
from annotation.services import answers, assignment
from annotation.services.agreement import compute_agreement
from studies.models import Dataset, Judgment, Study
from tests.annotation.conftest import make_study, new_campaign
from tests.browser import log_in, ready
from tests.factories import DatasetFactory, DocumentFactory, OutputFactory, UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def other_campaign_item(cast) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """A campaign of another researcher's study with a leased item: (campaign, item)."""
    stranger = UserFactory(username="stranger", role="annotator")
    dataset = DatasetFactory(name="elsewhere", owner=cast["outsider"])
    OutputFactory(document=DocumentFactory(dataset=dataset), text="Not for you.")
    study = Study.objects.create(name="Other", dataset=dataset, owner=cast["outsider"])
    campaign = new_campaign(study, cast["outsider"], [stranger], aspect_codes=("COH",))
    lease = assignment.claim_next(campaign, stranger)
    return campaign.pk, lease.item_id


def test_annotator_reads_guidelines_and_rates_three_items_with_the_keyboard(
    live_server, page: Page, cast
):
    campaign = new_campaign(make_study(cast["owner"]), cast["owner"], [cast["annotator"]])
    elsewhere = other_campaign_item(cast)
    log_in(page, live_server.url, "annotator")
    page.click("#nav-annotate")
    expect(page.locator(".campaign-row h2")).to_contain_text("Campaign")
    page.click("text=Guidelines")
    expect(page.locator("#guide-COH")).to_contain_text("Coherence")
    expect(page.locator("#guide-FLU")).to_contain_text("version 1")
    page.go_back()
    page.click(f"#start-{campaign.pk}")
    expect(page.locator("#progress-text")).to_have_text("0 / 12")
    ready(page)

    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()

    page.evaluate("window.sameDocument = true")  # gone if a submit reloaded the page
    rated = []
    for k, (coherence, fluency) in enumerate([("4", "2"), ("5", "5"), ("1", "3")]):
        item_url = page.url
        page.keyboard.press(coherence)  # the first aspect has the focus
        page.keyboard.press("Tab")
        page.keyboard.press(fluency)
        page.keyboard.press("Enter")
        expect(page.locator("#progress-text")).to_have_text(f"{k + 1} / 12")
        expect(page).not_to_have_url(item_url)  # htmx pushed the next item's URL
        rated.append(int(item_url.rstrip("/").rsplit("/", 1)[1]))
    assert page.evaluate("document.getElementById('progress').value") == 3
    assert page.evaluate("window.sameDocument") is True  # saved through htmx, no reload

    page.keyboard.press("s")
    page.keyboard.type("off topic")
    page.keyboard.press("Enter")
    expect(page.locator("#progress-text")).to_have_text("4 / 12")

    values = {
        (j.output_id, j.aspect.code): j.value
        for j in Judgment.objects.filter(annotator=cast["annotator"]).select_related("aspect")
    }
    assignments = Assignment.objects.filter(annotator=cast["annotator"]).select_related("item")
    by_item = {a.item_id: a.item.output_a_id for a in assignments}
    assert [(values[(by_item[i], "COH")], values[(by_item[i], "FLU")]) for i in rated] == [
        (4.0, 2.0),
        (5.0, 5.0),
        (1.0, 3.0),
    ]
    assert assignments.get(status="skipped").skip_reason == "off topic"

    response = page.goto(f"{live_server.url}/annotate/{elsewhere[0]}/items/{elsewhere[1]}/")
    assert response is not None and response.status == 404
    assert "Not for you." not in page.content()


def test_a_second_annotator_gets_other_items_until_the_overlap_is_reached(
    live_server, browser: Browser, cast
):
    second_user = UserFactory(username="second", role="annotator")
    study = make_study(cast["owner"])
    campaign = new_campaign(
        study,
        cast["owner"],
        [cast["annotator"], second_user],
        overlap=2,
        selection="random",
        sample_size=4,
        aspect_codes=("COH",),
    )
    seen: dict[str, list[int]] = {}
    for username, n in (("annotator", 2), ("second", 4)):
        phone = {"width": 390, "height": 844} if username == "second" else None
        context = browser.new_context(viewport=phone) if phone else browser.new_context()
        page = context.new_page()
        log_in(page, live_server.url, username)
        page.goto(live_server.url + "/annotate/")
        page.click(f"#start-{campaign.pk}")
        ready(page)
        seen[username] = []
        for k in range(n):
            expect(page.locator("#progress-text")).to_have_text(re.compile(rf"^{k} / "))
            if phone and k == 0:
                form, output = page.locator("#answer-form"), page.locator(".output").first
                assert form.bounding_box()["y"] > output.bounding_box()["y"]  # stacked below
                assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            seen[username].append(int(page.url.rstrip("/").rsplit("/", 1)[1]))
            page.keyboard.press("3")
            page.keyboard.press("Enter")
        if phone:  # the phone layout stacks the texts and the answers, no sideways scrolling
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            expect(page.locator("#all-done")).to_be_visible()
        context.close()
    first, second = seen["annotator"], seen["second"]
    held = Assignment.objects.get(annotator=cast["annotator"], status="leased").item_id
    assert len(set(first)) == 2 and len(set(second)) == 4
    assert second[0] not in [*first, held]  # the untouched item comes first
    assert set(second[1:]) == {*first, held}  # then those that need a second judgment
    per_item = Counter(Assignment.objects.filter(status="done").values_list("item_id", flat=True))
    assert max(per_item.values()) == 2 and sum(per_item.values()) == 6


def test_the_researcher_sees_alpha(live_server, page: Page, cast):
    annotators = [cast["annotator"]] + [
        UserFactory(username=f"a{k}", role="annotator") for k in (2, 3)
    ]
    campaign = new_campaign(
        make_study(cast["owner"]), cast["owner"], annotators, overlap=3, aspect_codes=("COH",)
    )
    for k, user in enumerate(annotators):
        while (lease := assignment.claim_next(campaign, user)) is not None:
            value = 1 + (lease.item.output_a_id * (1 + (k == 2))) % 5
            answers.submit(lease.pk, user, {a.pk: value for a in campaign.aspects.all()})
    expected = compute_agreement(campaign, resamples=10)["aspects"][0]["alpha"]
    assert Dataset.objects.count() == 1
    log_in(page, live_server.url, "owner")
    page.click("nav >> text=Campaigns")
    page.click(f"a[href='/campaigns/{campaign.pk}/']")
    expect(page.locator("#alpha-table tr[data-aspect=COH] .alpha")).to_have_text(f"{expected:.3f}")
    expect(page.locator("#annotator-table")).to_contain_text("a3")
