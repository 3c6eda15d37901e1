"""Celery tasks of the annotation app: thin wrappers that take an id."""

from __future__ import annotations

from celery import shared_task

from annotation.models import Campaign
from annotation.services.agreement import compute_and_cache


@shared_task(name="annotation.tasks.compute_agreement", queue="light")
def compute_agreement_task(campaign_id: int) -> str:
    """Compute and cache a campaign's agreement (see :mod:`.services.agreement`)."""
    campaign = Campaign.objects.select_related("study").filter(pk=campaign_id).first()
    if campaign is None:
        return "campaign gone"
    result = compute_and_cache(campaign)
    return f"{result['n_answers']} answers in {result['seconds']} s"
