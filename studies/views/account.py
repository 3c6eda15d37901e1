"""The logged-in user's API token: shown, and regenerated on request."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from studies.services.tokens import regenerate_token, token_for


@never_cache  # the page shows a secret: no browser or proxy may keep a copy
@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """GET shows the token (created on first visit); POST replaces it."""
    if request.method == "POST":
        regenerate_token(request.user)
        messages.success(request, "A new token was made; the old one no longer works.")
        return redirect("studies:api-token")
    return render(request, "studies/api_token.html", {"token": token_for(request.user)})
