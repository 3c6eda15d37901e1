"""Metric runs: start one from a dataset, follow its progress, cancel or resume it."""

from __future__ import annotations

from dataclasses import replace

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from scoring.lm.store import ModelNotInstalled
from studies.models import Aspect, MetricRun
from studies.permissions import visible_datasets
from studies.services.runs import (
    RunError,
    RunRequest,
    can_resume,
    cancel_run,
    derive_variant,
    resume_run,
    start_run,
    start_runs,
)
from studies.views.datasets import HTMX_STOP_POLLING, researcher_required


class RunForm(forms.Form):
    metric = forms.ChoiceField(
        choices=[("gptscore", "GPTScore"), ("geval", "G-Eval"),
                 ("rouge", "ROUGE-1/2/L (three runs)"), ("bleu", "BLEU"), ("chrf", "chrF"),
                 ("bertscore", "BERTScore-style similarity"),
                 ("learned", "Learned metric (model: its id)")],
        initial="gptscore",
        required=False,
    )  # fmt: skip
    aspects = forms.ModelMultipleChoiceField(
        queryset=Aspect.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="GPTScore and G-Eval: one run per aspect",
    )
    setting = forms.ChoiceField(choices=[("IST", "IST: instruction"), ("VAL", "VAL: no instruction"),
                                         ("IDM", "IDM: instruction + demonstrations")],
                                help_text="GPTScore only")  # fmt: skip
    dimension = forms.ChoiceField(choices=[("src_hypo", "src→hypo"), ("ref_hypo", "ref→hypo"),
                                           ("hypo_ref", "hypo→ref"), ("avg_f", "avg of ref→hypo and hypo→ref")],
                                  help_text="GPTScore only")  # fmt: skip
    model = forms.CharField(
        initial="default",
        help_text="'default' (SmolLM2-135M-Instruct; all-MiniLM-L6-v2 for BERTScore), "
        "a local path or a hub id; for a learned metric, the trained metric's id",
    )
    k = forms.IntegerField(
        min_value=0, max_value=8, initial=2, help_text="demonstrations (IDM only)"
    )
    steps = forms.ChoiceField(choices=[("auto", "auto chain-of-thought (generated once, editable)"),
                                       ("none", "no evaluation steps")], help_text="G-Eval only",
                              required=False)  # fmt: skip
    weighting = forms.ChoiceField(choices=[("prob", "Σ p(s)·s"), ("argmax", "most probable label")],
                                  help_text="G-Eval only", required=False)  # fmt: skip
    references = forms.ChoiceField(
        choices=[("", "the metric's convention"), ("mean", "mean"), ("max", "max")],
        required=False,
        help_text="several references: mean for ROUGE, max for GPTScore and BERTScore by default",
    )
    limit_docs = forms.IntegerField(
        min_value=1, required=False, help_text="only the first N documents"
    )

    def __init__(self, *args, task=None, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["aspects"].queryset = (
            Aspect.objects.filter(tasks=task) if task else Aspect.objects.all()
        )

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        for name, default in (("metric", "gptscore"), ("steps", "auto"), ("weighting", "prob")):
            data[name] = data.get(name) or default
        if data.get("metric") in ("gptscore", "geval") and not data.get("aspects"):
            self.add_error("aspects", "Choose at least one aspect for GPTScore or G-Eval.")
        return data


def _runs(request: HttpRequest):  # type: ignore[no-untyped-def]
    return MetricRun.objects.filter(dataset__in=visible_datasets(request.user)).select_related(
        "dataset"
    )


@researcher_required
def run_new(request: HttpRequest, name: str) -> HttpResponse:
    dataset = get_object_or_404(visible_datasets(request.user).select_related("task"), name=name)
    form = RunForm(request.POST or None, task=dataset.task)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        base = RunRequest(
            metric=data["metric"], setting=data["setting"], dimension=data["dimension"],
            model=data["model"], k=data["k"] or 0, limit_docs=data["limit_docs"],
            steps=data["steps"], weighting=data["weighting"],
            reference_aggregation=data["references"] or "",
        )  # fmt: skip
        started = []
        try:
            if data["metric"] in ("gptscore", "geval"):
                for aspect in data["aspects"]:
                    started.append(start_run(dataset, replace(base, aspect=aspect.code),
                                             user=request.user))  # fmt: skip
            else:
                started.extend(start_runs(dataset, base, user=request.user))
        except (RunError, ModelNotInstalled) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Started {len(started)} run(s).")
            return redirect("studies:run-detail", pk=started[0].pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request, "studies/run_new.html", {"dataset": dataset, "form": form}, status=status
    )


@researcher_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    context = {"run": run, "can_resume": can_resume(run), "eta": _eta(run)}
    if run.is_finished:
        context["scores"] = run.scores.select_related("output__document").order_by("-value")[:20]
        context["errors"] = run.scores.exclude(error="").count()
    template = "studies/partials/run_progress.html" if request.htmx else "studies/run_detail.html"
    response = render(request, template, context)
    if request.htmx and run.is_finished:
        response.status_code = HTMX_STOP_POLLING
    patch_vary_headers(response, ["HX-Request"])
    return response


def _eta(run: MetricRun) -> float | None:
    rate = (run.timings or {}).get("outputs_per_s")
    if run.status != MetricRun.Status.RUNNING or not rate:
        return None
    return max(run.total - run.done, 0) / rate


@require_POST
@researcher_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(_runs(request), pk=pk)
    if cancel_run(run):
        messages.info(request, "The run stops after its current document.")
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
