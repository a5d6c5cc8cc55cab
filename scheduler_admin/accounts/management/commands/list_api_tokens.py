"""``manage.py list_api_tokens [USER]``: every API token (of USER), one line each: user, name,
key prefix, created, expires, last used. Keys are not stored, so they cannot be listed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from scheduler_admin.accounts.tokens import ApiToken


def _when(at: datetime | None, empty: str) -> str:
    return f"{at:%Y-%m-%d %H:%M}" if at else empty


class Command(BaseCommand):
    help = "List API tokens (name, key prefix, created, expiry, last use), of USER if given."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?")

    def handle(self, *args: Any, **options: Any) -> None:
        found = ApiToken.objects.select_related("user").order_by("user__username", "name")
        if options["username"]:
            found = found.filter(user__username=options["username"])
        now = timezone.now()
        self.stdout.write("user\tname\tprefix\tcreated\texpires\tlast used")
        for token in found:
            expires = _when(token.expires_at, "never")
            if token.expired(now):
                expires += " (expired)"
            self.stdout.write(
                "\t".join(
                    [
                        token.user.get_username(),
                        token.name,
                        f"{token.prefix}…",
                        _when(token.created_at, ""),
                        expires,
                        _when(token.last_used_at, "never"),
                    ]
                )
            )
