"""Informative-first routing in a real Chromium: the researcher creates a campaign with
the option on the New campaign page, an annotator works through two items, and the
campaign page says why each item was handed out."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from annotation.models import Assignment, Campaign
from studies.models import Aspect
from tests.annotation.routing_data import DISAGREE, make_routed_study
from tests.browser import log_in, ready

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("defaults_restored"),
    pytest.mark.browser,
]


def test_an_informative_campaign_shows_why_each_item_was_handed_out(
    live_server, browser: Browser, cast
):
    study, run_a, run_b = make_routed_study(cast["owner"])
    coherence = Aspect.objects.get(code="COH")
    researcher = browser.new_context().new_page()
    log_in(researcher, live_server.url, "owner")
    researcher.goto(live_server.url + "/campaigns/new/")
    researcher.select_option("#id_study", str(study.pk))
    researcher.fill("#id_name", "Routed in the browser")
    researcher.check(f"input[name=aspects][value='{coherence.pk}']")
    researcher.fill("#id_overlap", "1")
    researcher.check(f"input[name=annotators][value='{cast['annotator'].pk}']")
    researcher.select_option("#id_routing", "informative")
    researcher.select_option("#id_question_run_a", str(run_a.pk))
    researcher.select_option("#id_question_run_b", str(run_b.pk))
    researcher.select_option("#id_question_aspect", str(coherence.pk))
    researcher.click("#create-campaign")
    expect(researcher).to_have_url(re.compile(r"/campaigns/\d+/$"))
    campaign = Campaign.objects.get(name="Routed in the browser")
    assert campaign.is_informative
    expect(researcher.locator("#routing-mode")).to_have_text("Informative first")
    expect(researcher.locator("#routing-recent")).to_contain_text("No item handed out yet")
    expect(researcher.locator("#routing-next tbody tr").first).to_contain_text(
        "ρ(ROUGE-2, ROUGE-L) = -1.00 here, disagreement band 2 of 2"
    )

    annotator = browser.new_context().new_page()
    log_in(annotator, live_server.url, "annotator")
    annotator.goto(live_server.url + "/annotate/")
    annotator.click(f"#start-{campaign.pk}")
    ready(annotator)
    items = []
    for k in range(2):
        expect(annotator.locator("#progress-text")).to_have_text(re.compile(rf"^{k} / 80$"))
        items.append(int(annotator.url.rstrip("/").rsplit("/", 1)[1]))
        annotator.keyboard.press(str(k + 2))
        annotator.keyboard.press("Enter")
    expect(annotator.locator("#progress-text")).to_have_text(re.compile(r"^2 / 80$"))
    assert "ROUGE" not in annotator.content()  # annotators never see the metrics' reasons

    researcher.reload()
    for item in items:
        row = researcher.locator(f"#routing-recent tr[data-item='{item}']")
        expect(row).to_contain_text("annotator")
        reason = Assignment.objects.get(item_id=item).routing_reason
        assert "ρ(ROUGE-2, ROUGE-L) = -1.00 here" in reason
        expect(row.locator(".why")).to_have_text(reason)
    expect(researcher.locator("#routing-recent tbody tr")).to_have_count(3)  # 2 answered + 1 held
    documents = {Assignment.objects.get(item_id=i).item.document.doc_key for i in items}
    assert len(documents) == 1 and documents <= set(DISAGREE)  # one document, finished first
