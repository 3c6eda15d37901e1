"""The demo command sets up a small campaign for the demo annotator, once."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Campaign

pytestmark = pytest.mark.django_db


def test_demo_setup_creates_one_campaign_for_the_demo_annotator(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("demo", "--setup-only", "--skip-model")
    call_command("demo", "--setup-only", "--skip-model")
    campaign = Campaign.objects.get()
    assert campaign.items.count() == 12 and campaign.overlap == 1
    assert list(campaign.annotators.values_list("username", flat=True)) == ["annotator"]
    assert sorted(campaign.aspects.values_list("code", flat=True)) == ["COH", "FLU"]
    owner = campaign.study.owner
    assert owner.username == "researcher" and owner.has_perm("studies.create_annotator_accounts")
    annotator = campaign.annotators.get()
    assert not annotator.has_perm("studies.create_annotator_accounts")
