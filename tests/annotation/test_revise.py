"""Going back to an answered item to change the answer, and the comment on an item: the
change updates the stored judgment (no second row) that agreement, exports, MACE and the
learned metric's pairs read; first-answer timing stays; closed campaigns refuse; only the
item's annotator gets in; the comment reaches the campaign page, the API and the export."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import AnswerRevision, Assignment, Campaign, PairwiseJudgment
from annotation.services import answer_rows, answers, assignment
from annotation.services.preferences import pairwise_answers, preference_pairs
from studies.models import Aspect, Dataset, Judgment
from tests.annotation.conftest import HTMX, form_data, likert_answers

pytestmark = pytest.mark.django_db
ONLY_COMMENT = "only the comment changes <img src=x onerror=alert(1)>"


def answer_items(campaign: Campaign, user, n: int, value: object = 3) -> list[Assignment]:  # type: ignore[no-untyped-def]
    """Answer ``n`` items in queue order; the leases, oldest first."""
    done = []
    for _ in range(n):
        lease = assignment.claim_next(campaign, user)
        given = {a.pk: value for a in campaign.aspect_list()}
        answers.submit(lease.pk, user, given)
        done.append(Assignment.objects.select_related("item__campaign").get(pk=lease.pk))
    return done


def item_url(campaign: Campaign, a: Assignment, action: str = "item") -> str:
    return reverse(f"annotation:{action}", args=[campaign.pk, a.item_id])


def test_previous_is_the_item_answered_before_and_nothing_once_closed(make_campaign, cast):
    campaign = make_campaign()
    user = cast["annotator"]
    first, second, third = answer_items(campaign, user, 3)
    current = assignment.claim_next(campaign, user)
    assert assignment.previous_answered(current).item_id == third.item_id
    assert assignment.previous_answered(third).item_id == second.item_id
    assert assignment.previous_answered(second).item_id == first.item_id
    assert assignment.previous_answered(first) is None
    Campaign.objects.filter(pk=campaign.pk).update(status="closed")
    current.item.campaign.refresh_from_db()
    assert assignment.previous_answered(current) is None


def test_a_likert_answer_changed_on_the_previous_item_updates_its_judgment(
    client, make_campaign, cast, annotators
):
    campaign = make_campaign(aspect_codes=("COH",))
    user = cast["annotator"]
    (earlier,) = answer_items(campaign, user, 1, value=2)
    answer_items(campaign, annotators[1], 1, value=4)  # another annotator, for agreement
    client.force_login(user)
    current = assignment.claim_next(campaign, user)
    page = client.get(item_url(campaign, current), **HTMX).content.decode()
    assert f'id="previous-item" class="button secondary" href="{item_url(campaign, earlier)}"' in (
        page
    )
    back = client.get(item_url(campaign, earlier), **HTMX)
    assert back["HX-Push-Url"] == item_url(campaign, earlier)
    shown = back.content.decode()
    assert 'id="revisit-note"' in shown and "data-skip" not in shown and "Save change" in shown
    assert 'value="2" tabindex="-1" data-key="2" checked' in shown  # the stored answer
    before = Assignment.objects.get(pk=earlier.pk)
    version = Dataset.objects.get().data_version
    saved = client.post(item_url(campaign, earlier, "submit"), form_data(campaign, "5"), **HTMX)
    assert saved.status_code == 200
    assert saved["HX-Push-Url"] == item_url(campaign, current)  # back to the current item
    output = earlier.item.output_a_id
    rows = Judgment.objects.filter(output_id=output, annotator=user)
    assert list(rows.values_list("value", flat=True)) == [5.0]  # updated, not added
    assert list(
        AnswerRevision.objects.filter(assignment=earlier).values_list("value", flat=True)
    ) == [2.0, 5.0]
    after = Assignment.objects.get(pk=earlier.pk)
    assert (after.status, after.submitted_at, after.seconds) == (
        "done",
        before.submitted_at,
        before.seconds,
    )  # the first answer's timing
    assert Dataset.objects.get().data_version > version  # cached correlations move on
    mine = [r for r in answer_rows.answers(campaign) if r[2] == user.pk]
    assert mine == [(Aspect.objects.get(code="COH").pk, earlier.item_id, user.pk, 5.0)]
    assert Assignment.objects.get(pk=current.pk).status == "leased"  # still held


def test_a_pairwise_answer_changed_later_is_what_the_pairs_read(make_campaign, cast):
    campaign = make_campaign(mode="pairwise", aspect_codes=("COH",))
    user = cast["annotator"]
    coh = Aspect.objects.get(code="COH")
    (earlier,) = answer_items(campaign, user, 1, value="left")
    answers.submit(earlier.pk, user, {coh.pk: "right"})
    assert PairwiseJudgment.objects.filter(item=earlier.item, annotator=user).count() == 1
    right = earlier.item.output_b_id if earlier.left_is_a else earlier.item.output_a_id
    (pair,) = preference_pairs(campaign)
    assert pair.good_output_id == right
    (answer,) = pairwise_answers(dataset=campaign.study.dataset)  # the learned metric's
    assert answer.choice == ("b" if earlier.left_is_a else "a")


def test_a_closed_campaign_shows_no_way_back_and_refuses_changes(client, make_campaign, cast):
    campaign = make_campaign()
    user = cast["annotator"]
    (earlier,) = answer_items(campaign, user, 1)
    client.force_login(user)
    Campaign.objects.filter(pk=campaign.pk).update(status="closed")
    page = client.get(item_url(campaign, earlier)).content.decode()
    assert "previous-item" not in page and "submit-answer" not in page
    assert "answers can no longer change" in page
    refused = client.post(item_url(campaign, earlier, "submit"), form_data(campaign, "5"), **HTMX)
    assert refused.status_code == 409
    assert set(Judgment.objects.values_list("value", flat=True)) == {3.0}


def test_only_the_items_annotator_can_open_or_change_it(client, make_campaign, cast, annotators):
    campaign = make_campaign()
    (earlier,) = answer_items(campaign, cast["annotator"], 1)
    for someone in (annotators[1], cast["owner"], cast["outsider"], cast["admin"]):
        client.force_login(someone)
        assert client.get(item_url(campaign, earlier)).status_code == 404
        changed = client.post(item_url(campaign, earlier, "submit"), form_data(campaign, "1"))
        assert changed.status_code == 404
    assert set(Judgment.objects.values_list("value", flat=True)) == {3.0}


def test_the_comment_is_kept_changed_and_shown_to_the_researcher(
    client, make_campaign, cast, annotators
):
    campaign = make_campaign(mode="pairwise", aspect_codes=("COH",))
    user = cast["annotator"]
    client.force_login(user)
    lease = assignment.claim_next(campaign, user)
    note = '<script>alert("x")</script> both outputs repeat the source'
    data = {**form_data(campaign, "tie"), "comment": f"  {note}  "}
    assert client.post(item_url(campaign, lease, "submit"), data, **HTMX).status_code == 200
    assert Assignment.objects.get(pk=lease.pk).comment == note
    page = client.get(item_url(campaign, lease)).content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and note not in page
    revisions = AnswerRevision.objects.count()
    version = Dataset.objects.get().data_version
    data["comment"] = ONLY_COMMENT
    client.post(item_url(campaign, lease, "submit"), data, **HTMX)
    assert Assignment.objects.get(pk=lease.pk).comment == ONLY_COMMENT
    assert AnswerRevision.objects.count() == revisions  # no answer changed
    assert Dataset.objects.get().data_version == version

    too_long = {**data, "comment": "x" * 1001}
    refused = client.post(item_url(campaign, lease, "submit"), too_long, **HTMX)
    assert refused.status_code == 422 and b"at most 1000 characters" in refused.content
    assert Assignment.objects.get(pk=lease.pk).comment == ONLY_COMMENT

    client.force_login(cast["owner"])
    detail = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content
    assert b'id="comments-table"' in detail
    assert b"changes &lt;img src=x onerror=alert(1)&gt;" in detail and b"<img src=x" not in detail
    export = client.get(reverse("annotation:campaign-preferences", args=[campaign.pk]))
    assert [json.loads(x) for x in b"".join(export.streaming_content).splitlines()] == []  # a tie
    answers.submit(lease.pk, user, {Aspect.objects.get(code="COH").pk: "left"})
    export = client.get(reverse("annotation:campaign-preferences", args=[campaign.pk]))
    (row,) = [json.loads(x) for x in b"".join(export.streaming_content).splitlines()]
    assert row["comment"] == ONLY_COMMENT


def test_the_api_reads_and_changes_the_comment(make_campaign, cast):
    campaign = make_campaign()
    user = cast["annotator"]
    lease = assignment.claim_next(campaign, user)
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/annotate/assignments/{lease.pk}/"
    body = {"answers": {str(k): v for k, v in likert_answers(campaign, 4).items()}}
    sent = api.post(url + "submit/", {**body, "comment": "unclear source"}, format="json")
    assert sent.status_code == 200 and sent.json()["comment"] == "unclear source"
    kept = api.post(url + "submit/", body, format="json")  # no comment: left as it is
    assert kept.json()["comment"] == "unclear source"
    assert api.post(url + "submit/", {**body, "comment": ""}, format="json").json()["comment"] == ""
    long = api.post(url + "submit/", {**body, "comment": "x" * 1001}, format="json")
    assert long.status_code == 400
    api.post(url + "submit/", {**body, "comment": "again"}, format="json")
    api.force_authenticate(cast["owner"])
    progress = api.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert progress["comments"] == [
        {"item": lease.item_id, "annotator": "annotator", "comment": "again"}
    ]
    assert Judgment.objects.filter(annotator=user).count() == 2  # one per aspect


def test_a_stale_form_sent_after_a_change_is_refused_naming_both_values(
    client, make_campaign, cast
):
    """Issue 43: Back after "Save change" showed the old answer, and Enter put it back
    silently. The page carries the revision it showed; an older one that would change an
    answer is refused, and the page comes back with the stored answer."""
    campaign = make_campaign(aspect_codes=("COH",))
    user = cast["annotator"]
    (earlier,) = answer_items(campaign, user, 1, value=2)
    assignment.claim_next(campaign, user)
    client.force_login(user)
    url = item_url(campaign, earlier)
    old_page = client.get(url, **HTMX)
    assert "no-store" in old_page["Cache-Control"]  # never kept by the browser
    shown = old_page.content.decode()
    old = answers.revision_of(answers.current_answers(earlier))
    assert f'name="revision" value="{old}"' in shown
    assert "Change your answer and press Save change" in shown and "Save change" in shown
    changed = client.post(
        item_url(campaign, earlier, "submit"), {**form_data(campaign, "5"), "revision": old}
    )
    assert changed.status_code == 302  # saved (the page showed what was stored)
    output = earlier.item.output_a_id
    assert Judgment.objects.get(output_id=output, annotator=user).value == 5.0

    # the old page again (a second tab, or Back): its Enter sends 2 with the old revision
    stale = client.post(
        item_url(campaign, earlier, "submit"),
        {**form_data(campaign, "2"), "revision": old},
        **HTMX,
    )
    assert stale.status_code == 409
    text = stale.content.decode()
    assert "Coherence is stored as 5, and this page sent 2" in text
    assert 'value="5" tabindex="-1" data-key="5" checked' in text  # the stored answer shown
    assert "no-store" in stale["Cache-Control"]
    assert Judgment.objects.get(output_id=output, annotator=user).value == 5.0  # unchanged
    fresh = answers.revision_of({Aspect.objects.get(code="COH").pk: 5.0})
    assert f'name="revision" value="{fresh}"' in text
    # sent again from the page now shown, the change goes through
    again = client.post(
        item_url(campaign, earlier, "submit"),
        {**form_data(campaign, "2"), "revision": fresh},
        **HTMX,
    )
    assert again.status_code == 200
    assert Judgment.objects.get(output_id=output, annotator=user).value == 2.0
    # the same answer as stored from an old page changes nothing and is not refused
    same = client.post(
        item_url(campaign, earlier, "submit"), {**form_data(campaign, "2"), "revision": old}
    )
    assert same.status_code == 302
