"""Disagreement review (issue 40, item 4): the queue ranks the outputs a judge and the
humans (or the humans among themselves) disagree on most, an adjudication is a source of
its own that leaves the judgments as they were, the output page and the report card show
it, and a tuner reads it as gold on tune/dev documents only."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from studies.models import Adjudication, Aspect, Judgment
from studies.services import adjudication
from studies.services.tuning.labels import HeldOutLabel, TuneLabels
from tests.factories import OutputFactory, adjudicated_split, review_study

pytestmark = pytest.mark.django_db


def test_the_queue_puts_the_largest_disagreement_first(cast):
    study, run, ids = review_study(cast["owner"])
    queue = adjudication.build_queue(study, Aspect.objects.get(code="COH"), run)
    order = [item.output_id for item in queue.items]
    # spread 1.0, gap 0.75, then the 0.25s (gap before spread on a tie), agreement left out
    assert order[:3] == [ids[("d1", "a")], ids[("d0", "b")], ids[("d1", "b")]]
    assert ids[("d0", "a")] not in order and ids[("d2", "b")] not in order
    first, second = queue.items[0], queue.items[1]
    assert first.spread == 1.0 and first.gap == 0.0 and "among themselves" in first.reason
    assert second.gap == 0.75 and "judge" in second.reason
    assert queue.next() == first and queue.left == len(order)
    humans_alone = adjudication.build_queue(study, Aspect.objects.get(code="COH"), None)
    assert humans_alone.items[0].output_id == ids[("d1", "a")]
    assert ids[("d0", "b")] not in [i.output_id for i in humans_alone.items]


def test_a_judge_off_the_scale_is_put_on_it_before_the_gap():
    coh = Aspect.objects.get(code="COH")
    assert adjudication.on_scale(coh, {1: 0.0, 2: 0.5, 3: 1.0}) == {1: 1.0, 2: 3.0, 3: 5.0}
    assert adjudication.on_scale(coh, {1: 2.0, 2: 4.5}) == {1: 2.0, 2: 4.5}  # already on it


def test_a_label_aspect_queues_a_label_mismatch_and_a_split_vote():
    aspect = Aspect(code="FAITH", name="Faithful", definition="?", kind="binary")
    aspect.labels, aspect.positive = ["no", "yes"], "yes"
    aspect.full_clean()
    aspect.save()
    items = adjudication.rank(
        aspect,
        {1: [1.0, 1.0, 1.0], 2: [1.0, 0.0], 3: [0.0, 0.0, 0.0], 4: [1.0, 1.0]},
        {1: 0.2, 2: 1.0, 3: 0.0, 4: 0.9},  # positions: 0, 1, 0, 1
    )
    assert [(i.output_id, i.gap, i.spread) for i in items] == [(1, 1.0, 0.0), (2, 0.0, 0.5)]
    assert [p.label for p in adjudication.points(aspect)] == ["no", "yes"]
    assert [p.key for p in adjudication.points(aspect)] == ["1", "2"]


def test_an_adjudication_is_its_own_source_and_the_judgments_stay(cast):
    study, run, ids = review_study(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    before = list(Judgment.objects.order_by("pk").values_list("pk", "value", "updated_at"))
    target = ids[("d1", "a")]
    adjudication.adjudicate(study, coh, target, "2", cast["owner"], run)
    adjudication.adjudicate(study, coh, target, "3", cast["owner"], run)  # changes its mind
    assert list(Judgment.objects.order_by("pk").values_list("pk", "value", "updated_at")) == before
    assert list(Adjudication.objects.values_list("output_id", "value", "run_id")) == [
        (target, 3.0, run.pk)
    ]
    queue = adjudication.build_queue(study, coh, run)
    assert queue.next().output_id == ids[("d0", "b")] and queue.done == {target: 3.0}
    for bad in ("6", "x", "2.5"):
        with pytest.raises(adjudication.AdjudicationError, match="choose one of 1, 2, 3, 4, 5"):
            adjudication.adjudicate(study, coh, target, bad, cast["owner"], run)
    other = OutputFactory()  # another dataset's output
    with pytest.raises(adjudication.AdjudicationError, match="no judgment"):
        adjudication.adjudicate(study, coh, other.pk, "3", cast["owner"], run)


def test_the_page_shows_the_next_item_and_the_keyboard_form_stores_it(
    client, cast, django_assert_max_num_queries
):
    study, run, ids = review_study(cast["owner"])
    url = f"/studies/{study.pk}/adjudicate/"
    client.force_login(cast["outsider"])
    assert client.get(url).status_code == 404
    client.force_login(cast["annotator"])
    assert client.get(url).status_code == 403
    client.force_login(cast["owner"])
    with django_assert_max_num_queries(20):  # 18: as many for 10 outputs as for 10,000
        page = client.get(url).content.decode()
    assert f'data-item="{ids[("d1", "a")]}"' in page and "js/annotate.js" in page
    assert "Why d1/a." in page and "Rate coherence." in page and "r1 (h.jsonl)" in page
    assert 'data-key="5"' in page and 'id="answer-form"' in page
    posted = {"output": ids[("d1", "a")], "aspect": "COH", "run": run.pk, "value": "3"}
    saved = client.post(url, posted, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="annotate")
    body = saved.content.decode()
    assert saved.status_code == 200 and "<h1" not in body  # the partial, the next item
    assert f'data-item="{ids[("d0", "b")]}"' in body
    refused = client.post(url, {**posted, "value": "9"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 422 and "choose one of" in refused.content.decode()
    assert Adjudication.objects.get().value == 3.0


def test_the_output_page_and_the_report_card_show_the_adjudications(client, cast):
    study, run, ids = review_study(cast["owner"])
    coh = Aspect.objects.get(code="COH")
    adjudication.adjudicate(study, coh, ids[("d1", "a")], "2", cast["owner"], run)
    client.force_login(cast["owner"])
    page = client.get(f"/outputs/{ids[('d1', 'a')]}/").content.decode()
    assert "adjudicated by owner (study review study)" in page and 'id="adjudicated-note"' in page
    assert "<strong>COH</strong> 3.00" in page  # the judgments' mean, without the adjudication
    counts = adjudication.adjudicated_counts(study.dataset, study)
    assert counts == [{"code": "COH", "name": "Coherence", "n": 1}]
    card = client.get(f"/studies/{study.pk}/report-card/?resamples=0").content.decode()
    assert 'id="card-adjudicated"' in card and "<strong>COH</strong> 1 output" in card
    client.force_login(cast["admin"])
    listed = client.get("/admin/studies/adjudication/")
    assert listed.status_code == 200 and "review study" in listed.content.decode()


def test_a_tuner_reads_adjudications_of_tune_documents_never_of_test_ones(cast):
    _, _, ids, coh, split, tune_doc, tuned, held = adjudicated_split(cast["owner"])
    labels = TuneLabels(split, coh, gold="adjudicated")
    assert labels.adjudicated([tuned]) == {tuned: 1.0}
    assert labels.gold([tuned])[tuned] == 1.0 != labels.human([tuned])[tuned]
    assert TuneLabels(split, coh).gold([tuned]) == labels.human([tuned])  # gold: the humans
    untouched = ids[(tune_doc, "b")]
    assert labels.gold([untouched]) == labels.human([untouched])
    for read in (labels.adjudicated, labels.gold):
        with pytest.raises(HeldOutLabel, match="held out"):
            read([tuned, held])


def test_the_api_lists_the_queue_and_stores_an_adjudication(cast):
    study, run, ids = review_study(cast["owner"])
    api = APIClient()
    api.force_authenticate(cast["owner"])
    url = f"/api/studies/{study.pk}/adjudication/"
    queue = api.get(url, {"aspect": "COH", "run": run.pk}).json()
    assert queue["run"] == run.pk and queue["total"] == queue["left"] == 6
    assert [i["output"] for i in queue["items"][:2]] == [ids[("d1", "a")], ids[("d0", "b")]]
    assert queue["items"][1]["gap"] == 0.75 and queue["items"][1]["judge"] == 5.0
    posted = {"output": ids[("d0", "b")], "aspect": "COH", "run": run.pk, "value": 2}
    saved = api.post(url, posted, format="json")
    assert saved.status_code == 201 and saved.json()["adjudicator"] == "owner"
    assert api.get(url, {"run": run.pk}).json()["items"][1]["adjudicated"] == 2.0
    for bad, field in (
        ({**posted, "value": 7}, "value"),
        ({**posted, "value": "2"}, "value"),  # a number, as the schema says
        ({**posted, "aspect": "FLU"}, "aspect"),
        ({**posted, "run": 10**9}, "run"),
        ({**posted, "output": 10**9}, "output"),
    ):
        refused = api.post(url, bad, format="json")
        assert refused.status_code == 400 and field in refused.json()["errors"], bad
    assert api.get(url, {"run": "x"}).status_code == 400
    assert api.get(url, {"run": 0}).json()["run"] is None
    outsider = APIClient()
    outsider.force_authenticate(cast["outsider"])
    assert outsider.get(url).status_code == 404
    assert outsider.post(url, posted, format="json").status_code == 404
