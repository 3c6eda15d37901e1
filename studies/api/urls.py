"""The studies app's API routes: its viewsets (as :class:`Route` rows) and its plain
paths. ``evalsite.api_urls`` mounts them at ``/api/`` with the other apps' routes, on
one router; the other apps describe theirs with the same :class:`Route`."""

from __future__ import annotations

from typing import NamedTuple

from django.urls import path
from rest_framework.viewsets import ViewSetMixin

from studies.api.views import (
    benchmarks,
    catalog,
    compare,
    correlations,
    datasets,
    diagnostics,
    endpoints,
    jobs,
    planner,
    ppi,
    report_card,
    runs,
    uploads,
)
from studies.api.views.auth import TokenView
from studies.api.views.studies import StudyViewSet


class Route(NamedTuple):
    """A viewset for the project's router: its URL prefix, the viewset, and the base of
    its URL names (``api:<basename>-list``, ``api:<basename>-detail``…)."""

    prefix: str
    viewset: type[ViewSetMixin]
    basename: str


# the data: datasets, their imports and contents, the prompt templates, metric runs
data_routes = [
    Route("datasets", datasets.DatasetViewSet, "dataset"),
    Route("imports", datasets.ImportJobViewSet, "import"),
    Route("uploads", uploads.UploadSessionViewSet, "upload-session"),
    Route("documents", catalog.DocumentViewSet, "document"),
    Route("outputs", catalog.OutputViewSet, "output"),
    Route("judgments", catalog.JudgmentViewSet, "judgment"),
    Route("aspects", catalog.AspectViewSet, "aspect"),
    Route("templates", catalog.TemplateViewSet, "template"),
    Route("runs", runs.RunViewSet, "run"),
    Route("endpoints", endpoints.EndpointViewSet, "endpoint"),
]

# studies and their members
study_routes = [
    Route("studies", StudyViewSet, "study"),
]

urlpatterns = [
    path("auth/token/", TokenView.as_view(), name="token"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("benchmarks/", benchmarks.benchmarks, name="benchmarks"),
    path("datasets/<int:pk>/correlations/", correlations.matrix, name="correlations"),
    path("datasets/<int:pk>/correlations/paper/", correlations.paper, name="correlations-paper"),
    path("datasets/<int:pk>/correlations/export/", correlations.export, name="correlations-export"),
    path(
        "datasets/<int:pk>/correlations/cell/<int:run>/<int:aspect>/",
        correlations.cell,
        name="correlations-cell",
    ),
    path("datasets/<int:pk>/ppi/", ppi.table, name="dataset-ppi"),
    path("datasets/<int:pk>/compare/", compare.runs, name="dataset-compare"),
    path("datasets/<int:pk>/sentinels/", planner.sentinels, name="dataset-sentinels"),
    path("datasets/<int:pk>/planner/", planner.plan, name="dataset-planner"),
    path(
        "datasets/<int:pk>/diagnostics/",
        diagnostics.diagnostics_view,
        name="dataset-diagnostics",
    ),
    path(
        "datasets/<int:pk>/report-card/",
        report_card.report_card_view,
        name="dataset-report-card",
    ),
    path(
        "studies/<int:pk>/report-card/",
        report_card.study_report_card_view,
        name="study-report-card",
    ),
]
