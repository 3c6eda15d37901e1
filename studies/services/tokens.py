"""API tokens: one per user, shown on the user's page and by ``manage.py api_token``."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from rest_framework.authtoken.models import Token


def token_for(user: Any) -> Token:
    """The user's token, created on first use."""
    token, _ = Token.objects.get_or_create(user=user)
    return token


def regenerate_token(user: Any) -> Token:
    """Replace the user's token (the old one stops working at once)."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)
