"""The pages' access rules as DRF permissions; object scoping lives in the querysets."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions

from studies.permissions import is_researcher


class IsResearcher(permissions.BasePermission):
    """Researchers and admins (the pages' ``researcher_required``)."""

    message = "Only researchers can use this endpoint."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_researcher(request.user)


class ResearcherReadAdminWrite(permissions.BasePermission):
    """Researchers read; only admins write (aspects and prompt templates, as in the admin)."""

    message = "Only admins can change this."

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return is_researcher(request.user)
        return bool(request.user.is_authenticated and request.user.is_superuser)
