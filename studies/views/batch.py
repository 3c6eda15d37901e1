"""A served run's batch file from its page: download its outstanding requests as a
batch request file (the run then waits for their answers), upload the results file a
batch processor gave. The same services as ``run_metric --batch-file``,
``manage.py batch_results`` and the API (``runs/{id}/batch/requests|results``); like the
API, the results file is read in the request (each line is one answer matched by its
``custom_id``: no model runs here, and the answers go to the response cache)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from studies.forms import BatchRequestsForm, BatchResultsForm
from studies.models import MetricRun
from studies.permissions import visible_datasets
from studies.services.runs import RunError, read_answers, write_requests
from studies.views.helpers import researcher_required


def _run(request: HttpRequest, pk: int) -> MetricRun:
    runs = MetricRun.objects.filter(dataset__in=visible_datasets(request.user))
    return get_object_or_404(runs.select_related("dataset"), pk=pk)


@require_POST
@researcher_required
def run_batch_requests(request: HttpRequest, pk: int) -> HttpResponse:
    """The run's outstanding requests as a batch request file (a download); the run
    waits for their answers."""
    run = _run(request, pk)
    form = BatchRequestsForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"No request file: {form.errors.as_text()}")
        return redirect("studies:run-detail", pk=pk)
    try:
        found = write_requests(run, form.cleaned_data["batch_format"])
    except RunError as exc:
        messages.error(request, f"No request file: {exc}")
        return redirect("studies:run-detail", pk=pk)
    response = HttpResponse(
        "".join(f"{line}\n" for line in found.lines),
        content_type="application/x-ndjson; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-requests.jsonl"'
    return response


@require_POST
@researcher_required
def run_batch_results(request: HttpRequest, pk: int) -> HttpResponse:
    """Read an uploaded batch output file into the run; its page says what was scored
    and names the missing and failed lines by ``custom_id``."""
    run = _run(request, pk)
    form = BatchResultsForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, f"Results not read: {form.errors.as_text()}")
        return redirect("studies:run-detail", pk=pk)
    upload = form.cleaned_data["file"]
    lines = (raw.decode("utf-8", errors="replace") for raw in upload)
    try:
        found = read_answers(run, lines, fmt=form.cleaned_data["batch_format"] or None)
    except RunError as exc:
        messages.error(request, f"Results not read: {exc}")
    else:
        problems = found.missing or found.failed or found.unreadable
        (messages.warning if problems else messages.success)(request, found.summary())
    return redirect("studies:run-detail", pk=pk)
