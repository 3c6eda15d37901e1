"""G-Eval's evaluation steps for a task × aspect: every version, an edit form (an edit is
a new version) and a button that asks a worker to generate them. A researcher's edits and
generations are their own (their runs use them); an admin's change the shared steps."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies.models import Aspect, TaskKind
from studies.permissions import owned_aspects
from studies.services.catalog import steps as steps_service
from studies.views.helpers import researcher_required


class StepsForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), label="Evaluation steps")


def _objects(request: HttpRequest, task: str, aspect: str) -> tuple[TaskKind, Aspect]:
    # the shared aspects and the user's own: codes are unique among them
    aspects = owned_aspects(request.user)
    return get_object_or_404(TaskKind, code=task), get_object_or_404(aspects, code=aspect)


@researcher_required
def steps_detail(request: HttpRequest, task: str, aspect: str) -> HttpResponse:
    """The steps of the aspect's current definition; POST saves an edit as a new version."""
    task_obj, aspect_obj = _objects(request, task, aspect)
    version = aspect_obj.current_version()
    shared = request.user.is_superuser
    current = steps_service.current_steps(task_obj, version, None if shared else request.user)
    form = StepsForm(request.POST or None, initial={"text": current.text if current else ""})
    if request.method == "POST" and form.is_valid():
        try:
            saved = steps_service.edit_steps(
                task_obj, version, form.cleaned_data["text"], user=request.user, shared=shared
            )
        except steps_service.StepsError as exc:
            form.add_error("text", str(exc))
        else:
            messages.success(request, f"Saved as version {saved.version}.")
            return redirect("studies:steps-detail", task=task, aspect=aspect)
    return _page(request, task_obj, aspect_obj, form, status=400 if form.errors else 200)


def _page(
    request: HttpRequest, task: TaskKind, aspect: Aspect, form: StepsForm, status: int
) -> HttpResponse:
    version = aspect.current_version()
    shared = request.user.is_superuser
    owner = None if shared else request.user
    config = steps_service.base_config(task, version)
    context = {
        "task": task,
        "aspect": aspect,
        "aspect_version": version,
        "current": steps_service.current_steps(task, version, owner),
        "form": form,
        "prompt": steps_service.geval.steps_prompt(config),
        "shared": shared,
        "versions": steps_service.steps_versions(task, version, owner).select_related("created_by"),
    }
    return render(request, "studies/steps_detail.html", context, status=status)


@require_POST
@researcher_required
def steps_generate(request: HttpRequest, task: str, aspect: str) -> HttpResponse:
    """Ask a worker to generate the steps with the default model (a new version if some
    exist); past the user's limits, the page again with why, 429 and ``Retry-After``."""
    task_obj, aspect_obj = _objects(request, task, aspect)
    version = aspect_obj.current_version()
    shared = request.user.is_superuser
    current = steps_service.current_steps(task_obj, version, None if shared else request.user)
    try:
        steps_service.request_generation(
            task_obj, version, force=current is not None, user=request.user, shared=shared
        )
    except steps_service.StepsRateLimited as exc:
        messages.error(request, str(exc))
        form = StepsForm(initial={"text": current.text if current else ""})
        response = _page(request, task_obj, aspect_obj, form, status=429)
        response["Retry-After"] = str(exc.retry_after)
        return response
    messages.info(request, "A worker is generating the steps; reload this page in a minute.")
    return redirect("studies:steps-detail", task=task, aspect=aspect)
