"""The annotator's pages: campaigns, guidelines, the item page and its answers.

Every view looks the campaign up among the user's own invitations and the item among
the user's own assignments, so anything else is a 404 whatever the link. The item and
what its form answers are never stored by the browser (``Cache-Control: no-store``):
Back shows the stored answers, not those of the page as it was; a form sent from an old
page that would change an answer is refused, naming both values (``answers.StaleAnswers``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Assignment, Campaign
from annotation.services import answers, assignment
from annotation.services.campaigns import annotator_campaigns
from annotation.services.items import item_context
from studies.views.helpers import wants_partial


def _campaign(request: HttpRequest, pk: int) -> Campaign:
    return get_object_or_404(annotator_campaigns(request.user).select_related("study"), pk=pk)


def _assignment(request: HttpRequest, campaign: Campaign, item: int) -> Assignment:
    found = get_object_or_404(
        Assignment.objects.select_related(*assignment.ITEM_RELATED),
        item__campaign=campaign,
        item_id=item,
        annotator=request.user,
    )
    found.item.campaign = campaign  # one instance: its aspects are read once
    return found


def _item_url(a: Assignment) -> str:
    return reverse("annotation:item", args=[a.item.campaign_id, a.item_id])


def _render_item(
    request: HttpRequest,
    a: Assignment | None,
    campaign: Campaign,
    status: int = 200,
    error: str = "",
    draft: dict[int, Any] | None = None,
    comment: str | None = None,
) -> HttpResponse:
    """The item (or the "nothing left" note when ``a`` is None), as a page or its partial."""
    context = item_context(a, draft, comment) if a else {"campaign": campaign}
    context.update(progress=assignment.progress(campaign, request.user), error=error)
    partial = wants_partial(request)
    template = "annotation/partials/annotate.html" if partial else "annotation/item.html"
    response = render(request, template, context, status=status)
    if partial and a is not None and status == 200:
        response["HX-Push-Url"] = _item_url(a)
    return response


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    rows = [
        (c, assignment.progress(c, request.user), assignment.recent(c, request.user))
        for c in annotator_campaigns(request.user)
        .select_related("study")
        .prefetch_related("aspects")
    ]
    return render(request, "annotation/home.html", {"rows": rows})


@require_GET
@login_required
def guidelines(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    aspects = [(a, a.current_version()) for a in campaign.aspects.order_by("code")]
    progress = assignment.progress(campaign, request.user)
    return render(
        request,
        "annotation/guidelines.html",
        {"campaign": campaign, "aspects": aspects, "progress": progress},
    )


@require_POST
@login_required
def next_item(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    claimed = assignment.claim_next(campaign, request.user)
    if claimed is None:
        messages.info(request, f"Nothing is left for you in {campaign.name}. Thank you!")
        return redirect("annotation:home")
    return redirect(_item_url(claimed))


@require_GET
@never_cache
@login_required
def item(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    return _render_item(request, _assignment(request, campaign, item), campaign)


@require_POST
@never_cache
@login_required
def submit(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    current = _assignment(request, campaign, item)
    try:
        given = answers.parse_answers(campaign, request.POST)
        comment = answers.parse_comment(request.POST.get("comment"))
        revision = request.POST.get("revision")  # the stored answers the page showed
        _, following = answers.submit_and_claim(
            current.pk, request.user, given, campaign, comment, revision
        )
    except answers.InvalidAnswer as exc:
        draft = {k: v for k, v in request.POST.items() if k.startswith("aspect-")}
        return _render_item(
            request,
            current,
            campaign,
            422,
            error=str(exc),
            draft={int(k[7:]): v for k, v in draft.items()},
            comment=request.POST.get("comment"),
        )
    except assignment.LeaseLost as exc:
        return _after(request, campaign, error=str(exc))  # go on with another item
    except assignment.AnnotationError as exc:
        return _render_item(request, current, campaign, exc.status, error=str(exc))
    return _show_next(request, campaign, following)


@require_POST
@never_cache
@login_required
def skip(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    current = _assignment(request, campaign, item)
    try:
        assignment.skip(current.pk, request.user, request.POST.get("reason", ""))
    except assignment.AnnotationError as exc:
        return _render_item(request, current, campaign, exc.status, error=str(exc))
    return _after(request, campaign)


def _after(request: HttpRequest, campaign: Campaign, error: str = "") -> HttpResponse:
    """The next item: swapped in for htmx, a redirect otherwise."""
    return _show_next(request, campaign, assignment.claim_next(campaign, request.user), error)


def _show_next(
    request: HttpRequest, campaign: Campaign, following: Assignment | None, error: str = ""
) -> HttpResponse:
    if not wants_partial(request):
        if error:
            messages.warning(request, error)
        return redirect(_item_url(following) if following else reverse("annotation:home"))
    return _render_item(request, following, campaign, error=error)
