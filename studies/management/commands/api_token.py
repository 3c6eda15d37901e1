"""``python manage.py api_token USERNAME [--regenerate]``: print the user's API token
(created on first use)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studies.services.tokens import regenerate_token, token_for


class Command(BaseCommand):
    help = "Create (once) and print a user's API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--regenerate", action="store_true", help="replace the token")

    def handle(self, *args: Any, **opts: Any) -> None:
        user = get_user_model().objects.filter(username=opts["username"]).first()
        if user is None:
            raise CommandError(f"no user named {opts['username']!r}")
        token = regenerate_token(user) if opts["regenerate"] else token_for(user)
        self.stdout.write(token.key)
