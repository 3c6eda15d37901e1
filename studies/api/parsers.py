"""Request body parsers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import parsers


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, refusing a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (a 413):
    DRF reads the request stream itself, past the check Django makes on ``request.body``
    and on forms."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        request = (parser_context or {}).get("request")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = request.META.get("CONTENT_LENGTH") if request is not None else None
        if limit is not None and length and length.isdigit() and int(length) > limit:
            raise RequestDataTooBig(f"The request body is larger than {limit} bytes.")
        return super().parse(stream, media_type, parser_context)
