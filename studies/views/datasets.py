"""The researcher's pages. Each view serves its page and, for htmx requests, the
partial that the page includes (so the markup exists once)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from studies.forms import UploadForm
from studies.models import ImportJob, Judgment
from studies.permissions import may_change_dataset, visible_datasets
from studies.services import workers
from studies.services.imports import UploadNotStored, create_import_job, export_dataset
from studies.services.imports.records import FORMATS
from studies.services.runs.labels import distinct_labels, with_traits
from studies.services.studies import owned_studies
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


@researcher_required
def dataset_list(request: HttpRequest) -> HttpResponse:
    datasets = (
        visible_datasets(request.user)
        .select_related("task", "owner")
        .annotate(n_documents=Count("documents", distinct=True))
    )
    return render(request, "studies/dataset_list.html", {"datasets": datasets})


@researcher_required
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)
    judgments = (
        Judgment.objects.filter(output__document__dataset=dataset)
        .values("aspect__code", "aspect__name")
        .annotate(n=Count("id"), n_outputs=Count("output", distinct=True))
        .order_by("aspect__code")
    )
    runs = list(with_traits(dataset.runs.annotate(n_scores=Count("scores"))))
    names = distinct_labels(runs)  # runs sharing a label say what differs
    for run in runs:
        run.shown_label = names[run.pk]
    context = {
        "dataset": dataset,
        "n_documents": dataset.documents.count(),
        "n_outputs": dataset.documents.aggregate(n=Count("outputs"))["n"],
        "judgments": judgments,
        "runs": runs,
        "jobs": dataset.import_jobs.all()[:10],
        "formats": FORMATS,
        "studies": owned_studies(request.user).filter(dataset=dataset),
        "may_share": may_change_dataset(request.user, dataset),
    }
    return render(request, "studies/dataset_detail.html", context)


@require_GET
@researcher_required
def dataset_export(request: HttpRequest, pk: int, file_format: str) -> StreamingHttpResponse:
    dataset = get_object_or_404(visible_datasets(request.user), pk=pk)
    content_type = "text/csv" if file_format == "csv" else "application/x-ndjson"
    raw = request.GET.get("raw") == "1"  # CSV text cells as stored (no formula quote)
    response = StreamingHttpResponse(
        export_dataset(dataset, file_format, raw=raw), content_type=f"{content_type}; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{dataset.name}.{file_format}"'
    return response


@researcher_required
def upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(
        request.POST or None,
        request.FILES or None,
        user=request.user,
        initial={"dataset": request.GET.get("dataset", "")},
    )
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                job = create_import_job(
                    upload=form.cleaned_data["file"],
                    original_name=form.cleaned_data["file"].name,
                    file_format=form.file_format,
                    dataset_name=form.cleaned_data["dataset"],
                    task=form.cleaned_data["task"],
                    create_aspects=form.cleaned_data["create_aspects"],
                    user=request.user,
                    rescale=form.cleaned_data["rescale"],
                    widen_aspects=form.cleaned_data["widen_aspects"],
                )
        except UploadNotStored as exc:  # a full disk: what was written is gone
            form.add_error("file", str(exc))
            status = 507
        else:
            return redirect("studies:import-detail", pk=job.pk)
    return render(request, "studies/upload.html", {"form": form}, status=status)


@researcher_required
def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    jobs = ImportJob.objects.select_related("task", "dataset")
    if not request.user.is_superuser:
        jobs = jobs.filter(created_by=request.user)
    job = get_object_or_404(jobs, pk=pk)
    partial = wants_partial(request)
    template = "studies/partials/import_status.html" if partial else "studies/import_detail.html"
    waiting = job.status == ImportJob.Status.PENDING
    context = {"job": job, "unserved": waiting and not workers.anyone_serves("light")}
    return stop_polling_when(render(request, template, context), partial and job.is_finished)
