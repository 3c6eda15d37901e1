"""What the annotation app registers with ``studies`` (which never imports it)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from annotation.models import Assignment, CampaignAnnotator
from studies.signals import member_removed


@receiver(member_removed)
def _drop_invitations(sender: Any, study: Any, user: Any, **kwargs: Any) -> None:
    """A member removed from a study loses its campaigns' invitations and open leases
    (their items go back to the queue); their submitted answers stay."""
    CampaignAnnotator.objects.filter(campaign__study=study, user=user).delete()
    Assignment.objects.filter(
        item__campaign__study=study, annotator=user, status=Assignment.Status.LEASED
    ).delete()
