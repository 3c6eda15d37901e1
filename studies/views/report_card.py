"""The judge report card of a dataset or a study (its dataset, on the study's aspects),
and its exports. The card comes from the cache, the request (a small dataset) or the
light worker, while the page polls (studies.services.analysis.report_card)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render

from studies.models import Dataset, Study
from studies.permissions import visible_datasets
from studies.services import adjudication
from studies.services import studies as study_service
from studies.services.analysis import report_card
from studies.services.analysis.report_card import CardParams
from studies.services.analysis.report_card.pieces.registry import shown
from studies.services.analysis.report_card.reference import REFERENCES, with_reference
from studies.views.dashboards import COEFFICIENTS, LEVELS
from studies.views.helpers import (
    not_computed,
    researcher_required,
    stop_polling_when,
    wants_partial,
)

CONFIDENCES = (("0.9", "90%"), ("0.95", "95%"), ("0.99", "99%"))
EXPORTS = {
    "csv": "text/csv",
    "json": "application/json",
    "tex": "application/x-tex",
}


def _page(
    request: HttpRequest, dataset: Dataset, params: CardParams, study: Study | None
) -> HttpResponse:
    problem = params.problem
    if request.method == "POST" and not problem:  # "Try again" after a failure
        report_card.try_again(dataset, params)
        return redirect(request.get_full_path())
    card = None if problem else report_card.available_card(dataset, params, request.user)
    failed = None if card or problem else report_card.failed(dataset, params)
    sort = request.GET.get("sort", "")
    poll = request.GET.copy()
    poll["poll"] = "1"
    context: dict[str, Any] = {
        "dataset": dataset,
        "study": study,
        "params": params,
        "card": card,
        "rows": report_card.sorted_rows(card, sort) if card else [],
        "columns": report_card.COLUMNS,
        "pieces": shown(),
        "sort": sort,
        "problem": problem.message if problem else "",
        "failed": failed,
        "progress": None if card or problem else report_card.progress(dataset, params),
        "levels": LEVELS,
        "coefficients": COEFFICIENTS,
        "confidences": CONFIDENCES,
        "poll_query": poll.urlencode(),
        "adjudicated": adjudication.adjudicated_counts(dataset, study),
        "references": REFERENCES,
    }
    partial = wants_partial(request, "report-card")
    template = "studies/partials/report_card.html" if partial else "studies/report_card.html"
    response = render(request, template, context)
    finished = partial and (card is not None or bool(problem or failed)) and "poll" in request.GET
    return stop_polling_when(response, finished)


def _named_study(request: HttpRequest, dataset: Dataset, name: str) -> Study | None:
    named = request.GET.get(name, "")
    found = named.isdigit() and len(named) <= 18  # an id the database can hold
    return Study.objects.filter(pk=int(named), dataset=dataset).first() if found else None


def _on_split(request: HttpRequest, dataset: Dataset) -> CardParams:
    """The query's parameters, the thresholds on the split of the study ``?split=``
    names (a study card's links), else of the dataset's one study with a split; with
    ``?reference=adjudicated``, the adjudications of the study ``?reference_study=``
    names (a study card's links), else of every study of the dataset."""
    params = CardParams.from_query(request.GET)
    params = params.on_split(
        *report_card.split_params(dataset, _named_study(request, dataset, "split"))
    )
    return with_reference(params, dataset, _named_study(request, dataset, "reference_study"))


@researcher_required
def dataset_report_card(request: HttpRequest, pk: int) -> HttpResponse:
    """``?level=…&coef=…&eps=0.2&ci=0.95&aspects=COH,FLU&runs=all&reference=adjudicated&sort=…``
    (``POST``: *Try again* after a failed computation)."""
    dataset = get_object_or_404(visible_datasets(request.user).select_related("task"), pk=pk)
    return _page(request, dataset, _on_split(request, dataset), None)


@researcher_required
def study_report_card(request: HttpRequest, pk: int) -> HttpResponse:
    """The study's dataset's card on the study's aspects (all judged ones if it has none)."""
    study = get_object_or_404(study_service.owned_studies(request.user), pk=pk)
    params = CardParams.from_query(request.GET)
    params = params.on_split(*report_card.split_params(study.dataset, study))
    params = with_reference(params, study.dataset, study)
    codes = tuple(study.aspects.values_list("code", flat=True))
    return _page(request, study.dataset, params.only(codes) if codes else params, study)


@researcher_required
def report_card_export(request: HttpRequest, pk: int, file_format: str) -> HttpResponse:
    """The card as CSV (``?raw=1``: text cells as stored), JSON or LaTeX, sorted as on
    the page; 503 while a worker computes it, 500 with why when computing it failed."""
    dataset = get_object_or_404(visible_datasets(request.user), pk=pk)
    params = _on_split(request, dataset)
    if params.problem:
        return HttpResponseBadRequest(params.problem.message)
    card = report_card.available_card(dataset, params, request.user)
    if card is None:
        return not_computed("report card", report_card.failed(dataset, params))
    sort = request.GET.get("sort")
    if file_format == "csv":
        body = report_card.to_csv(card, sort, raw=request.GET.get("raw") == "1")
    elif file_format == "tex":
        body = report_card.to_latex(card, sort)
    else:
        body = report_card.to_json(card, sort)
    response = HttpResponse(body, content_type=f"{EXPORTS[file_format]}; charset=utf-8")
    filename = f"{dataset.name}-report-card-{params.level}-{params.coefficient}.{file_format}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


__all__ = ["dataset_report_card", "report_card_export", "study_report_card"]
