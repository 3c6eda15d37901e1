"""A campaign on binary and categorical aspects: the item page offers the labels on keys
1..k, an answer is stored as the label's position (a revision, a stale page, the API and
gold items read labels too), and the campaign's agreement is Cohen's κ (two annotators)
or Fleiss' κ (more) and nominal α, equal to scikit-learn's, statsmodels' and the
``krippendorff`` package's, with intervals over items."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotation.forms import GoldForm
from annotation.models import Campaign
from annotation.services import agreement, answers, assignment, gold
from annotation.services.campaigns import CampaignError, CampaignSpec, create_campaign
from studies.models import Aspect, Judgment
from tests.annotation.conftest import label_aspect

pytestmark = pytest.mark.django_db
ERRORS = ["none", "minor", "major"]


def answer_all(campaign, user, aspect, by_position: dict[int, int]) -> None:  # type: ignore[no-untyped-def]
    """Answer every item the user is handed: the label at ``by_position[item position]``."""
    while (lease := assignment.claim_next(campaign, user)) is not None:
        answers.submit(lease.pk, user, {aspect.pk: float(by_position[lease.item.position])})


def test_two_annotators_binary_kappa_and_alpha_equal_the_references(make_campaign, annotators):
    passes = label_aspect()
    campaign = make_campaign(overlap=2, aspect_codes=("PASS",), annotators=annotators[:2])
    first = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1]  # 12 items, label positions (1: pass)
    second = [1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1]
    answer_all(campaign, annotators[0], passes, dict(enumerate(first)))
    answer_all(campaign, annotators[1], passes, dict(enumerate(second)))
    stored = Judgment.objects.filter(aspect=passes, annotator=annotators[0])
    assert sorted(stored.values_list("value", flat=True)) == sorted(map(float, first))

    found = agreement.compute_agreement(campaign, resamples=200)["aspects"][0]
    kappa = cohen_kappa_score(first, second)
    alpha = krippendorff.alpha(np.array([first, second]), level_of_measurement="nominal")
    assert found["kappa"]["name"] == "Cohen's κ"
    assert found["kappa"]["value"] == pytest.approx(kappa, abs=1e-12)
    assert found["alpha"] == pytest.approx(alpha, abs=1e-12)
    assert found["level"] == "nominal" and found["labels"] == ["fail", "pass"]
    assert (found["n_units"], found["n_answers"], found["n_annotators"]) == (12, 24, 2)
    assert found["kappa"]["low"] < kappa < found["kappa"]["high"]
    assert found["low"] < alpha < found["high"]
    assert found["pairs"][0]["value"] == pytest.approx(kappa, abs=1e-12)
    assert (found["pairs"][0]["a"], found["pairs"][0]["b"]) == ("annotator", "ann2")


def test_three_annotators_categorical_fleiss_kappa_and_pairs_equal_the_references(
    make_campaign, annotators
):
    errors = label_aspect("ERRK", name="Error kind", kind="categorical", labels=ERRORS, positive="")
    campaign = make_campaign(overlap=3, aspect_codes=("ERRK",))
    rng = np.random.default_rng(7)
    truth = rng.integers(3, size=12)
    given = [np.where(rng.random(12) < 0.7, truth, rng.integers(3, size=12)) for _ in range(3)]
    for user, codes in zip(annotators, given, strict=True):
        answer_all(campaign, user, errors, dict(enumerate(codes.tolist())))

    found = agreement.compute_agreement(campaign, resamples=200)["aspects"][0]
    data = np.array(given)  # annotators × items in queue order, as every item has all three
    fleiss = fleiss_kappa(aggregate_raters(data.T, n_cat=3)[0])
    alpha = krippendorff.alpha(data.astype(float), level_of_measurement="nominal")
    assert found["kappa"]["name"] == "Fleiss' κ" and found["n_annotators"] == 3
    assert found["kappa"]["value"] == pytest.approx(fleiss, abs=1e-12)
    assert found["alpha"] == pytest.approx(alpha, abs=1e-12)
    assert found["kappa"]["low"] < fleiss < found["kappa"]["high"]
    names = {"annotator": 0, "ann2": 1, "ann3": 2}
    pairs = {(names[p["a"]], names[p["b"]]): p["value"] for p in found["pairs"]}
    assert pairs.keys() == set(itertools.combinations(range(3), 2))
    for (i, j), value in pairs.items():
        assert value == pytest.approx(cohen_kappa_score(given[i], given[j]), abs=1e-12)


def test_one_label_only_gives_no_kappa_and_says_why(make_campaign, annotators):
    passes = label_aspect()
    campaign = make_campaign(overlap=2, aspect_codes=("PASS",), annotators=annotators[:2])
    for user in annotators[:2]:
        answer_all(campaign, user, passes, dict.fromkeys(range(12), 1))
    found = agreement.compute_agreement(campaign, resamples=50)["aspects"][0]
    assert found["kappa"]["value"] is None and "pass" in found["kappa"]["reason"]


def test_the_item_page_offers_the_labels_on_keys_and_refuses_another_value(
    client, make_campaign, annotators
):
    label_aspect()
    label_aspect("ERRK", name="Error kind", kind="categorical", labels=ERRORS, positive="")
    campaign = make_campaign(overlap=1, aspect_codes=("PASS", "ERRK"))
    user = annotators[0]
    client.force_login(user)
    lease = assignment.claim_next(campaign, user)
    url = reverse("annotation:item", args=[campaign.pk, lease.item_id])
    page = client.get(url).content.decode()
    assert "Does the output pass?" in page  # the definition beside the labels
    keys = re.findall(
        r'value="(\d)" tabindex="-1" data-key="(\d)"[^>]*><span class="num">(\w+)', page
    )
    assert keys == [("0", "1", "none"), ("1", "2", "minor"), ("2", "3", "major")] + [
        ("0", "1", "fail"),
        ("1", "2", "pass"),
    ]
    err, passes = campaign.aspect_list()
    sent = client.post(
        reverse("annotation:submit", args=[campaign.pk, lease.item_id]),
        {f"aspect-{passes.pk}": "2", f"aspect-{err.pk}": "1"},
    )
    assert sent.status_code == 422
    assert "expected one of the labels fail, pass" in sent.content.decode()
    client.post(
        reverse("annotation:submit", args=[campaign.pk, lease.item_id]),
        {f"aspect-{passes.pk}": "1", f"aspect-{err.pk}": "2", "comment": "clear"},
    )
    stored = dict(Judgment.objects.filter(annotator=user).values_list("aspect__code", "value"))
    assert stored == {"PASS": 1.0, "ERRK": 2.0}  # the labels' positions: pass, major


def test_the_campaign_page_shows_kappa_and_alpha_of_a_label_aspect(
    client, cast, make_campaign, annotators
):
    passes = label_aspect()
    campaign = make_campaign(overlap=2, aspect_codes=("PASS",), annotators=annotators[:2])
    answer_all(campaign, annotators[0], passes, {k: k % 2 for k in range(12)})
    answer_all(campaign, annotators[1], passes, {k: int(k % 3 == 0) for k in range(12)})
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    expected = agreement.compute_agreement(campaign)["aspects"][0]
    assert 'id="label-agreement-table"' in page and 'id="alpha-table"' not in page
    row = page.split('id="label-agreement-table"')[1]
    assert "Cohen&#x27;s κ" in row or "Cohen's κ" in row
    assert f"{expected['kappa']['value']:.3f}" in row and f"{expected['alpha']:.3f}" in row


def test_a_changed_label_is_revised_and_a_stale_page_names_both_labels(
    client, make_campaign, annotators
):
    passes = label_aspect()
    campaign = make_campaign(overlap=1, aspect_codes=("PASS",))
    user = annotators[0]
    client.force_login(user)
    lease = assignment.claim_next(campaign, user)
    submit = reverse("annotation:submit", args=[campaign.pk, lease.item_id])
    client.post(submit, {f"aspect-{passes.pk}": "0", "revision": ""})
    old = answers.revision_of({passes.pk: 0.0})
    client.post(submit, {f"aspect-{passes.pk}": "1", "revision": old})  # revised: pass
    judgment = Judgment.objects.get(annotator=user, aspect=passes)
    assert judgment.value == 1.0
    assert list(lease.revisions.values_list("value", flat=True)) == [0.0, 1.0]
    stale = client.post(submit, {f"aspect-{passes.pk}": "0", "revision": old})
    assert stale.status_code == 409
    assert "stored as pass, and this page sent fail" in stale.content.decode()


def test_the_api_names_the_labels_and_gold_items_take_a_label(cast, make_campaign, annotators):
    passes = label_aspect()
    campaign = make_campaign(overlap=1, aspect_codes=("PASS",))
    lease = assignment.claim_next(campaign, annotators[0])
    api = APIClient()
    api.force_authenticate(annotators[0])
    url = f"/api/annotate/assignments/{lease.pk}/"
    (shown,) = api.get(url).json()["content"]["aspects"]
    assert (shown["kind"], shown["labels"]) == ("binary", ["fail", "pass"])
    sent = api.post(url + "submit/", {"answers": {str(passes.pk): 1}}, format="json")
    assert sent.status_code == 200 and sent.json()["answers"] == {str(passes.pk): 1.0}

    item = campaign.items.first()
    form = GoldForm({"item": item.pk, f"aspect-{passes.pk}": "1"}, campaign=campaign)
    assert form.fields[f"aspect-{passes.pk}"].choices == [("0", "fail"), ("1", "pass")]  # type: ignore[attr-defined]
    assert form.is_valid(), form.errors
    gold.set_gold(item, form.expected())
    item.refresh_from_db()
    assert item.gold_answer == {str(passes.pk): 1.0}
    wrong = GoldForm({"item": item.pk, f"aspect-{passes.pk}": "2"}, campaign=campaign)
    assert not wrong.is_valid()


def test_the_guidelines_list_the_labels_with_their_keys(client, make_campaign, annotators):
    label_aspect("ERRK", name="Error kind", kind="categorical", labels=ERRORS, positive="")
    campaign = make_campaign(overlap=1, aspect_codes=("ERRK", "COH"))
    client.force_login(annotators[0])
    page = client.get(reverse("annotation:guidelines", args=[campaign.pk])).content.decode()
    guide = page.split('id="guide-ERRK"')[1].split("</section>")[0]
    assert re.findall(r"<li>(\w+) <kbd>(\d)</kbd></li>", guide) == [
        ("none", "1"),
        ("minor", "2"),
        ("major", "3"),
    ]
    assert "Scale" not in guide and "Scale 1 to 5" in page.split('id="guide-COH"')[1]


def test_a_label_aspect_without_answers_has_no_kappa_yet(make_campaign, annotators):
    passes = label_aspect()
    campaign = make_campaign(overlap=2, aspect_codes=("PASS", "COH"), annotators=annotators[:2])
    found = agreement.compute_agreement(campaign, resamples=50)["aspects"]
    assert found[1]["code"] == "PASS" and found[1]["kappa"]["reason"] == "no answers yet"
    lease = assignment.claim_next(campaign, annotators[0])
    coh = Aspect.objects.get(code="COH")
    answers.submit(lease.pk, annotators[0], {coh.pk: 3.0, passes.pk: 1.0})
    found = agreement.compute_agreement(campaign, resamples=50)["aspects"]
    assert found[1]["n_answers"] == 1 and found[1]["kappa"]["value"] is None
    assert found[1]["alpha"] is None and found[1]["alpha_reason"]


def test_a_pairwise_campaign_on_a_label_aspect_is_refused_by_service_form_and_api(
    client, study, cast, annotators
):
    passes = label_aspect()
    coh = Aspect.objects.get(code="COH")
    study.aspects.add(coh, passes)  # the form offers the study's aspects
    spec = CampaignSpec(
        name="Pairs", mode="pairwise", aspects=[coh, passes], annotators=annotators[:1], overlap=1
    )
    with pytest.raises(CampaignError, match=r"Pass \(binary\) is a label aspect"):
        create_campaign(study, spec, cast["owner"])
    client.force_login(cast["owner"])
    data = {
        "study": study.pk,
        "name": "Pairs",
        "mode": "pairwise",
        "aspects": [coh.pk, passes.pk],
        "overlap": 1,
        "selection": "all",
        "seed": 0,
        "annotators": [annotators[0].pk],
        "lease_seconds": 300,
        "gold_threshold": 0.7,
    }
    page = client.post(reverse("annotation:campaign-new"), data)
    assert page.status_code == 400
    assert (
        "compares two outputs on a scale; Pass (binary) is a label aspect" in page.content.decode()
    )
    api = APIClient()
    api.force_authenticate(cast["owner"])
    body = {"study": study.pk, "name": "Pairs", "mode": "pairwise", "aspects": [passes.pk]}
    response = api.post("/api/campaigns/", body | {"overlap": 1, "annotators": ["annotator"]})
    assert response.status_code == 400
    assert "label aspect" in str(response.json()["errors"]["aspects"])
    assert not Campaign.objects.exists()
    # the same aspects one output at a time, and a pairwise campaign on the scale alone, are fine
    assert create_campaign(study, replace(spec, mode="likert"), cast["owner"]).items.count() == 12
    pairs = create_campaign(study, replace(spec, aspects=[coh]), cast["owner"])
    assert pairs.is_pairwise and pairs.items.exists()


def test_the_campaign_pages_name_each_aspects_kind_instead_of_likert(
    client, make_campaign, cast, annotators
):
    label_aspect()
    label_aspect("ERRK", name="Error kind", kind="categorical", labels=ERRORS, positive="")
    campaign = make_campaign(overlap=1, aspect_codes=("PASS", "ERRK", "COH"))
    expected = "Error kind: categorical: none, minor, major · Pass: fail/pass labels"
    client.force_login(cast["owner"])
    detail = client.get(reverse("annotation:campaign-detail", args=[campaign.pk])).content.decode()
    header = detail.split("<h1>")[1].split("</h1>")[0]
    assert expected in header and "Likert 1–5" in header  # COH, a scale, beside them
    assert "Likert (one output" not in header
    listed = client.get(reverse("annotation:campaign-list")).content.decode()
    assert expected in listed and "Likert (one output" not in listed
    client.force_login(annotators[0])
    home = client.get(reverse("annotation:home")).content.decode()
    assert expected in home and "Likert (one output" not in home
    # a campaign on scale aspects only still says Likert
    likert = make_campaign(name="Scales", overlap=1, aspect_codes=("COH",))
    client.force_login(cast["owner"])
    page = client.get(reverse("annotation:campaign-detail", args=[likert.pk])).content.decode()
    assert "Likert (one output, a score per aspect)" in page.split("<h1>")[1].split("</h1>")[0]
