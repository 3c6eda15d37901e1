"""The annotation app's API routes, registered on the project's router by
``evalsite.api_urls``."""

from __future__ import annotations

from annotation.api.views import AnnotateCampaignViewSet, AssignmentViewSet, CampaignViewSet
from studies.api.urls import Route

routes = [
    Route("campaigns", CampaignViewSet, "campaign"),
    Route("annotate/campaigns", AnnotateCampaignViewSet, "annotate-campaign"),
    Route("annotate/assignments", AssignmentViewSet, "assignment"),
]
