"""Training pairs from the rows: pairwise answers of a campaign, Likert judgments
aggregated per output, and annotators flagged on gold items left out when asked."""

from __future__ import annotations

import pytest

from annotation.models import Campaign, PairwiseJudgment
from annotation.services.gold import set_gold
from learned.services.data import Task, load_task
from studies.models import Aspect, Judgment, Output
from tests.annotation.conftest import make_study, new_campaign

pytestmark = pytest.mark.django_db


def test_pairwise_answers_of_a_campaign_become_pairs_and_ties_are_dropped(cast):
    study = make_study(cast["owner"])
    campaign = new_campaign(
        study,
        cast["owner"],
        [cast["annotator"]],
        mode=Campaign.Mode.PAIRWISE,
        aspect_codes=("COH",),
        overlap=1,
    )
    coherence = Aspect.objects.get(code="COH")
    items = list(campaign.items.order_by("position"))
    choices = ["a", "b", "tie"] * (len(items) // 3) + ["a"] * (len(items) % 3)
    for item, choice in zip(items, choices, strict=True):
        PairwiseJudgment.objects.create(
            item=item,
            aspect=coherence,
            annotator=cast["annotator"],
            choice=choice,
            left_output=item.output_a,
        )
    data = load_task(Task(study.dataset, coherence), margin=0.5)
    kept = [(i, c) for i, c in zip(items, choices, strict=True) if c != "tie"]
    assert data.answer_counts.candidates == len(items) == 12
    assert data.answer_counts.ties == choices.count("tie") and len(data.pairs) == len(kept)
    task = data.task.key
    expected = {
        ((task, i.output_a_id), (task, i.output_b_id))
        if c == "a"
        else ((task, i.output_b_id), (task, i.output_a_id))
        for i, c in kept
    }
    assert {(p.good, p.bad) for p in data.pairs} == expected
    assert all(p.doc.startswith("annot/") for p in data.pairs)


def test_a_flagged_annotators_pairwise_answers_are_left_out_when_asked(cast):
    study = make_study(cast["owner"])
    campaign = new_campaign(
        study,
        cast["owner"],
        [cast["annotator"]],
        mode=Campaign.Mode.PAIRWISE,
        aspect_codes=("COH",),
        overlap=1,
    )
    coherence = Aspect.objects.get(code="COH")
    items = list(campaign.items.order_by("position"))
    set_gold(items[0], {coherence.pk: "b"})  # the annotator answers "a" everywhere: flagged
    for item in items:
        PairwiseJudgment.objects.create(
            item=item,
            aspect=coherence,
            annotator=cast["annotator"],
            choice="a",
            left_output=item.output_a,
        )
    kept = load_task(Task(study.dataset, coherence), margin=0.5)
    left_out = load_task(Task(study.dataset, coherence), margin=0.5, exclude_flagged=True)
    assert kept.answer_counts.candidates == len(kept.pairs) == len(items)
    assert left_out.answer_counts.candidates == 0 and left_out.pairs == []


def test_likert_pairs_use_the_mean_of_several_annotators(cast, judged):
    coherence = Aspect.objects.get(code="COH")
    # d00's s3 (imported 1.0) gets an annotator's 5.0: its mean 3.0 now beats s2 (2.0)
    s3 = Output.objects.get(document__dataset=judged, document__doc_key="d00", system_id="s3")
    s2 = Output.objects.get(document__dataset=judged, document__doc_key="d00", system_id="s2")
    Judgment.objects.create(output=s3, aspect=coherence, value=5.0, annotator=cast["annotator"])
    data = load_task(Task(judged, coherence), margin=0.5)
    task = data.task.key
    assert ((task, s3.pk), (task, s2.pk)) in {(p.good, p.bad) for p in data.pairs}
    assert data.human[data.output_ids.index(s3.pk)] == 3.0
