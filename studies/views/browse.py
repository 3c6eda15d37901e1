"""Browsing the data: a dataset's outputs (searched, filtered, sorted, paged; the table
is one htmx partial) and one output with its source, scores and judgments."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from studies.models import Document, Output
from studies.permissions import visible_datasets
from studies.services import browse
from studies.views.helpers import researcher_required, wants_partial


@researcher_required
def dataset_outputs(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)
    offered = browse.choices(dataset)
    partial = wants_partial(request, "outputs")
    context = {
        "dataset": dataset,
        "offered": offered,
        "problem": "",
        "b": None,
        "query": browse.BrowseQuery(),
    }
    status = 200
    try:
        query = browse.parse_query(request.GET, offered)
    except browse.BadQuery as exc:
        # the partial answers 200 so that htmx swaps the message in
        context["problem"], status = str(exc), 200 if partial else 400
    else:
        context |= {"query": query, "b": browse.browse(dataset, query, offered)}
    template = "studies/partials/outputs.html" if partial else "studies/dataset_outputs.html"
    return render(request, template, context, status=status)


@researcher_required
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A document's source and references with all its outputs side by side."""
    document = get_object_or_404(
        Document.objects.filter(dataset__in=visible_datasets(request.user)).select_related(
            "dataset"
        ),
        pk=pk,
    )
    offered = browse.choices(document.dataset)
    context = {
        "dataset": document.dataset,
        "document": document,
        "offered": offered,
        "rows": browse.document_rows(document, offered),
        **browse.document_context(document),
    }
    return render(request, "studies/document_detail.html", context)


@researcher_required
def output_detail(request: HttpRequest, pk: int) -> HttpResponse:
    output = get_object_or_404(
        Output.objects.filter(document__dataset__in=visible_datasets(request.user)).select_related(
            "document__dataset"
        ),
        pk=pk,
    )
    context = {"dataset": output.document.dataset, **browse.output_details(output)}
    return render(request, "studies/output_detail.html", context)


__all__ = ["dataset_outputs", "document_detail", "output_detail"]
