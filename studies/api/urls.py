"""The API's routes, mounted at ``/api/``."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from studies.api.errors import no_route
from studies.api.views import (
    annotation,
    catalog,
    compare,
    correlations,
    datasets,
    diagnostics,
    learned,
    planner,
    ppi,
    runs,
)
from studies.api.views.auth import TokenView

app_name = "api"
router = DefaultRouter()
router.include_format_suffixes = False  # ?format= selects a renderer; no ".json" routes
router.register("datasets", datasets.DatasetViewSet, basename="dataset")
router.register("imports", datasets.ImportJobViewSet, basename="import")
router.register("documents", catalog.DocumentViewSet, basename="document")
router.register("outputs", catalog.OutputViewSet, basename="output")
router.register("judgments", catalog.JudgmentViewSet, basename="judgment")
router.register("aspects", catalog.AspectViewSet, basename="aspect")
router.register("templates", catalog.TemplateViewSet, basename="template")
router.register("runs", runs.RunViewSet, basename="run")
router.register("learned", learned.TrainedMetricViewSet, basename="learned")
router.register("studies", annotation.StudyViewSet, basename="study")
router.register("campaigns", annotation.CampaignViewSet, basename="campaign")
router.register(
    "annotate/campaigns", annotation.AnnotateCampaignViewSet, basename="annotate-campaign"
)
router.register("annotate/assignments", annotation.AssignmentViewSet, basename="assignment")

urlpatterns = [
    path("auth/token/", TokenView.as_view(), name="token"),
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
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # the split view serves Swagger UI's start script as a file (no inline script: CSP)
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api:schema", template_name="api/swagger_ui.html"
        ),
        name="docs",
    ),
    path("", include(router.urls)),
    # last: any other URL ending in a slash (a path id that is not a number, an unknown
    # action) is a JSON 404; one without the slash is still redirected to it first
    re_path(r"^.+/$", no_route, name="no-route"),
]
