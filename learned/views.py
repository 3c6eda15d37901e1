"""Pages of trained metrics: the list, the training form, a live job page (progress and
curve, polled with htmx), the report, cancel and resume."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from learned.forms import TrainForm, initial_from_query
from learned.models import TrainedMetric
from learned.services.data import TrainingError
from learned.services.jobs import can_resume, cancel_job, create_job, resume_job, visible_jobs
from learned.services.report import compare_on_test, curve_points
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


def _jobs(request: HttpRequest) -> QuerySet[TrainedMetric]:
    return visible_jobs(request.user)


@researcher_required
def job_list(request: HttpRequest) -> HttpResponse:
    return render(request, "learned/job_list.html", {"jobs": _jobs(request)[:200]})


@researcher_required
def job_new(request: HttpRequest) -> HttpResponse:
    """The training form; a valid one creates the job and opens its live page. A GET
    with parameters (``?dataset=<pk>``, or the htmx redraw when the dataset changes)
    fills the form from them."""
    if request.method == "POST":
        form = TrainForm(request.POST, user=request.user)
    else:
        form = TrainForm(user=request.user, initial=initial_from_query(request.GET))
    if request.method == "POST" and form.is_valid():
        try:
            job = create_job(form.training_request(), user=request.user)
        except TrainingError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            messages.success(request, f"Training job {job.pk} queued.")
            return redirect("learned:detail", pk=job.pk)
    template = (
        "learned/partials/train_form.html" if wants_partial(request) else "learned/job_new.html"
    )
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form}, status=status)


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk)
    context = {"job": job, "curve": curve_points(job.curves), "can_resume": can_resume(job)}
    partial = wants_partial(request)
    template = "learned/partials/job_progress.html" if partial else "learned/job_detail.html"
    return stop_polling_when(render(request, template, context), partial and job.is_finished)


@researcher_required
def report(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(_jobs(request), pk=pk, status=TrainedMetric.Status.SUCCEEDED)
    context = {
        "job": job,
        "curve": curve_points(job.curves),
        "others": compare_on_test(job),
        "test_docs": job.test_docs(),
    }
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
