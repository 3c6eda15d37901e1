"""The researcher's journey from a dataset to annotation in a real Chromium: a researcher
with an uploaded dataset creates a study from the home page, invites an annotator,
creates a campaign (its guardrail on overlap first), and the annotator sees and starts it.
No CSP violation, console or script error on the way."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from annotation.models import Campaign
from studies.models import Aspect, Study
from tests.browser import Watched
from tests.factories import import_jsonl, synthetic_records

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_from_an_uploaded_dataset_to_an_annotators_campaign(
    live_server, browser: Browser, cast, write_jsonl
):
    path = write_jsonl(synthetic_records(), name="uploaded.jsonl")
    import_jsonl(path, "uploaded", cast["owner"])
    coherence = Aspect.objects.get(code="COH", owner__isnull=True)

    researcher = Watched(browser, live_server.url)
    researcher.log_in("owner")
    page = researcher.page
    expect(page.locator("h1")).to_have_text("Your studies")
    expect(page.locator("#no-studies")).to_be_visible()
    page.locator("#home-datasets tr", has_text="uploaded").get_by_role(
        "link", name="New study"
    ).click()
    expect(page.locator("h1")).to_have_text("New study")
    page.fill("#id_name", "Coherence round")
    page.check(f"input[name=aspects][value='{coherence.pk}']")
    page.click("#create-study")
    expect(page.locator("h1")).to_contain_text("Members of")
    study = Study.objects.get(name="Coherence round")
    assert study.dataset.name == "uploaded" and study.owner == cast["owner"]

    page.fill("#id_username", "annotator")
    page.click("#invite-member")
    expect(page.locator("#members")).to_contain_text("annotator")
    page.click("#study-new-campaign")
    expect(page.locator("#id_study")).to_have_value(str(study.pk))
    expect(page.locator(f"input[name=annotators][value='{cast['annotator'].pk}']")).to_be_checked()
    expect(page.locator("input[name=aspects]")).to_have_count(1)  # the study's one aspect
    page.fill("#id_name", "Round one")
    page.check(f"input[name=aspects][value='{coherence.pk}']")
    page.fill("#id_overlap", "2")  # more than the one invited annotator
    page.click("#create-campaign")
    expect(
        page.locator(".field", has=page.locator("#id_overlap")).locator(".error")
    ).to_contain_text("invite more or lower the overlap")
    assert not Campaign.objects.exists()
    page.fill("#id_overlap", "1")
    page.click("#create-campaign")
    expect(page).to_have_url(re.compile(r"/campaigns/\d+/$"))
    campaign = Campaign.objects.get(name="Round one")
    assert campaign.study == study and list(campaign.annotators.all()) == [cast["annotator"]]
    researcher.open(f"/studies/{study.pk}/")
    expect(page.locator("#study-campaigns")).to_contain_text("Round one")
    researcher.open("/")
    expect(page.locator("#home-studies")).to_contain_text("Coherence round")

    annotator = Watched(browser, live_server.url)
    annotator.log_in("annotator")
    annotator.open("/annotate/")
    expect(annotator.page.locator(".campaign-row h2")).to_contain_text("Round one")
    annotator.page.click(f"#start-{campaign.pk}")
    expect(annotator.page.locator("#answer-form")).to_be_visible()

    problems = researcher.collect() + annotator.collect()
    # the overlap guardrail answers 400 on purpose; nothing else may fail
    problems = [p for p in problems if not p.startswith("400 for ") or "/campaigns/new/" not in p]
    assert problems == [], "\n".join(problems)
