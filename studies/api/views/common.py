"""Pieces every API view module shares."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, viewsets
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

from studies.api.permissions import IsResearcher
from studies.models import Dataset
from studies.permissions import visible_datasets


class OwnedRowsViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):  # type: ignore[type-arg]
    """Rows a researcher owns or may see (datasets, endpoints): list, read, create,
    delete; by name, newest or id."""

    permission_classes = [IsResearcher]
    ordering_fields = ["name", "created_at", "id"]
    ordering = ["name"]


class PassthroughRenderer(BaseRenderer):
    """Lets a view answer with a streamed file whatever the client accepts; an error
    raised before the file starts is still the JSON error body."""

    media_type = "*/*"
    format = "file"

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> Any:
        if isinstance(data, str | bytes):
            return data
        response = (renderer_context or {}).get("response")
        if response is not None:
            response["Content-Type"] = "application/json"
        return JSONRenderer().render(data)


def datasets_of(user: Any) -> QuerySet[Dataset]:
    return visible_datasets(user).select_related("task", "owner")


def dataset_or_404(user: Any, pk: Any) -> Dataset:
    return get_object_or_404(datasets_of(user), pk=pk)


def query_of(request: Request) -> dict[str, str]:
    """The query string as a plain dict, for a query serializer: an empty value is then a
    value to validate (DRF reads an empty form field as absent, which made ``?weights=``
    mean the default). A parameter given twice never gets here (SingleQueryValuesMiddleware)."""
    return request.query_params.dict()


def id_param(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.INT, OpenApiParameter.PATH, description=description)
