"""The researcher's served endpoints: theirs and the shared ones, listed; theirs added,
edited, probed (by an ``io`` worker: the page polls until the probe is done) and
deleted. Another researcher's endpoint answers 404, as one that does not exist; a shared
one is an admin's to change (403)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies.forms import EndpointForm
from studies.models import Endpoint, MetricRun
from studies.permissions import may_change_endpoint, visible_endpoints
from studies.services.catalog import endpoints
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


def _endpoint(request: HttpRequest, pk: int, *, change: bool = False) -> Endpoint:
    endpoint = get_object_or_404(visible_endpoints(request.user).select_related("owner"), pk=pk)
    if change and not may_change_endpoint(request.user, endpoint):
        raise PermissionDenied("Only an admin can change a shared endpoint.")
    return endpoint


@researcher_required
def endpoint_list(request: HttpRequest) -> HttpResponse:
    found = visible_endpoints(request.user).select_related("owner")
    return render(request, "studies/endpoint_list.html", {"endpoints": found})


@researcher_required
def endpoint_new(request: HttpRequest) -> HttpResponse:
    return _edit(request, Endpoint(owner=request.user), "studies/endpoint_form.html")


@researcher_required
def endpoint_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _edit(request, _endpoint(request, pk, change=True), "studies/endpoint_form.html")


def _edit(request: HttpRequest, endpoint: Endpoint, template: str) -> HttpResponse:
    form = EndpointForm(request.POST or None, instance=endpoint)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            saved = form.save()
            endpoints.request_probe(saved)  # probed on save, by an io worker
        messages.success(request, f"Saved {saved.name}; an io worker is probing it.")
        return redirect("studies:endpoint-detail", pk=saved.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form, "endpoint": endpoint}, status=status)


@researcher_required
def endpoint_detail(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint(request, pk)
    context = {
        "endpoint": endpoint,
        "may_change": may_change_endpoint(request.user, endpoint),
        "runs": MetricRun.objects.filter(config__endpoint__id=endpoint.pk)
        .select_related("dataset")
        .order_by("-created_at")[:50],
    }
    if wants_partial(request, "endpoint-probe"):
        response = render(request, "studies/partials/endpoint_probe.html", context)
        return stop_polling_when(response, endpoint.probe_requested_at is None)
    return render(request, "studies/endpoint_detail.html", context)


@require_POST
@researcher_required
def endpoint_probe(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint(request, pk, change=True)
    with transaction.atomic():
        endpoints.request_probe(endpoint)
    return redirect("studies:endpoint-detail", pk=endpoint.pk)


@researcher_required
def endpoint_delete(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint(request, pk, change=True)
    runs = MetricRun.objects.filter(config__endpoint__id=endpoint.pk).count()
    if request.method == "POST":
        name = endpoint.name
        endpoint.delete()
        messages.success(request, f"Deleted the endpoint {name}; its runs keep their scores.")
        return redirect("studies:endpoint-list")
    return render(request, "studies/endpoint_delete.html", {"endpoint": endpoint, "runs": runs})
