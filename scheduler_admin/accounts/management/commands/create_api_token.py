"""``manage.py create_api_token USER [--name NAME] [--expires-days N | --no-expiry]``: issue a
new API token for USER and print its key (once: only its digest is stored).

A token of USER with the same name is replaced (it stops working at once), so running the
command again rotates that token. Without ``--expires-days`` the token expires after
``API_TOKEN_EXPIRY_DAYS``; a cluster agent's token is usually made with ``--no-expiry`` or a
long expiry and rotated on purpose. Audited (``token.issued``, actor ``system``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from scheduler_admin.accounts import services, tokens


class Command(BaseCommand):
    help = (
        "Issue a new API token for USER and print it (once). A token of the same name is replaced."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--name", default=tokens.DEFAULT_NAME, help="the token's name (default: default)"
        )
        expiry = parser.add_mutually_exclusive_group()
        expiry.add_argument(
            "--expires-days",
            type=int,
            metavar="N",
            help="days until the token expires (default: API_TOKEN_EXPIRY_DAYS)",
        )
        expiry.add_argument("--no-expiry", action="store_true", help="the token never expires")
        parser.add_argument(
            "--rotate", action="store_true", help="accepted for compatibility: always rotates"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        days = options["expires_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-days must be at least 1 (or use --no-expiry)")
        try:
            key = services.issue_token(
                user,
                actor=None,
                name=options["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                no_expiry=options["no_expiry"],
            )
        except services.AccountError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(key)
