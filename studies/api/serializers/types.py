"""JSON request bodies hold the types the schema documents. DRF converts what it can (0
becomes "0" in a text field, "5" becomes 5, "yes" becomes true), so a body the schema
refuses would be accepted; with StrictJsonTypes it is a 400 naming the field. Text holds
no NUL, as the schema says (a lookup by a name with NUL was a 500 on PostgreSQL)."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import QueryDict
from rest_framework import relations, serializers
from rest_framework.fields import empty

from studies.models import TaskKind


def _is_integer(value: Any) -> bool:
    # JSON Schema's integer: 3 and 3.0 alike, never true or false
    return not isinstance(value, bool) and (
        isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    )


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _items_error(child: Any, value: Any) -> str | None:
    if not isinstance(value, list):
        return "Must be a list."
    for i, item in enumerate(value):
        message = type_error(child, item) if child is not None else None
        if message:
            return f"Item {i}: {message}"
    return None


def type_error(field: Any, value: Any) -> str | None:
    """Why ``value`` is not of the JSON type ``field`` is documented with; None if it is
    (or if the field takes any type, or null is for DRF to judge)."""
    if value is None:
        return None
    if isinstance(field, serializers.ListSerializer):
        return None if isinstance(value, list) else "Must be a list."
    if isinstance(field, serializers.ManyRelatedField):
        return _items_error(field.child_relation, value)
    if isinstance(field, serializers.ListField | serializers.MultipleChoiceField):
        return _items_error(getattr(field, "child", None), value)
    if isinstance(field, serializers.DictField):
        if not isinstance(value, dict):
            return "Must be an object."
        errors = [(key, type_error(field.child, item)) for key, item in value.items()]
        return next((f"{key}: {e}" for key, e in errors if e), None)
    if isinstance(field, serializers.Serializer):
        return None if isinstance(value, dict) else "Must be an object."
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else "Must be true or false."
    if isinstance(field, serializers.IntegerField | relations.PrimaryKeyRelatedField):
        return None if _is_integer(value) else "Must be a whole number."
    if isinstance(field, serializers.FloatField):
        return None if _is_number(value) else "Must be a number."
    if isinstance(field, serializers.ChoiceField):
        if all(isinstance(choice, str) for choice in field.choices):
            return _text_error(value)
        return None
    if isinstance(field, serializers.CharField | relations.SlugRelatedField):
        max_length = getattr(field, "max_length", None)
        if isinstance(value, str) and max_length is not None and len(value) > max_length:
            # the schema's maxLength counts what is sent; DRF would count it trimmed
            return f"Ensure this field has no more than {max_length} characters."
        return _text_error(value)
    return None


def _text_error(value: Any) -> str | None:
    if not isinstance(value, str):
        return "Must be a string."
    # PostgreSQL refuses NUL in a lookup with a DataError (a 500), and the schema says so
    if "\x00" in value:
        return "Null characters are not allowed."
    return None


class StrictJsonTypes:
    """A request serializer whose JSON values must have their documented types (form
    data, all strings, is left to the fields)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and not isinstance(data, QueryDict):  # parsed JSON
            errors = {}
            for field in self._writable_fields:  # type: ignore[attr-defined]
                value = data.get(field.field_name, empty)
                message = None if value is empty else type_error(field, value)
                if message:
                    errors[field.field_name] = [message]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


def task_codes() -> list[str]:
    """The codes of the tasks there are (the built-in ones when there is no database to
    ask: a schema made offline)."""
    try:
        return list(TaskKind.objects.order_by("code").values_list("code", flat=True))
    except DatabaseError:
        return sorted(
            (
                TaskKind.SUMMARIZATION,
                TaskKind.DIALOGUE,
                TaskKind.DATA_TO_TEXT,
                TaskKind.MACHINE_TRANSLATION,
                TaskKind.CUSTOM,
            )
        )


class TaskField(serializers.SlugRelatedField):  # type: ignore[type-arg]
    """A task by its code. The schema lists the codes there are when it is made
    (studies/api/schema.py), so a request the schema allows names a task that exists."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(slug_field="code", queryset=TaskKind.objects.all(), **kwargs)
