"""Disagreement review: a study's queue of the outputs a judge run and the humans (or the
humans among themselves) disagree on most, one at a time; the adjudicator picks the value
with the keyboard (static/js/annotate.js, as on the annotation page) and moves on."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from studies.services import adjudication
from studies.services import studies as study_service
from studies.views.helpers import researcher_required, wants_partial


@researcher_required
def study_adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    """``?aspect=<code>&run=<id>``: the queue's next output; ``POST`` (``output``,
    ``value``, ``aspect``, ``run``) stores its adjudicated value, then shows the next."""
    study = get_object_or_404(study_service.owned_studies(request.user), pk=pk)
    data = request.POST if request.method == "POST" else request.GET
    aspect, run = adjudication.choose(study, str(data.get("aspect", "")), str(data.get("run", "")))
    error, status = "", 200
    if request.method == "POST" and aspect is not None:
        output = str(request.POST.get("output", ""))
        try:
            adjudication.adjudicate(
                study,
                aspect,
                int(output) if output.isdigit() else 0,
                str(request.POST.get("value", "")),
                request.user,
                run,
            )
        except adjudication.AdjudicationError as exc:
            error, status = str(exc), 422
    context: dict[str, Any] = {
        "study": study,
        "dataset": study.dataset,
        "aspects": adjudication.study_aspects(study),
        "aspect": aspect,
        "runs": adjudication.judge_runs(study.dataset),
        "run": run,
        "error": error,
    }
    if aspect is not None:
        queue = adjudication.build_queue(study, aspect, run)
        item = queue.next()
        context.update(queue=queue, **(adjudication.item_view(queue, item) if item else {}))
    partial = wants_partial(request, "annotate")
    template = "studies/partials/adjudicate.html" if partial else "studies/adjudicate.html"
    return render(request, template, context, status=status)
