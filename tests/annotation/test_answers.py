"""Answers: Likert judgments as studies.Judgment rows, double submits, history, pairwise."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.models import AnswerRevision, Assignment, PairwiseJudgment
from annotation.services import answers, assignment
from annotation.services.preferences import pairwise_answers, preference_pairs
from studies.models import Aspect, Dataset, Judgment
from tests.annotation.conftest import likert_answers

pytestmark = pytest.mark.django_db


def test_likert_answers_are_judgments_of_the_annotator(make_campaign, annotators):
    campaign = make_campaign()
    lease = assignment.claim_next(campaign, annotators[0])
    version = Dataset.objects.get().data_version
    assert answers.submit(lease.pk, annotators[0], likert_answers(campaign, 2))
    rows = Judgment.objects.filter(output_id=lease.item.output_a_id)
    assert sorted(rows.values_list("aspect__code", "value", "annotator__username")) == [
        ("COH", 2.0, "annotator"),
        ("FLU", 2.0, "annotator"),
    ]
    done = Assignment.objects.get(pk=lease.pk)
    assert done.status == "done" and done.seconds is not None and done.seconds >= 0
    assert Dataset.objects.get().data_version > version  # the dashboards' caches move on


def test_submitting_twice_stores_one_judgment_and_one_revision(make_campaign, annotators):
    campaign = make_campaign()
    lease = assignment.claim_next(campaign, annotators[0])
    assert answers.submit(lease.pk, annotators[0], likert_answers(campaign, 3))
    version = Dataset.objects.get().data_version
    assert not answers.submit(lease.pk, annotators[0], likert_answers(campaign, 3))
    assert Judgment.objects.count() == 2 and AnswerRevision.objects.count() == 2
    assert Dataset.objects.get().data_version == version


def test_changing_an_answer_updates_it_and_keeps_the_history(make_campaign, annotators):
    campaign = make_campaign()
    coh = Aspect.objects.get(code="COH")
    lease = assignment.claim_next(campaign, annotators[0])
    answers.submit(lease.pk, annotators[0], likert_answers(campaign, 3))
    first_seconds = Assignment.objects.get(pk=lease.pk).seconds
    changed = {**likert_answers(campaign, 3), coh.pk: 5.0}
    assert answers.submit(lease.pk, annotators[0], changed)
    assert Judgment.objects.get(aspect=coh).value == 5.0
    history = AnswerRevision.objects.filter(aspect=coh).values_list("value", flat=True)
    assert list(history) == [3.0, 5.0]
    assert Assignment.objects.get(pk=lease.pk).seconds == first_seconds  # time to first answer
    assert answers.current_answers(Assignment.objects.get(pk=lease.pk))[coh.pk] == 5.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"COH": "6", "FLU": "3"}, "Coherence: expected a point from 1 to 5"),
        ({"COH": "2.5", "FLU": "3"}, "Coherence: expected a point"),
        ({"COH": "high", "FLU": "3"}, "Coherence: expected a point"),
        ({"FLU": "3"}, "Coherence: choose an answer"),
    ],
)
def test_bad_answers_are_refused_with_a_clear_message(make_campaign, data, message):
    campaign = make_campaign()
    ids = {a.code: a.pk for a in campaign.aspects.all()}
    with pytest.raises(answers.InvalidAnswer, match=message):
        answers.parse_answers(campaign, {f"aspect-{ids[k]}": v for k, v in data.items()})


def test_skipping_records_the_reason_and_an_answered_item_cannot_be_skipped(
    make_campaign, annotators
):
    campaign = make_campaign()
    lease = assignment.claim_next(campaign, annotators[0])
    answers.submit(lease.pk, annotators[0], likert_answers(campaign))
    with pytest.raises(assignment.AnnotationError, match="already answered"):
        assignment.skip(lease.pk, annotators[0], "oops")
    other = assignment.claim_next(campaign, annotators[0])
    assignment.skip(other.pk, annotators[0], "source missing")
    assert Assignment.objects.get(pk=other.pk).status == "skipped"


def test_pairwise_sides_are_random_recorded_and_mapped_back(make_campaign, annotators):
    campaign = make_campaign(mode="pairwise", overlap=1, aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    leases = []
    for _ in range(12):
        lease = assignment.claim_next(campaign, annotators[0])
        answers.submit(lease.pk, annotators[0], {coh.pk: "left"})
        leases.append(lease)
    assert Counter(lease.left_is_a for lease in leases).keys() == {True, False}
    for lease in leases:
        judgment = PairwiseJudgment.objects.get(item=lease.item)
        left = lease.item.output_a_id if lease.left_is_a else lease.item.output_b_id
        assert judgment.left_output_id == left
        assert judgment.choice == ("a" if lease.left_is_a else "b")
    pairs = list(preference_pairs(campaign))
    assert len(pairs) == 12
    assert all(p.good_output_id == p.left_output_id for p in pairs)  # "left" every time
    assert {frozenset((p.good_output_id, p.bad_output_id)) for p in pairs} == {
        frozenset((lease.item.output_a_id, lease.item.output_b_id)) for lease in leases
    }


def test_ties_are_not_preference_pairs_and_flagged_annotators_can_be_left_out(
    make_campaign, annotators
):
    campaign = make_campaign(mode="pairwise", overlap=2, aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    for user, side in ((annotators[0], "tie"), (annotators[1], "right")):
        lease = assignment.claim_next(campaign, user)
        answers.submit(lease.pk, user, {coh.pk: side})
    pairs = list(preference_pairs(campaign))
    assert [p.annotator_id for p in pairs] == [annotators[1].pk]
    assert list(preference_pairs(campaign, exclude_annotators={annotators[1].pk})) == []
    every = list(pairwise_answers(campaign=campaign))  # the raw answers keep the tie
    assert [(a.annotator_id, a.is_tie) for a in every] == [
        (annotators[0].pk, True),
        (annotators[1].pk, False),
    ]
    assert list(pairwise_answers(dataset=campaign.study.dataset, aspect=coh)) == every
    with pytest.raises(answers.InvalidAnswer, match="left, right or tie"):
        answers.parse_answers(campaign, {f"aspect-{coh.pk}": "up"})
