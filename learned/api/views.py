"""Trained (learned) metrics: start a training job (the training page's fields and
checks), its status with progress and results, cancel, resume. A finished one scores a
dataset through ``POST /api/runs/`` (``metric=learned``, ``model=<id>``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from learned.api.serializers import TrainedMetricCreateSerializer, TrainedMetricSerializer
from learned.models import TrainedMetric
from learned.services.data import TrainingError
from learned.services.jobs import cancel_job, create_job, resume_job, visible_jobs
from studies.api.errors import error_response
from studies.api.permissions import IsResearcher


@extend_schema_view(
    list=extend_schema(summary="Trained metrics (training jobs) of your datasets"),
    retrieve=extend_schema(
        summary="A training job: status, progress, pairs, results, configuration, split"
    ),
)
class TrainedMetricViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):  # type: ignore[type-arg]
    serializer_class = TrainedMetricSerializer
    permission_classes = [IsResearcher]
    filterset_fields = ["dataset", "status", "aspect", "setup", "mode"]
    ordering_fields = ["id", "created_at", "status"]
    ordering = ["-created_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return TrainedMetric.objects.none()
        return visible_jobs(self.request.user)

    @extend_schema(
        summary="Start a training job (the training page's fields; enqueued for the workers)",
        request=TrainedMetricCreateSerializer,
        responses={201: TrainedMetricSerializer},
    )
    def create(self, request: Request) -> Response:
        body = TrainedMetricCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        form = body.validate_with_form(request.user)
        try:
            job = create_job(form.training_request(), user=request.user)
        except TrainingError as exc:
            field = exc.field if exc.field in body.fields else "non_field_errors"
            return error_response(400, str(exc), {field: [str(exc)]})
        return Response(TrainedMetricSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Ask a pending or running job to stop after its current epoch",
        request=None,
        responses={200: TrainedMetricSerializer},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: Any = None) -> Response:
        job = self.get_object()
        if not cancel_job(job):
            return error_response(
                409, f"The job is {job.status}; only a pending or running job can be cancelled."
            )
        job.refresh_from_db()
        return Response(TrainedMetricSerializer(job).data)

    @extend_schema(
        summary="Resume a failed, cancelled or stalled job from its last checkpoint",
        request=None,
        responses={200: TrainedMetricSerializer},
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: Any = None) -> Response:
        job = self.get_object()
        if not resume_job(job):
            return error_response(409, f"The job is {job.status}; it cannot be resumed.")
        job.refresh_from_db()
        return Response(TrainedMetricSerializer(job).data)
