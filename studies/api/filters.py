"""The API's list filters and ordering, strict as the schema documents them. An object
filter (``?dataset=``, ``?study=``, ``?output=`` …) takes an id: a positive whole number,
a 400 naming the parameter otherwise. An id of nothing you can see lists nothing, the same
answer whether the object is someone else's or does not exist (a choice filter's "Select a
valid choice" told them apart). ``?ordering=`` takes the view's fields only."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.db import models
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.rest_framework import FilterSet as RestFilterSet
from django_filters.rest_framework.filterset import FILTER_FOR_DBFIELD_DEFAULTS
from drf_spectacular.utils import extend_schema_field
from rest_framework import filters
from rest_framework.exceptions import ValidationError

from studies.forms import MAX_ID


class IdField(forms.IntegerField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=1, max_value=MAX_ID, **kwargs)


@extend_schema_field({"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """An id: a whole number from 1 to the database's largest (a float or a huge number
    is a 400)."""

    field_class = IdField


class FilterSet(RestFilterSet):
    """django-filter's FilterSet with object filters by id. An empty value is a 400 but
    for a text filter: django-filter reads it as "do not filter", which the schema's
    integer or choice does not allow."""

    FILTER_DEFAULTS = {
        **FILTER_FOR_DBFIELD_DEFAULTS,
        models.ForeignKey: {"filter_class": IdFilter},
        models.OneToOneField: {"filter_class": IdFilter},
    }

    def is_valid(self) -> bool:
        valid = bool(super().is_valid())
        for name, filter_ in self.filters.items():
            if self.data.get(name) == "" and not isinstance(filter_, django_filters.CharFilter):
                self.form.add_error(name, "Give a value, or leave the parameter out.")
                valid = False
        return valid


class FilterBackend(DjangoFilterBackend):
    """The filter backend: a view's ``filterset_fields`` build on the FilterSet above."""

    filterset_base = FilterSet


class OrderingFilter(filters.OrderingFilter):
    """``?ordering=`` takes the view's ordering fields, each optionally with a leading
    ``-``, comma-separated; an unknown one is a 400 naming it (DRF drops it silently)."""

    def _choices(self, view: Any, queryset: Any = None, request: Any = None) -> list[str]:
        fields = [name for name, _ in self.get_valid_fields(queryset, view, {"request": request})]
        return [term for name in fields for term in (name, f"-{name}")]

    def get_ordering(self, request: Any, queryset: Any, view: Any) -> Any:
        raw = request.query_params.get(self.ordering_param)
        if raw is None:
            return self.get_default_ordering(view)
        terms = [term.strip() for term in raw.split(",")]
        choices = self._choices(view, queryset, request)
        unknown = [term for term in terms if term not in choices]
        if unknown:
            known = ", ".join(choices) or "none here"
            message = f"Unknown: {', '.join(map(repr, unknown))}; use {known}."
            raise ValidationError({self.ordering_param: [message]})
        return terms

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        choices = self._choices(view)
        if not choices:
            return []  # the view orders its own way
        description = "Comma-separated fields to order by (a leading - for descending)."
        schema = {"type": "array", "items": {"type": "string", "enum": choices}, "minItems": 1}
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "style": "form",
                "explode": False,
                "description": description,
                "schema": schema,
            }
        ]
