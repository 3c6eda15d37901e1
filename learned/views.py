"""Pages of trained metrics: the list, a live job page (progress and curve, polled with
htmx), the report, cancel and resume."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from learned.models import TrainedMetric
from learned.services.jobs import can_resume, cancel_job, resume_job
from learned.services.report import compare_on_test, curve_points
from studies.permissions import visible_datasets
from studies.views.datasets import HTMX_STOP_POLLING, researcher_required


def _jobs(request: HttpRequest) -> QuerySet[TrainedMetric]:
    return TrainedMetric.objects.filter(dataset__in=visible_datasets(request.user)).select_related(
        "dataset", "aspect"
    )


@researcher_required
def job_list(request: HttpRequest) -> HttpResponse:
    return render(request, "learned/job_list.html", {"jobs": _jobs(request)[:200]})


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk)
    context = {"job": job, "curve": curve_points(job.curves), "can_resume": can_resume(job)}
    template = "learned/partials/job_progress.html" if request.htmx else "learned/job_detail.html"
    response = render(request, template, context)
    if request.htmx and job.is_finished:
        response.status_code = HTMX_STOP_POLLING
    patch_vary_headers(response, ["HX-Request"])
    return response


@researcher_required
def report(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk, status=TrainedMetric.Status.SUCCEEDED)
    context = {"job": job, "curve": curve_points(job.curves), "others": compare_on_test(job),
               "test_docs": job.test_docs()}  # fmt: skip
    return render(request, "learned/report.html", context)


@require_POST
@researcher_required
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk)
    if cancel_job(job):
        messages.info(request, "The job stops after its current epoch; its checkpoint is kept.")
    return redirect("learned:detail", pk=pk)


@require_POST
@researcher_required
def job_resume(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk)
    if resume_job(job):
        messages.info(request, "The job was queued again; it goes on from its last checkpoint.")
    else:
        messages.error(request, "This job cannot be resumed.")
    return redirect("learned:detail", pk=pk)
