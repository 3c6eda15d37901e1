"""What the annotation app registers with ``studies`` (which never imports it): the
receiver of ``member_removed``, and the providers of :mod:`studies.hooks`, added by
:func:`register` from ``AnnotationConfig.ready()``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from django.db.models import Count, Q
from django.dispatch import receiver

from annotation.models import Assignment, Campaign, CampaignAnnotator
from annotation.services.campaigns import CampaignSpec, create_campaign
from annotation.services.competence import competence_weights
from annotation.services.gold import flagged_for_dataset
from annotation.services.preferences import PAIRWISE_CAMPAIGNS
from annotation.services.report import campaign_judgments
from studies import hooks
from studies.models import Aspect, Dataset, Study
from studies.services.analysis.dashboards import NO_JUDGMENT
from studies.signals import member_removed


@receiver(member_removed)
def _drop_invitations(sender: Any, study: Any, user: Any, **kwargs: Any) -> None:
    """A member removed from a study loses its campaigns' invitations and open leases
    (their items go back to the queue); their submitted answers stay."""
    CampaignAnnotator.objects.filter(campaign__study=study, user=user).delete()
    Assignment.objects.filter(
        item__campaign__study=study, annotator=user, status=Assignment.Status.LEASED
    ).delete()


def campaign_choices(dataset: Dataset) -> list[tuple[str, str]]:
    """The campaigns of the dataset's studies as dashboard sources, oldest first."""
    campaigns = list(
        Campaign.objects.filter(study__dataset=dataset)
        .order_by("created_at")
        .values_list("pk", "name", "study__name", "created_at")
    )
    names = Counter(name for _, name, _, _ in campaigns)
    return [  # two campaigns of one name are told apart by study, date and id
        (
            f"campaign:{pk}",
            f"campaign {name}"
            + (f" ({study}, {created:%Y-%m-%d %H:%M}, #{pk})" if names[name] > 1 else ""),
        )
        for pk, name, study, created in campaigns
    ]


def campaign_source(dataset: Dataset, raw: str) -> Q:
    """The Likert judgments given in campaign ``raw`` (none unless it is a campaign of a
    study on ``dataset``)."""
    if not Campaign.objects.filter(pk=int(raw), study__dataset=dataset).exists():
        return NO_JUDGMENT
    return Q(pk__in=campaign_judgments(int(raw)).values("pk"))


CAMPAIGN_SOURCE = hooks.JudgmentSource(
    kind="campaign", choices=campaign_choices, judgments=campaign_source
)


def study_campaigns(study: Study) -> list[Campaign]:
    """The study's campaigns with their item and annotator counts, newest first."""
    campaigns = Campaign.objects.filter(study=study).annotate(
        n_items=Count("items", distinct=True), n_annotators=Count("invitations", distinct=True)
    )
    return list(campaigns.prefetch_related("aspects").order_by("-created_at"))


def demo_campaign(study: Study, users: Mapping[str, Any]) -> None:
    """The demo study's Likert campaign (coherence and fluency, for the demo annotator),
    unless the study has a campaign already."""
    if Campaign.objects.filter(study=study).exists():
        return
    spec = CampaignSpec(
        name="Demo campaign (Likert, coherence and fluency)",
        aspects=list(Aspect.objects.filter(owner__isnull=True, code__in=["COH", "FLU"])),
        overlap=1,
        selection="random",
        sample_size=12,
        annotators=[users["annotator"]],
    )
    create_campaign(study, spec, users["researcher"])


def register() -> None:
    """Fill the hooks of :mod:`studies.hooks` this app provides (again: no change)."""
    hooks.judgment_sources.register(CAMPAIGN_SOURCE)
    hooks.flagged_annotators.register(flagged_for_dataset)
    hooks.competence_weights.register(competence_weights)
    hooks.study_campaigns.register(study_campaigns)
    hooks.demo_setup.register(demo_campaign)
    hooks.pairwise_campaigns.register(PAIRWISE_CAMPAIGNS)
