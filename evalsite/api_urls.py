"""The REST API's routes, mounted at ``/api/`` (namespace ``api``): one router on which
each app registers its viewsets (``<app>.api.urls.routes``), each app's plain paths, the
schema and its docs, then a JSON 404 for any other URL.

The registration order is the order ``GET /api/`` lists the resources in.
"""

from __future__ import annotations

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from annotation.api import urls as annotation_api
from learned.api import urls as learned_api
from studies.api import urls as studies_api
from studies.api.errors import no_route

app_name = "api"

routes = [
    *studies_api.data_routes,
    *learned_api.routes,
    *studies_api.study_routes,
    *annotation_api.routes,
]

router = DefaultRouter()
router.include_format_suffixes = False  # ?format= selects a renderer; no ".json" routes
for route in routes:
    router.register(route.prefix, route.viewset, basename=route.basename)

urlpatterns = [
    *studies_api.urlpatterns,
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
