"""Gold items: agreement within tolerance, flags, and dashboards that leave flagged out."""

from __future__ import annotations

import pytest

from annotation.services import answers, assignment, gold
from studies.models import Aspect, Dataset, MetricScore, Output
from studies.services.analysis.dashboards import compute_and_cache
from studies.services.analysis.params import MatrixParams
from tests.annotation.conftest import answer_all
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


def good_value(output: Output) -> float:
    return float(1 + (int(output.document.doc_key[1:]) + int(output.system_id[1:])) % 5)


def test_annotators_below_the_gold_threshold_are_flagged(make_campaign, annotators):
    campaign = make_campaign(overlap=3, gold_threshold=0.5, aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    good, close, bad = annotators
    answer_all(campaign, good, good_value)
    answer_all(campaign, close, lambda o: min(good_value(o) + 1, 5))
    answer_all(campaign, bad, lambda o: 6 - good_value(o))
    items = list(campaign.items.select_related("output_a__document"))
    gold_items = [i for i in items if good_value(i.output_a) in (1, 2)][:2]
    for item in gold_items:
        gold.set_gold(item, {coh.pk: good_value(item.output_a)}, tolerance=1)
    scores = gold.gold_scores(campaign)
    assert (scores[good.pk].answers, scores[good.pk].correct) == (2, 2)
    assert scores[close.pk].correct == 2  # one off, within the tolerance
    assert scores[bad.pk].correct == 0 and scores[bad.pk].flagged
    assert gold.flagged_annotator_ids(campaign) == {bad.pk}
    for item in gold_items:
        gold.set_gold(item, {coh.pk: good_value(item.output_a)}, tolerance=0)
    assert gold.flagged_annotator_ids(campaign) == {bad.pk, close.pk}
    assert gold.flagged_for_dataset(campaign.study.dataset) == {bad.pk, close.pk}


def test_pairwise_gold_matches_the_expected_choice(make_campaign, annotators):
    campaign = make_campaign(mode="pairwise", overlap=2, aspect_codes=("COH",))
    coh = Aspect.objects.get(code="COH")
    leases = {}
    for user in annotators[:2]:
        lease = assignment.claim_next(campaign, user)
        leases[user.pk] = lease
    item = leases[annotators[0].pk].item
    lease = leases[annotators[0].pk]
    answers.submit(lease.pk, annotators[0], {coh.pk: "left" if lease.left_is_a else "right"})
    gold.set_gold(item, {coh.pk: "a"})
    assert gold.gold_scores(campaign)[annotators[0].pk].correct == 1
    gold.set_gold(item, {coh.pk: "b"})
    assert gold.flagged_annotator_ids(campaign) == {annotators[0].pk}


def test_bad_gold_answers_change_nothing(make_campaign):
    campaign = make_campaign(aspect_codes=("COH", "FLU"))
    item = campaign.items.first()
    coh = Aspect.objects.get(code="COH")
    with pytest.raises(answers.InvalidAnswer, match="every aspect"):
        gold.set_gold(item, {coh.pk: 3})
    flu = Aspect.objects.get(code="FLU")
    with pytest.raises(answers.InvalidAnswer, match="Fluency: expected a score from 1 to 5"):
        gold.set_gold(item, {coh.pk: 3, flu.pk: 9})
    item.refresh_from_db()
    assert item.gold_answer is None


def _split_opinions(make_campaign, annotators):  # type: ignore[no-untyped-def]
    """A trusted annotator, and one flagged on gold who answers the opposite."""
    campaign = make_campaign(overlap=2, aspect_codes=("COH",), annotators=annotators[:2])
    coh = Aspect.objects.get(code="COH")
    good, bad = annotators[:2]
    answer_all(campaign, good, good_value)
    answer_all(campaign, bad, lambda o: 6 - good_value(o))  # the mean is 3 everywhere
    dataset = Dataset.objects.get()
    run = MetricRunFactory(dataset=dataset, kind="imported", label="agrees")
    MetricScore.objects.bulk_create(
        MetricScore(run=run, output=o, value=good_value(o))
        for o in Output.objects.select_related("document")
    )
    item = next(
        i
        for i in campaign.items.select_related("output_a__document")
        if good_value(i.output_a) != 3
    )
    gold.set_gold(item, {coh.pk: good_value(item.output_a)})
    dataset.refresh_from_db()
    return dataset, run, coh


def test_the_correlation_matrix_can_leave_flagged_annotators_out(make_campaign, annotators):
    dataset, _, _ = _split_opinions(make_campaign, annotators)
    everyone = compute_and_cache(dataset, MatrixParams(level="dataset", ci=False))
    trusted = compute_and_cache(
        dataset, MatrixParams(level="dataset", ci=False, exclude_flagged=True)
    )
    assert everyone["columns"][0]["cells"][0]["value"] is None  # constant human scores
    assert trusted["columns"][0]["cells"][0]["value"] == pytest.approx(1.0)
    params = MatrixParams.from_query({"flagged": "exclude"})
    assert params.exclude_flagged and params.key(dataset) != MatrixParams().key(dataset)


def test_drill_down_paper_and_exports_keep_flagged_annotators_out(
    client, cast, make_campaign, annotators
):
    from django.urls import reverse

    dataset, run, coh = _split_opinions(make_campaign, annotators)
    dataset.owner = cast["owner"]
    dataset.save()
    client.force_login(cast["owner"])
    cell = reverse("studies:correlations-cell", args=[dataset.pk, run.pk, coh.pk])
    everyone = client.get(cell, {"level": "dataset"}).context["d"]
    trusted = client.get(cell, {"level": "dataset", "flagged": "exclude"}).context["d"]
    assert everyone["value"] is None  # constant mean judgments
    assert trusted["value"] == pytest.approx(1.0)
    page = client.get(
        reverse("studies:correlations", args=[dataset.pk]),
        {"level": "dataset", "flagged": "exclude"},
    )
    html = page.content.decode()
    for name in ("correlations-export", "correlations-paper", "correlations-cell"):
        prefix = reverse(
            f"studies:{name}",
            args=[
                dataset.pk,
                *(
                    ["csv"]
                    if name == "correlations-export"
                    else [run.pk, coh.pk]
                    if name == "correlations-cell"
                    else []
                ),
            ],
        )
        assert f"{prefix}?level=dataset&amp;coef=spearman&amp;flagged=exclude" in html, name
