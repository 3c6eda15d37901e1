"""Resumable uploads (studies/services/uploads.py): start one, send its chunks, ask for its
offset after a dropped connection, complete it into an import job, or cancel it. A
session is its uploader's alone: anyone else, an admin included, gets 404."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.http import http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import ErrorSerializer, error_response, field_errors, invalid_input_body
from studies.api.permissions import IsResearcher
from studies.api.serializers.datasets import ImportJobSerializer
from studies.api.serializers.uploads import StartUploadSerializer, UploadSessionSerializer
from studies.models import UploadSession
from studies.services import uploads

OCTET = "application/offset+octet-stream"  # tus's type for a chunk
OFFSET = OpenApiParameter(
    "Upload-Offset",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    required=True,
    description="The byte the chunk starts at: the session's offset.",
)


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


WRONG_OFFSET = _error(
    "The chunk starts elsewhere than the session's offset (in the body's "
    "`offset` and the Upload-Offset header): resume from there."
)
GONE = _error("The session expired (UPLOAD_SESSION_SECONDS without a chunk) or was removed.")


def _with_offset(response: Response, session: UploadSession) -> Response:
    """The tus headers: where to resume, the declared size, until when the session waits."""
    response["Upload-Offset"] = str(session.offset)
    response["Upload-Length"] = str(session.size)
    response["Upload-Expires"] = http_date(session.expires_at.timestamp())
    response["Cache-Control"] = "no-store"
    return response


def _refused(exc: uploads.UploadRefused) -> Response:
    extra: dict[str, Any] = {} if exc.offset is None else {"offset": exc.offset}
    response = error_response(exc.status, str(exc), **extra)
    if exc.offset is not None:
        response["Upload-Offset"] = str(exc.offset)
    if isinstance(exc, uploads.UploadBusy):
        response["Retry-After"] = "1"
    return response


@extend_schema_view(
    list=extend_schema(summary="Your resumable uploads (those not yet expired)"),
    retrieve=extend_schema(
        summary="A resumable upload: its offset (also in Upload-Offset; HEAD gives the headers)",
        responses={200: UploadSessionSerializer, 410: GONE},
    ),
)
class UploadSessionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):  # type: ignore[type-arg]
    serializer_class = UploadSessionSerializer
    permission_classes = [IsResearcher]
    filterset_fields = ["file_name", "dataset_name"]
    ordering_fields = ["created_at"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return UploadSession.objects.none()
        return UploadSession.objects.filter(owner=self.request.user).select_related("task")

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        session = self.get_object()
        try:
            uploads.check_alive(session)
        except uploads.UploadRefused as exc:
            return _refused(exc)
        return _with_offset(Response(self.get_serializer(session).data), session)

    @extend_schema(
        summary="Start a resumable upload: the file's name and size, and the import options",
        request=StartUploadSerializer,
        responses={
            201: UploadSessionSerializer,
            413: _error("The declared size is above IMPORT_MAX_FILE_BYTES; nothing was kept."),
            507: _error("The server has no room for the declared size."),
        },
    )
    def create(self, request: Request) -> Response:
        form = StartUploadSerializer(data=request.data, context={"request": request})
        if not form.is_valid():
            code = 413 if form.too_large else 400
            return Response(invalid_input_body(field_errors(form.errors)), status=code)
        data = form.validated_data
        try:
            session = uploads.start_upload(
                user=request.user,
                file_name=data["file_name"],
                file_format=data["file_format"],
                size=data["size"],
                sha256=data["sha256"],
                dataset_name=data["dataset"],
                task=data["task"],
                create_aspects=data["create_aspects"],
                rescale=data["rescale"],
                widen_aspects=data["widen_aspects"],
            )
        except uploads.UploadRefused as exc:
            return _refused(exc)
        response = Response(self.get_serializer(session).data, status=status.HTTP_201_CREATED)
        response["Location"] = reverse("api:upload-session-detail", args=[session.pk])
        return _with_offset(response, session)

    @extend_schema(
        summary="Append a chunk at the session's offset (tus PATCH); answers the new offset",
        request={OCTET: OpenApiTypes.BINARY},
        parameters=[OFFSET],
        responses={
            204: OpenApiResponse(description="Appended; Upload-Offset is the new offset."),
            409: WRONG_OFFSET,
            410: GONE,
            413: _error("The chunk passes the declared size, or REQUEST_MAX_BODY_BYTES."),
            415: _error(f"The chunk is not sent as {OCTET}."),
            423: _error("Another request is writing this session; ask its offset again."),
            507: _error("The server could not store the chunk; nothing of it was kept."),
        },
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        session = self.get_object()
        if request.content_type.split(";")[0].strip() != OCTET:
            return error_response(415, f"Send the chunk as {OCTET}.")
        offset = request.headers.get("Upload-Offset", "")
        if not offset.isdigit():
            message = "Say where the chunk starts: the header Upload-Offset, a whole number."
            return error_response(400, message, {"Upload-Offset": [message]})
        chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
        announced = None if chunked else int(request.META.get("CONTENT_LENGTH") or 0)
        try:
            uploads.append_chunk(session, int(offset), request._request.read, announced)
        except uploads.UploadRefused as exc:
            return _refused(exc)
        return _with_offset(Response(status=status.HTTP_204_NO_CONTENT), session)

    @extend_schema(
        summary="Cancel a resumable upload and remove what it received",
        responses={204: None, 409: _error("It is complete: its file is its import's.")},
    )
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            uploads.cancel_upload(self.get_object())
        except uploads.UploadRefused as exc:
            return _refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Complete the upload: its import job, created once (again: the same job)",
        request=None,
        responses={
            200: ImportJobSerializer,
            201: ImportJobSerializer,
            400: _error("The file's SHA-256 is not the one declared."),
            409: _error("Bytes are missing (the body's `offset` says how many arrived)."),
            410: GONE,
        },
    )
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: Any = None) -> Response:
        session = self.get_object()
        try:
            job, created = uploads.complete_upload(session)
        except uploads.UploadRefused as exc:
            return _refused(exc)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ImportJobSerializer(job).data, status=code)
