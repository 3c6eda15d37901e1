"""Annotator competence (MACE) from a campaign's answers: on the campaign page beside α
and the gold flags, and as weights of the judgments in the correlation dashboards."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.urls import reverse

from annotation.services import competence, gold
from studies.models import Aspect, Dataset, Judgment, MetricScore, Output
from studies.services.analysis.dashboards import compute_and_cache, frame_for
from studies.services.analysis.frames import load_frame
from studies.services.analysis.params import MatrixParams
from tests.annotation.conftest import HTMX, answer_all
from tests.factories import MetricRunFactory

pytestmark = pytest.mark.django_db


def good_value(output: Output) -> float:
    return float(1 + (int(output.document.doc_key[1:]) * 3 + int(output.system_id[1:])) % 5)


def careful_careless_spammer(make_campaign, annotators):  # type: ignore[no-untyped-def]
    """Three annotators on all 12 outputs: one right every time, one wrong on a quarter
    of the outputs, one answering at random."""
    campaign = make_campaign(overlap=3, aspect_codes=("COH",))
    careful, careless, spammer = annotators
    noise = random.Random(4)
    answer_all(campaign, careful, good_value)
    answer_all(campaign, careless, lambda o: good_value(o) if o.pk % 4 else 6 - good_value(o))
    answer_all(campaign, spammer, lambda o: float(noise.randint(1, 5)))
    return campaign


def test_competence_ranks_the_careful_annotator_above_the_careless_above_the_spammer(
    make_campaign, annotators
):
    campaign = careful_careless_spammer(make_campaign, annotators)
    (coh,) = competence.compute_competence(campaign)
    assert coh["code"] == "COH" and coh["reason"] == "" and coh["n_answers"] == 36
    theta = {row["user"]: row["competence"] for row in coh["annotators"]}
    assert theta["annotator"] > theta["ann2"] > theta["ann3"]
    # Variational Bayes, the MACE tool's default: its priors hold 12 answers, all
    # right, back from a θ of 1 (EM gives 0.99+).
    assert coh["method"] == "vb" and (coh["alpha"], coh["beta"]) == (0.5, 0.5)
    assert 0.8 < theta["annotator"] < 0.95 and theta["ann3"] < 0.4
    assert all(row["shared"] == row["answers"] == 12 for row in coh["annotators"])
    assert competence.compute_competence(campaign) == [coh]  # seeded by the campaign


def test_without_overlap_the_page_says_so_instead_of_estimating(
    client, make_campaign, annotators, cast
):
    campaign = make_campaign(overlap=1, aspect_codes=("COH",))
    answer_all(campaign, annotators[0], good_value)
    (coh,) = competence.campaign_competence(campaign)
    assert coh["reason"].startswith("not enough annotators")
    assert coh["annotators"][0]["competence"] is None
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    assert (
        'class="muted competence-reason" data-aspect="COH">Coherence: not enough annotators' in page
    )


def test_the_campaign_page_shows_competence_beside_alpha_and_the_gold_flags(
    client, make_campaign, annotators, cast
):
    campaign = careful_careless_spammer(make_campaign, annotators)
    coh = Aspect.objects.get(code="COH")
    item = campaign.items.select_related("output_a__document").first()
    gold.set_gold(item, {coh.pk: good_value(item.output_a)})
    flagged = {u.username for u in annotators if u.pk in gold.flagged_annotator_ids(campaign)}
    client.force_login(cast["owner"])
    partial = client.get(
        reverse("annotation:campaign-detail", args=[campaign.pk]),
        HTTP_HX_TARGET="agreement",
        **HTMX,
    ).content.decode()
    assert 'id="alpha-table"' in partial and 'id="competence-table"' in partial
    theta = {
        r["user"]: r["competence"]
        for r in competence.campaign_competence(campaign)[0]["annotators"]
    }
    for user in ("annotator", "ann2", "ann3"):
        row = partial.split(f'<tr data-user="{user}">')[1].split("</tr>")[0]
        assert f'<td class="num competence">{theta[user]:.2f} ' in row
        assert ('class="badge failed flagged"' in row) == (user in flagged)
    assert "fitted by variational Bayes, the MACE tool's default (prior α = 0.5, β = 0.5" in partial
    assert 'id="position-table"' not in partial  # Likert: no sides


def test_competence_weights_come_from_likert_campaigns_and_others_weigh_one(
    make_campaign, annotators
):
    campaign = careful_careless_spammer(make_campaign, annotators)
    dataset = Dataset.objects.get()
    coh = Aspect.objects.get(code="COH")
    weights = competence.competence_weights(dataset)
    theta = {
        r["user_id"]: r["competence"]
        for r in competence.campaign_competence(campaign)[0]["annotators"]
    }
    assert weights == {(user, coh.pk): pytest.approx(t) for user, t in theta.items()}
    # an imported judgment (no annotator) keeps weight 1 beside the annotators' weighted ones
    output = Output.objects.select_related("document").order_by("pk").first()
    Judgment.objects.create(output=output, aspect=coh, value=5.0, import_file="experts.jsonl")
    dataset.refresh_from_db()
    frame = load_frame(dataset, judgment_weights=weights)
    values = dict(
        Judgment.objects.filter(output=output, annotator__isnull=False).values_list(
            "annotator_id", "value"
        )
    )
    expected = (sum(theta[u] * v for u, v in values.items()) + 5.0) / (sum(theta.values()) + 1)
    assert frame.human[0, 0] == pytest.approx(expected)


def test_weighting_by_competence_lets_the_dashboard_see_through_a_spammer(
    client, make_campaign, annotators, cast
):
    careful_careless_spammer(make_campaign, annotators)
    dataset = Dataset.objects.get()
    run = MetricRunFactory(dataset=dataset, kind="imported", label="agrees")
    MetricScore.objects.bulk_create(
        MetricScore(run=run, output=o, value=good_value(o))
        for o in Output.objects.select_related("document")
    )
    dataset.refresh_from_db()
    plain = compute_and_cache(dataset, MatrixParams(level="dataset", ci=False))
    weighted = compute_and_cache(
        dataset, MatrixParams(level="dataset", ci=False, weight_by_competence=True)
    )
    assert weighted["params"]["weight_by_competence"] is True
    plain_value = plain["columns"][0]["cells"][0]["value"]
    weighted_value = weighted["columns"][0]["cells"][0]["value"]
    assert weighted_value > plain_value + 0.05 and weighted_value > 0.9
    params = MatrixParams.from_query({"weights": "competence", "flagged": "exclude"})
    assert params.weight_by_competence and params.key(dataset) != MatrixParams(
        exclude_flagged=True
    ).key(dataset)
    assert "weights=competence" in params.query
    human = frame_for(dataset, MatrixParams(weight_by_competence=True)).human[:, 0]
    assert np.all(np.isfinite(human))
    dataset.owner = cast["owner"]
    dataset.save()
    client.force_login(cast["owner"])
    page = client.get(reverse("studies:correlations", args=[dataset.pk]), {"weights": "competence"})
    html = page.content.decode()
    assert 'id="weight-competence" checked' in html
    assert "&amp;weights=competence" in html  # the exports and cells keep the choice
