"""Metric runs: start (the run form's fields and checks), status with progress, cancel,
resume, a served run's batch requests and results, scores (paginated, or streamed as
CSV/JSONL), tuning a run (a worker's job) and a tuned run's evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from scoring.lm.served.batch import FORMATS
from scoring.lm.store import ModelNotInstalled
from studies.api.errors import ErrorSerializer, error_response
from studies.api.permissions import IsResearcher
from studies.api.serializers.runs import (
    RunCreateSerializer,
    RunRenameSerializer,
    RunScoreSerializer,
    RunSerializer,
)
from studies.api.serializers.tuning import TuneRequestSerializer, TuningSerializer
from studies.api.views.common import (
    PassthroughRenderer,
    dataset_or_404,
    datasets_of,
    query_of,
)
from studies.models import MetricRun, MetricScore
from studies.permissions import RENAME_REFUSED, may_rename_run
from studies.services.analysis.pairwise_judge import (
    METHODS,
    RESAMPLES,
    VOTE_RULES,
    as_dict,
    report,
)
from studies.services.csvfile import CsvWriter
from studies.services.runs import (
    RunError,
    cancel_run,
    read_answers,
    resume_run,
    start_requested,
    write_requests,
)
from studies.services.runs.labels import RenameError, rename_run
from studies.services.tuning.evidence import tuning_evidence
from studies.services.tuning.job import start_tuning
from studies.services.tuning.lookup import aspect_and_study


class ScoresExportQuery(serializers.Serializer):  # type: ignore[type-arg]
    file_format = serializers.ChoiceField(choices=["jsonl", "csv"], default="jsonl")


class PairwiseQuery(serializers.Serializer):  # type: ignore[type-arg]
    against = serializers.CharField(
        default="likert",
        allow_blank=True,
        max_length=300,
        help_text="Human preferences: 'pairs' (every imported pairwise judgment), "
        "'pairs:<file>' (one pairs file's), 'likert' (every Likert judgment), "
        "'likert:<source>' (a dashboards source: file:…, import:…, campaign:…), "
        "'pairwise:<campaign id>', or empty for none.",
    )
    margin = serializers.FloatField(
        default=0.0, min_value=0.0, help_text="Likert: a difference of at most this is a tie."
    )
    rule = serializers.ChoiceField(choices=list(VOTE_RULES), default="average")
    interval = serializers.ChoiceField(
        choices=list(METHODS),
        default="studentized",
        help_text="Bootstrap interval by document; percentile for a handful of documents.",
    )
    seed = serializers.IntegerField(default=0)
    resamples = serializers.IntegerField(default=RESAMPLES, min_value=1, max_value=10_000)


class BatchFormatQuery(serializers.Serializer):  # type: ignore[type-arg]
    batch_format = serializers.ChoiceField(choices=FORMATS, required=False)


class BatchResultsUpload(BatchFormatQuery):
    file = serializers.FileField(help_text="the batch output file (JSON lines)")


class BatchReportSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run_id = serializers.IntegerField()
    status = serializers.CharField()
    scored = serializers.IntegerField(help_text="outputs scored by this file")
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    outstanding = serializers.ListField(child=serializers.CharField(), help_text="custom_ids")
    missing = serializers.ListField(child=serializers.CharField())
    failed = serializers.DictField(child=serializers.CharField(), help_text="custom_id: why")
    refused = serializers.ListField(child=serializers.CharField())
    unreadable = serializers.ListField(child=serializers.IntegerField(), help_text="line numbers")


@extend_schema_view(
    list=extend_schema(summary="Metric runs of your datasets"),
    retrieve=extend_schema(summary="A run's status and progress (done/total, outputs/s, ETA)"),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    serializer_class = RunSerializer
    permission_classes = [IsResearcher]
    filterset_fields = ["dataset", "metric", "status", "kind"]
    ordering_fields = ["id", "label", "created_at", "status"]
    ordering = ["id"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return MetricRun.objects.none()
        return MetricRun.objects.filter(dataset__in=datasets_of(self.request.user))

    @extend_schema(
        summary="Start metric runs (one per aspect for GPTScore/G-Eval; rouge: three)",
        request=RunCreateSerializer,
        responses={201: RunSerializer(many=True)},
    )
    def create(self, request: Request) -> Response:
        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dataset = dataset_or_404(request.user, body.validated_data["dataset"])
        form = body.validate_with_form(dataset)
        try:
            runs = start_requested(
                dataset, form.run_request(), form.cleaned_data["aspects"], user=request.user
            )
        except (RunError, ModelNotInstalled) as exc:
            return error_response(400, str(exc), {"non_field_errors": [str(exc)]})
        return Response(RunSerializer(runs, many=True).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Ask a pending or running run to stop", request=None, responses={200: RunSerializer}
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        if not cancel_run(run):
            return error_response(
                409, f"The run is {run.status}; only a pending or running run can be cancelled."
            )
        run.refresh_from_db()
        return Response(RunSerializer(run).data)

    @extend_schema(
        summary="Rename the run: tables, exports and the API name it so from now on (the "
        "dataset's owner, the researcher who started the run, or an admin)",
        request=RunRenameSerializer,
        responses={200: RunSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def rename(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        if not may_rename_run(request.user, run):  # before the body is even read
            raise PermissionDenied(RENAME_REFUSED)
        body = RunRenameSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            rename_run(run, body.validated_data["label"])
        except RenameError as exc:  # another run's name: a conflict with the dataset's state
            return error_response(409 if exc.taken else 400, str(exc))
        run.refresh_from_db()
        return Response(RunSerializer(run).data)

    @extend_schema(
        summary="Resume a failed, cancelled or stalled run (finished scores are kept)",
        request=None,
        responses={200: RunSerializer},
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        if not resume_run(run):
            return error_response(409, f"The run is {run.status}; it cannot be resumed.")
        run.refresh_from_db()
        return Response(RunSerializer(run).data)

    @extend_schema(
        summary="A served run's outstanding requests as a batch request file (JSON lines, "
        "one request each with its custom_id); the run waits for their answers",
        request=BatchFormatQuery,
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR, 409: ErrorSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="batch/requests",
        renderer_classes=[PassthroughRenderer],
    )
    def batch_requests(self, request: Request, pk: Any = None) -> Any:
        run = self.get_object()
        body = BatchFormatQuery(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            found = write_requests(run, body.validated_data.get("batch_format", FORMATS[0]))
        except RunError as exc:
            return error_response(409, str(exc))
        response = HttpResponse(
            "".join(f"{line}\n" for line in found.lines),
            content_type="application/x-ndjson; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-requests.jsonl"'
        return response

    @extend_schema(
        summary="Read a batch output file into a served run: matched by custom_id, the "
        "finished outputs stored; the missing and failed lines named",
        request={"multipart/form-data": BatchResultsUpload},
        responses={200: BatchReportSerializer, 409: ErrorSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="batch/results",
        parser_classes=[MultiPartParser, FormParser],
    )
    def batch_results(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        body = BatchResultsUpload(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        lines = (raw.decode("utf-8", errors="replace") for raw in upload)
        try:
            found = read_answers(run, lines, fmt=body.validated_data.get("batch_format"))
        except RunError as exc:
            return error_response(409, str(exc))
        return Response(BatchReportSerializer(found).data)

    @extend_schema(
        summary="The run's scores, by output (paginated)",
        responses={200: RunScoreSerializer(many=True)},
    )
    @action(detail=True, methods=["get"], filterset_fields=[], ordering_fields=[])
    def scores(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        page = self.paginate_queryset(_scores(run))
        return self.get_paginated_response(RunScoreSerializer(page, many=True).data)

    @extend_schema(
        summary="A pairwise judge run: systems' win rates and Bradley–Terry strengths with "
        "bootstrap intervals, position consistency, first-position preference, and agreement "
        "with human preferences beside human–human agreement",
        parameters=[PairwiseQuery],
        responses={200: OpenApiTypes.OBJECT, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["get"], filterset_fields=[], ordering_fields=[])
    def pairwise(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        if run.metric != "pairwise":
            return error_response(409, f"Run {run.pk} is no pairwise judge run ({run.metric}).")
        query = PairwiseQuery(data=query_of(request))
        query.is_valid(raise_exception=True)
        q = query.validated_data
        found = report(
            run,
            q["against"],
            margin=q["margin"],
            rule=q["rule"],
            seed=q["seed"],
            n_resamples=q["resamples"],
            interval=q["interval"],
        )
        if found.summary is None:
            return error_response(409, found.problem)
        return Response(
            {
                "run": run.pk,
                "summary": as_dict(found.summary),
                "against": found.source,
                "margin": found.margin,
                "rule": found.rule,
                "interval": q["interval"],
                "agreement": as_dict(found.agreement) if found.agreement else None,
                "agreement_problem": found.agreement_problem,
            }
        )

    @extend_schema(
        summary="Tune the run on an aspect (a worker's job): the tuned run, pending, its "
        "progress, cancel and evidence as any run's; the options are the tuner's",
        request=TuneRequestSerializer,
        responses={202: RunSerializer, 400: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def tune(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        body = TuneRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        options = body.options()
        try:
            aspect, study = aspect_and_study(run.dataset.owner, data["aspect"], data.get("study"))
        except LookupError as exc:
            field, _, message = str(exc).partition(": ")
            return error_response(400, message, {field.lstrip("-"): [message]})
        try:
            job = start_tuning(
                run,
                aspect,
                data["tuner"],
                study=study,
                options=options,
                seed=data["seed"],
                resamples=data["resamples"],
                by=request.user,
            )
        except ValueError as exc:  # no split, the run not succeeded, an option refused
            return error_response(400, str(exc), {"non_field_errors": [str(exc)]})
        return Response(RunSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="A tuned run's evidence: the tuner and its options, the candidates with "
        "their dev figures, the chosen one, the start-vs-tuned Δ on the split's test documents "
        "with its paired bootstrap interval by document, the overfitting gap and the cost "
        "(404 for a run no tuner made)",
        responses={200: TuningSerializer, 404: ErrorSerializer},
    )
    @action(detail=True, methods=["get"], filterset_fields=[], ordering_fields=[])
    def tuning(self, request: Request, pk: Any = None) -> Response:
        run = self.get_object()
        found = tuning_evidence(run)
        if found is None:
            return error_response(404, f"Run {run.pk} was not made by a tuner.")
        return Response(TuningSerializer(found).data)

    @extend_schema(
        summary="The run's scores as one streamed file (JSONL or CSV)",
        parameters=[OpenApiParameter("file_format", OpenApiTypes.STR, enum=["jsonl", "csv"])],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="scores/export",
        renderer_classes=[PassthroughRenderer],
    )
    def scores_export(self, request: Request, pk: Any = None) -> Any:
        run = self.get_object()
        query = ScoresExportQuery(data=query_of(request))
        query.is_valid(raise_exception=True)
        file_format = query.validated_data["file_format"]
        lines = _csv_lines(run) if file_format == "csv" else _jsonl_lines(run)
        content_type = "text/csv" if file_format == "csv" else "application/x-ndjson"
        response = StreamingHttpResponse(lines, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="run-{run.pk}-scores.{file_format}"'
        )
        return response


def _scores(run: MetricRun) -> Any:
    return (
        MetricScore.objects.filter(run=run)
        .select_related("output__document")
        .order_by("output__document__doc_key", "output__system_id")
    )


FIELDS = ("output", "doc_key", "system_id", "value", "error")


def _rows(run: MetricRun) -> Iterator[dict[str, Any]]:
    for score in _scores(run).iterator(chunk_size=2000):
        yield {
            "output": score.output_id,
            "doc_key": score.output.document.doc_key,
            "system_id": score.output.system_id,
            "value": score.value,
            "error": score.error,
            "details": score.details,
        }


def _jsonl_lines(run: MetricRun) -> Iterator[str]:
    for row in _rows(run):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def _csv_lines(run: MetricRun) -> Iterator[str]:
    writer = CsvWriter()
    yield writer.row(FIELDS)
    for row in _rows(run):
        yield writer.row(row[f] for f in FIELDS)
