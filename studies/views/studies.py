"""The researcher's study pages: create a study on a dataset, its members, its overview
(campaigns, runs, correlations), and the researcher's home page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from studies.forms import AnnotatorAccountForm, MemberForm, StudyForm
from studies.models import MetricRun, Study
from studies.permissions import (
    is_researcher,
    may_manage_members,
    shareable_datasets,
    visible_datasets,
)
from studies.services import studies as service
from studies.views.helpers import researcher_required


def _study(request: HttpRequest, pk: int) -> Study:
    """One of the user's studies (owned, or researched in); anything else is a 404."""
    return get_object_or_404(service.owned_studies(request.user), pk=pk)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """A researcher's studies, datasets and recent runs; annotators go to their work."""
    if not is_researcher(request.user):
        return redirect("annotation:home")
    datasets = visible_datasets(request.user).select_related("task")
    context = {
        "studies": service.owned_studies(request.user).annotate(
            n_campaigns=Count("campaigns", distinct=True)
        )[:50],
        "datasets": datasets.annotate(n_documents=Count("documents", distinct=True)).order_by(
            "-created_at"
        )[:50],
        "runs": MetricRun.objects.filter(dataset__in=datasets)
        .select_related("dataset")
        .order_by("-created_at")[:10],
    }
    return render(request, "studies/home.html", context)


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    raw = request.POST.get("dataset") or request.GET.get("dataset") or ""
    chosen = (
        shareable_datasets(request.user).filter(pk=int(raw)).first()
        if raw.isdigit() and len(raw) < 18
        else None
    )
    form = StudyForm(
        request.POST or None,
        user=request.user,
        dataset=chosen,
        initial={"dataset": chosen.pk if chosen else None},
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = service.create_study(
                data["dataset"],
                data["name"],
                request.user,
                aspects=list(data["aspects"]),
                description=data["description"],
            )
        except service.StudyError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            messages.success(request, f"Study {study.name} created: invite its annotators.")
            return redirect("studies:study-members", pk=study.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "studies/study_new.html", {"form": form}, status=status)


@require_GET
@researcher_required
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(request, pk)
    return render(request, "studies/study_detail.html", {"o": service.overview(study)})


@researcher_required
def study_members(request: HttpRequest, pk: int) -> HttpResponse:
    """The members table; the dataset's owner (or an admin) invites an account
    (``action=invite``), creates an annotator account (``action=create``, with the
    permission) or removes a member (``action=remove``); collaborators only read it."""
    study = _study(request, pk)
    manages = may_manage_members(request.user, study)
    if request.method == "POST" and not manages:
        raise PermissionDenied(service.MANAGE_MEMBERS)
    action = request.POST.get("action", "invite") if request.method == "POST" else ""
    if action == "remove":
        return _remove_member(request, study)
    invite = MemberForm(request.POST if action == "invite" else None)
    create = AnnotatorAccountForm(request.POST if action == "create" else None)
    form = create if action == "create" else invite
    if action and form.is_valid():
        data = form.cleaned_data
        try:
            if action == "create":
                member = service.create_annotator(
                    study, data["new_username"], data["password"], request.user
                )
            else:
                member = service.add_member(study, data["username"], data["role"], by=request.user)
        except service.StudyError as exc:
            field = {"username": "new_username"}.get(exc.field, exc.field)
            field = field if action == "create" else exc.field
            form.add_error(field if field in form.fields else None, str(exc))
        else:
            role = member.get_role_display().lower()
            article = "an" if role[:1] in "aeiou" else "a"
            messages.success(
                request, f"{member.user.get_username()} is now {article} {role} of {study.name}."
            )
            return redirect("studies:study-members", pk=study.pk)
    context = {
        "study": study,
        "members": study.memberships.select_related("user").order_by("role", "user__username"),
        "invite": invite,
        "create": create,
        "manages": manages,
        "may_create": manages and service.may_create_annotators(request.user),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "studies/study_members.html", context, status=status)


def _remove_member(request: HttpRequest, study: Study) -> HttpResponse:
    raw = request.POST.get("user", "")
    if not raw.isdigit() or len(raw) > 18:
        raise Http404("No such member.")
    try:
        member = service.remove_member(study, int(raw), by=request.user)
    except service.StudyError as exc:
        raise Http404(str(exc)) from None
    messages.success(
        request,
        f"{member.user.get_username()} was removed from {study.name}: they no longer see "
        "its dataset or its campaigns.",
    )
    return redirect("studies:study-members", pk=study.pk)
