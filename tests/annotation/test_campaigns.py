"""Creating a campaign: items from the selection, in seeded order; bad input writes nothing."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.models import Campaign, CampaignAnnotator, Item
from annotation.services.campaigns import CampaignError
from studies.models import StudyMember
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_likert_campaign_has_one_item_per_output_in_seeded_order(make_campaign, annotators):
    first = make_campaign(seed=5)
    again = make_campaign(seed=5, name="again")
    other = make_campaign(seed=6, name="other")
    order = [i.output_a_id for i in first.items.order_by("position")]
    assert len(order) == 12 and len(set(order)) == 12
    assert order == [i.output_a_id for i in again.items.order_by("position")]
    assert order != [i.output_a_id for i in other.items.order_by("position")]
    assert Counter(first.items.values_list("system_key", flat=True)) == {"s1": 4, "s2": 4, "s3": 4}
    assert set(first.annotators.all()) == set(annotators)
    assert StudyMember.objects.filter(role="annotator", study=first.study).count() == 3


def test_pairwise_campaign_pairs_outputs_of_the_same_document(make_campaign):
    campaign = make_campaign(mode="pairwise")
    items = list(campaign.items.select_related("output_a", "output_b"))
    assert len(items) == 4 * 3  # three pairs per document
    for item in items:
        assert item.output_a.document_id == item.output_b.document_id == item.document_id
        assert item.output_a_id < item.output_b_id
    assert set(Counter(i.system_key for i in items)) == {"s1 vs s2", "s1 vs s3", "s2 vs s3"}


def test_random_subset_and_chosen_systems(make_campaign):
    subset = make_campaign(selection="random", sample_size=5, seed=1)
    same = make_campaign(selection="random", sample_size=5, seed=1, name="same")
    assert subset.items.count() == 5
    assert set(subset.items.values_list("output_a_id", flat=True)) == set(
        same.items.values_list("output_a_id", flat=True)
    )
    by_system = make_campaign(selection="systems", systems=["s2"])
    assert set(by_system.items.values_list("system_key", flat=True)) == {"s2"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"aspect_codes": ()}, "at least one aspect"),
        ({"selection": "systems", "systems": ["nope"]}, r"unknown: \['nope'\]"),
        ({"selection": "random"}, "needs a size"),
        ({"overlap": 0}, "Overlap"),
    ],
)
def test_bad_campaigns_write_nothing(make_campaign, overrides, message):
    with pytest.raises(CampaignError, match=message):
        make_campaign(**overrides)
    assert (
        Campaign.objects.count() == Item.objects.count() == CampaignAnnotator.objects.count() == 0
    )


def test_only_annotator_accounts_can_be_invited(make_campaign, cast):
    with pytest.raises(CampaignError, match="outsider is not an annotator"):
        make_campaign(annotators=[cast["outsider"]])
    assert Campaign.objects.count() == 0
    make_campaign(annotators=[UserFactory(username="fresh", role="annotator")])
