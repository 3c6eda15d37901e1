"""Page-number pagination with a client-chosen page size (bounded). A page or page size
that is not a whole number in range is a 400 naming it, as the schema says; a page past
the last one is a 404."""

from __future__ import annotations

import re
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

MAX_PAGE = 10**9 - 1


def _whole_number(request: Request, name: str, high: int) -> int | None:
    """The query parameter ``name`` as an int in 1..high; None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = int(raw) if re.fullmatch(r"[0-9]{1,9}", raw) else 0
    if not 1 <= value <= high:
        raise ValidationError({name: [f"A whole number from 1 to {high}."]})
    return value


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 1000
    last_page_strings = ()  # ?page=last is not in the schema

    def get_page_size(self, request: Request) -> int:
        size = _whole_number(request, self.page_size_query_param, self.max_page_size)
        return size if size is not None else int(self.page_size or 0)

    def get_page_number(self, request: Request, paginator: Any) -> int:
        return _whole_number(request, self.page_query_param, MAX_PAGE) or 1

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        bounds = {
            self.page_query_param: {"minimum": 1, "maximum": MAX_PAGE},
            self.page_size_query_param: {"minimum": 1, "maximum": self.max_page_size},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
