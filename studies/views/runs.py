"""Metric runs: start one from a dataset, follow its progress, cancel or resume it, tune
it (a worker's job, as ``POST /api/runs/<id>/tune/`` starts)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from scoring.lm.store import ModelNotInstalled
from studies.forms import BatchRequestsForm, BatchResultsForm, PairwiseReportForm, RunForm
from studies.models import MetricRun
from studies.permissions import (
    RENAME_REFUSED,
    may_rename_run,
    visible_datasets,
    visible_endpoints,
)
from studies.services.analysis import pairwise_judge
from studies.services.catalog import endpoints
from studies.services.runs import (
    RunError,
    can_resume,
    cancel_run,
    derive_variant,
    eta,
    label_of,
    outage,
    outcome,
    page_of,
    phase,
    resume_run,
    start_requested,
)
from studies.services.runs.geval_check import form_check, top_k_flags
from studies.services.runs.labels import RenameError, rename_run
from studies.services.runs.pairwise import pair_counts
from studies.services.tuning.evidence import tuning_evidence
from studies.services.tuning.job import start_tuning
from studies.services.tuning.routing import is_tuning_job
from studies.services.tuning.splits import SplitError
from studies.tuning_forms import TuneForm
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


def _runs(request: HttpRequest):  # type: ignore[no-untyped-def]
    return MetricRun.objects.filter(dataset__in=visible_datasets(request.user)).select_related(
        "dataset"
    )


@researcher_required
def run_new(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)
    # ?metric=…&model=… (a learned metric's "Score with this metric") fills the form in
    initial = {k: request.GET[k] for k in ("metric", "model") if request.GET.get(k)}
    form = RunForm(request.POST or None, dataset=dataset, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            started = start_requested(
                dataset, form.run_request(), form.cleaned_data["aspects"], user=request.user
            )
        except (RunError, ModelNotInstalled) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Started {len(started)} run(s).")
            return redirect("studies:run-detail", pk=started[0].pk)
    status = 400 if request.method == "POST" else 200
    text = endpoints.dataset_text(dataset)  # once: priced for each endpoint and metric
    pairs = pair_counts(dataset)  # the pairwise judge's pairs and requests, before it starts
    served = [  # what each endpoint would cost for GPTScore, G-Eval and all pairs
        (
            e,
            endpoints.estimate_cost(e, dataset, text=text),
            endpoints.estimate_cost(e, dataset, "geval", text=text),
            endpoints.estimate_cost(e, dataset, "pairwise", text=text, pairs=pairs["pairs"]),
        )
        for e in visible_endpoints(request.user)
    ]
    context = {"dataset": dataset, "form": form, "endpoints": served, "pairs": pairs}
    return render(request, "studies/run_new.html", context, status=status)


@researcher_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    seconds_left = eta(run)
    context = {
        "run": run,
        "can_resume": can_resume(run),
        "eta": seconds_left,
        "eta_minutes": None if seconds_left is None else max(1, round(seconds_left / 60)),
        "phase": phase(run),
        "outage": outage(run),
        "outcome": outcome(run),
        "about": page_of(run.metric),  # the run page's part on its metric, and its label
        "metric_label": label_of(run.metric),
        "may_rename": may_rename_run(request.user, run),
        # a served run's batch file (download requests, upload results): not while a
        # worker holds it or once it succeeded (the service refuses those)
        "batch": run.config.get("endpoint")
        and run.status not in (MetricRun.Status.RUNNING, MetricRun.Status.SUCCEEDED),
        "batch_forms": (BatchRequestsForm(), BatchResultsForm()),
    }
    if run.is_finished:
        context["scores"] = run.scores.select_related("output__document").order_by("-value")[:20]
        context["errors"] = run.scores.exclude(error="").count()
        context["form_check"] = form_check(run)
        context["top_k_flags"] = top_k_flags(run)
    if run.status == MetricRun.Status.SUCCEEDED and not wants_partial(request):
        context["tune_form"] = TuneForm(run=run)
    partial = wants_partial(request)
    template = "studies/partials/run_progress.html" if partial else "studies/run_detail.html"
    # nothing moves a run waiting for batch answers but its results file: no polling
    ended = run.is_finished or run.is_waiting
    return stop_polling_when(render(request, template, context), partial and ended)


@researcher_required
def run_pairwise(request: HttpRequest, pk: int) -> HttpResponse:
    """A pairwise judge run's systems, position bias and agreement with the humans: the
    page, or its report alone for htmx (the run page loads it)."""
    run = get_object_or_404(_runs(request).select_related("aspect_version"), pk=pk)
    form = PairwiseReportForm(request.GET or None, sources=pairwise_judge.agreement_sources(run))
    report = pairwise_judge.report(run, **form.options())
    context = {"run": run, "form": form, "report": report, "metric_label": label_of(run.metric)}
    if wants_partial(request, "pairwise-report"):
        return render(request, "studies/partials/pairwise_report.html", context)
    return render(request, "studies/run_pairwise.html", context)


@researcher_required
def run_tuning(request: HttpRequest, pk: int) -> HttpResponse:
    """A tuned run's evidence: the candidates and their dev figures, the chosen one, the
    Δ on the split's test documents with its interval, the gap and the cost; while its
    tuning job is under way (or once it failed), what was asked and its progress, polled
    (no page for a run no tuner made)."""
    run = get_object_or_404(_runs(request), pk=pk)
    evidence = tuning_evidence(run)
    if evidence is None and not is_tuning_job(run):
        raise Http404("This run was not made by a tuner.")
    if wants_partial(request, "tuning-pending"):  # a job's progress, polled until it ends
        response = render(request, "studies/partials/tuning_pending.html", {"run": run})
        if evidence is not None:  # it succeeded: the page shows its evidence
            response["HX-Refresh"] = "true"
        return stop_polling_when(response, run.is_finished and evidence is None)
    return render(request, "studies/run_tuning.html", {"run": run, "tuning": evidence})


@researcher_required
def run_tune(request: HttpRequest, pk: int) -> HttpResponse:
    """Tune this judge: the form (the run page shows it too), and on POST the same job
    the API starts (the tuned run, PENDING, on the workers), then its tuning page. A
    request the form or the service refuses shows the form again with why; nothing is
    saved."""
    run = get_object_or_404(_runs(request).select_related("aspect_version"), pk=pk)
    form = TuneForm(request.POST or None, run=run)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = start_tuning(
                run,
                data["aspect"],
                data["tuner"],
                study=data["study"],
                options=form.options(),
                seed=data["seed"],
                resamples=data["resamples"],
                by=request.user,
            )
        except ValueError as exc:  # the run not succeeded, the split, an option refused
            form.add_error("study" if isinstance(exc, SplitError) else None, str(exc))
        else:
            messages.success(request, f"Tuning started: {job.label} (run {job.pk}).")
            return redirect("studies:run-tuning", pk=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "studies/run_tune.html", {"run": run, "form": form}, status=status)


@require_POST
@researcher_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    if cancel_run(run):
        messages.info(request, "The run stops after its current document.")
    return redirect("studies:run-detail", pk=pk)


@require_POST
@researcher_required
def run_rename(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    if not may_rename_run(request.user, run):
        raise PermissionDenied(RENAME_REFUSED)
    try:
        rename_run(run, request.POST.get("label", ""))
        messages.success(request, f"Renamed to {run.label}.")
    except RenameError as exc:
        messages.error(request, f"Not renamed: {exc}")
    return redirect("studies:run-detail", pk=pk)


@require_POST
@researcher_required
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    if resume_run(run):
        messages.info(request, "The run was queued again; finished scores are kept.")
    else:
        messages.error(request, "This run cannot be resumed.")
    return redirect("studies:run-detail", pk=pk)


@require_POST
@researcher_required
def run_variant(request: HttpRequest, pk: int) -> HttpResponse:
    """The other weighting of a finished G-Eval run, from its stored distributions."""
    run = get_object_or_404(_runs(request), pk=pk)
    try:
        derived = derive_variant(run, request.POST.get("weighting", ""), user=request.user)
    except RunError as exc:
        messages.error(request, str(exc))
        return redirect("studies:run-detail", pk=pk)
    return redirect("studies:run-detail", pk=derived.pk)
