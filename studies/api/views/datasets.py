"""Datasets (list own and shared, create, delete), uploads as import jobs, exports."""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import ErrorSerializer, error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.datasets import (
    DatasetSerializer,
    ImportJobSerializer,
    UploadIntoSerializer,
    UploadSerializer,
    sync_import_limit,
)
from studies.api.views.common import (
    OwnedRowsViewSet,
    PassthroughRenderer,
    datasets_of,
    query_of,
)
from studies.models import Dataset, ImportJob
from studies.permissions import may_change_dataset
from studies.services.deletion import DeletionRefused, delete_dataset
from studies.services.imports import (
    UploadNotStored,
    create_import_job,
    export_dataset,
    run_import_job,
)

MAX_WAIT = 300.0
WAIT = OpenApiParameter(
    "wait",
    {"type": "number", "format": "double", "minimum": 0, "maximum": MAX_WAIT},
    description="Seconds to wait for the import to finish "
    "(a small file is imported in the request); 0 or absent: answer at once with the job.",
)
FILE_FORMAT = OpenApiParameter(
    "file_format", OpenApiTypes.STR, enum=["jsonl", "csv"], default="jsonl"
)
TOO_LARGE = OpenApiResponse(
    ErrorSerializer,
    description="The file is larger than the import limit (IMPORT_MAX_FILE_BYTES), "
    "refused while it arrives; nothing was stored.",
)
NOT_STORED = OpenApiResponse(
    ErrorSerializer,
    description="The server could not write the file (a full disk); nothing was kept, and "
    "the message names the cause.",
)


class ExportQuery(serializers.Serializer):  # type: ignore[type-arg]
    file_format = serializers.ChoiceField(choices=["jsonl", "csv"], default="jsonl")


class WaitQuery(serializers.Serializer):  # type: ignore[type-arg]
    wait = serializers.FloatField(default=0, min_value=0, max_value=MAX_WAIT)


def _import(
    request: Request, upload: Any, *, name: str, task: Any, file_format: str, create_aspects: bool
) -> Response:
    """Save the upload as a job (the upload page's service); with ``?wait=``, import it
    now when small (the queued task then finds it done) or wait for the worker."""
    wait = WaitQuery(data=query_of(request))
    wait.is_valid(raise_exception=True)
    seconds = wait.validated_data["wait"]
    try:
        with transaction.atomic():
            job = create_import_job(
                upload=upload,
                original_name=upload.name,
                file_format=file_format,
                dataset_name=name,
                task=task,
                create_aspects=create_aspects,
                user=request.user,
            )
    except UploadNotStored as exc:  # a full disk: what was written is gone
        return error_response(507, str(exc), {"file": [str(exc)]})
    if seconds > 0:
        if upload.size <= sync_import_limit():
            run_import_job(job.pk)  # a no-op if a worker claimed it first
        deadline = time.monotonic() + seconds
        job.refresh_from_db()
        while not job.is_finished and time.monotonic() < deadline:
            time.sleep(0.2)
            job.refresh_from_db()
    data = ImportJobSerializer(job).data
    if job.status == ImportJob.Status.FAILED:
        return error_response(
            400,
            "The file was not imported; nothing was written.",
            {"file": list(job.errors)},
            job=data,
        )
    return Response(data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(summary="Datasets you own or research in a study of"),
    retrieve=extend_schema(summary="A dataset"),
    create=extend_schema(summary="Create an empty dataset (fill it with an upload)"),
    destroy=extend_schema(summary="Delete a dataset (owner only; refused while runs are active)"),
)
class DatasetViewSet(OwnedRowsViewSet):
    serializer_class = DatasetSerializer
    filterset_fields = ["name", "task__code"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Dataset.objects.none()
        return datasets_of(self.request.user).annotate(
            n_documents=Count("documents", distinct=True)
        )

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        dataset = self.get_object()
        if not may_change_dataset(request.user, dataset):
            return error_response(403, "Only the dataset's owner can delete it.")
        try:
            delete_dataset(dataset)
        except DeletionRefused as exc:
            return error_response(409, str(exc))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Upload records (JSONL or CSV) into this dataset",
        request={"multipart/form-data": UploadIntoSerializer},
        parameters=[WAIT],
        responses={201: ImportJobSerializer, 413: TOO_LARGE, 507: NOT_STORED},
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def upload(self, request: Request, pk: Any = None) -> Response:
        dataset: Dataset = self.get_object()
        if not may_change_dataset(request.user, dataset):
            return error_response(
                403, "Only the dataset's owner can upload into it; upload into a dataset of yours."
            )
        form = UploadSerializer(
            data={
                "file": request.data.get("file"),
                "dataset": dataset.name,
                "task": dataset.task.code,
                "create_aspects": request.data.get("create_aspects", False),
                "format": request.data.get("format", "concordia"),
            },
            context={"request": request},
        )
        form.is_valid(raise_exception=True)
        data = form.validated_data
        return _import(
            request,
            data["file"],
            name=dataset.name,
            task=dataset.task,
            file_format=data["file_format"],
            create_aspects=data["create_aspects"],
        )

    @extend_schema(
        summary="Export the dataset (streamed JSONL or CSV, the import formats)",
        parameters=[FILE_FORMAT],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    @action(detail=True, methods=["get"], renderer_classes=[PassthroughRenderer])
    def export(self, request: Request, pk: Any = None) -> Any:
        dataset = self.get_object()
        query = ExportQuery(data=query_of(request))
        query.is_valid(raise_exception=True)
        file_format = query.validated_data["file_format"]
        content_type = "text/csv" if file_format == "csv" else "application/x-ndjson"
        response = StreamingHttpResponse(
            export_dataset(dataset, file_format), content_type=f"{content_type}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{dataset.name}.{file_format}"'
        return response


@extend_schema_view(
    list=extend_schema(summary="Your import jobs"),
    retrieve=extend_schema(summary="An import job's status, summary and errors"),
)
class ImportJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    serializer_class = ImportJobSerializer
    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser, FormParser]
    filterset_fields = ["status", "dataset", "dataset_name"]
    ordering_fields = ["created_at", "id"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return ImportJob.objects.none()
        jobs = ImportJob.objects.select_related("task")
        user = self.request.user
        return jobs if user.is_superuser else jobs.filter(created_by=user)

    @extend_schema(
        summary="Upload records into a new or existing dataset (as the upload page)",
        request={"multipart/form-data": UploadSerializer},
        parameters=[WAIT],
        responses={201: ImportJobSerializer, 413: TOO_LARGE, 507: NOT_STORED},
    )
    def create(self, request: Request) -> Response:
        form = UploadSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        data = form.validated_data
        return _import(
            request,
            data["file"],
            name=data["dataset"],
            task=data["task"],
            file_format=data["file_format"],
            create_aspects=data["create_aspects"],
        )
