"""The learned app's API routes, registered on the project's router by
``evalsite.api_urls``."""

from __future__ import annotations

from learned.api.views import TrainedMetricViewSet
from studies.api.urls import Route

routes = [
    Route("learned", TrainedMetricViewSet, "learned"),
]
