"""The jobs page: what each worker is doing and what waits for it, polled while open."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from studies.services.jobs import lanes_for, waiting_runs
from studies.views.helpers import researcher_required, wants_partial


@researcher_required
def jobs(request: HttpRequest) -> HttpResponse:
    context = {"lanes": lanes_for(request.user), "waiting": waiting_runs(request.user)}
    if wants_partial(request, "jobs"):
        return render(request, "studies/partials/jobs.html", context)
    return render(request, "studies/jobs.html", context)
