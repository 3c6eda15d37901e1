"""The researcher's campaign pages: list, create, progress and agreement, gold items,
close/reopen, and the preference pairs export."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.forms import CampaignForm, GoldForm
from annotation.models import Campaign
from annotation.services import agreement, gold, report, routing
from annotation.services.answers import InvalidAnswer
from annotation.services.campaigns import (
    CampaignError,
    create_campaign,
    researcher_campaigns,
)
from annotation.services.preferences import preference_pairs
from studies.permissions import research_studies
from studies.views.helpers import researcher_required, stop_polling_when, wants_partial


def _campaign(request: HttpRequest, pk: int) -> Campaign:
    return get_object_or_404(researcher_campaigns(request.user), pk=pk)


@require_GET
@researcher_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = (
        researcher_campaigns(request.user).prefetch_related("aspects").order_by("-created_at")
    )
    return render(request, "annotation/campaign_list.html", {"campaigns": campaigns})


@researcher_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    """The form; opened for a study (``?study=``), it offers that study's aspects and
    invites its annotator members."""
    raw = request.GET.get("study", "")
    study = None
    if raw.isdigit() and len(raw) < 18:
        study = research_studies(request.user).filter(pk=int(raw)).first()
    form = CampaignForm(request.POST or None, user=request.user, study=study)
    if request.method == "POST" and form.is_valid():
        try:
            campaign = create_campaign(form.cleaned_data["study"], form.spec(), request.user)
        except CampaignError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Campaign created with {campaign.items.count()} items.")
            return redirect("annotation:campaign-detail", pk=campaign.pk)
    status = 400 if request.method == "POST" else 200
    context = {
        "form": form,
        "study": study,
        "studies": [] if study else research_studies(request.user).order_by("name")[:50],
    }
    return render(request, "annotation/campaign_new.html", context, status=status)


@require_GET
@researcher_required
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    result = agreement.available_agreement(campaign, request.user)
    if wants_partial(request, "agreement"):
        response = render(
            request,
            "annotation/partials/agreement.html",
            {"campaign": campaign, "agreement": result},
        )
        current = result is not None and not result.get("stale")
        return stop_polling_when(response, current and bool(request.GET.get("poll")))
    return render(request, "annotation/campaign_detail.html", _detail(campaign, result))


def _detail(campaign: Campaign, result: object, form: GoldForm | None = None) -> dict[str, object]:
    return {
        "campaign": campaign,
        "agreement": result,
        "annotators": report.annotator_rows(campaign),
        "items": report.item_summary(campaign),
        "aspects": report.aspect_rows(campaign),
        "skipped": report.skipped_items(campaign),
        "comments": report.commented_items(campaign),
        "gold_form": form or GoldForm(campaign=campaign),
        "gold_items": campaign.items.filter(gold_answer__isnull=False).select_related("document"),
        "item_list": campaign.items.select_related("document")[:200],
        "routing": routing.page_context(campaign),
        "outdated": report.outdated_answers(campaign),
    }


@require_POST
@researcher_required
def campaign_gold(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    form = GoldForm(request.POST, campaign=campaign)
    if form.is_valid():
        try:
            gold.set_gold(
                form.cleaned_data["item"], form.expected(), form.cleaned_data["tolerance"] or 0.0
            )
        except InvalidAnswer as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Item {form.cleaned_data['item'].pk} is now a gold item.")
            return redirect("annotation:campaign-detail", pk=campaign.pk)
    context = _detail(campaign, agreement.available_agreement(campaign), form)
    return render(request, "annotation/campaign_detail.html", context, status=400)


@require_POST
@researcher_required
def campaign_status(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    wanted = request.POST.get("status", "")
    if wanted not in Campaign.Status.values:
        return HttpResponse("status must be open or closed", status=400)
    Campaign.objects.filter(pk=campaign.pk).update(status=wanted)
    messages.success(request, f"Campaign {campaign.name} is now {wanted}.")
    return redirect("annotation:campaign-detail", pk=campaign.pk)


@require_GET
@researcher_required
def campaign_preferences(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    campaign = _campaign(request, pk)
    flagged = (
        gold.flagged_annotator_ids(campaign) if request.GET.get("flagged") == "exclude" else ()
    )
    pairs = preference_pairs(campaign, exclude_annotators=flagged, comments=True)
    lines = (json.dumps(asdict(p)) + "\n" for p in pairs)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="campaign-{campaign.pk}-preferences.jsonl"'
    )
    return response
