"""Benchmarks: the loadable ones with their licences, and loading one into a dataset as an
import job (downloaded and imported by a worker, never in the request)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from studies.api.errors import error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.datasets import ImportJobSerializer
from studies.api.serializers.types import TaskField
from studies.models import TaskKind
from studies.services.imports import create_benchmark_job
from studies.services.sources import BENCHMARKS, LicenceNotAccepted, catalogue


class BenchmarkSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    title = serializers.CharField()
    licence = serializers.CharField()
    accept = serializers.CharField(help_text="Non-empty: the licence must be accepted.")
    release = serializers.CharField()


class LoadBenchmarkSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.ChoiceField(choices=sorted(BENCHMARKS))
    dataset = serializers.SlugField(max_length=100, help_text="A new or existing dataset's name.")
    task = TaskField(required=False, help_text="Task code (default: the benchmark's).")
    revision = serializers.CharField(required=False, default="", allow_blank=True, max_length=100)
    accept_licence = serializers.BooleanField(default=False)


@extend_schema(
    methods=["GET"],
    summary="The loadable benchmarks with their licences",
    responses={200: BenchmarkSerializer(many=True)},
)
@extend_schema(
    methods=["POST"],
    summary="Load a benchmark into a dataset as an import job the worker runs (400 naming "
    "accept_licence when its licence must be accepted)",
    request=LoadBenchmarkSerializer,
    responses={201: ImportJobSerializer},
)
@api_view(["GET", "POST"])
@permission_classes([IsResearcher])
def benchmarks(request: Request) -> Response:
    if request.method == "GET":
        return Response(BenchmarkSerializer(catalogue(), many=True).data)
    form = LoadBenchmarkSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    data = form.validated_data
    name = data["name"]
    task = data.get("task")
    if task is None:
        task = TaskKind.objects.get(code=BENCHMARKS[name].task)
    try:
        with transaction.atomic():
            job = create_benchmark_job(
                name=name,
                dataset_name=data["dataset"],
                task=task,
                user=request.user,
                revision=data["revision"],
                accept_licence=data["accept_licence"],
            )
    except LicenceNotAccepted as exc:
        return error_response(400, str(exc), {"accept_licence": [str(exc)]})
    return Response(ImportJobSerializer(job).data, status=status.HTTP_201_CREATED)
