"""``manage.py createsuperuser`` is refused: accounts are made through the product.

Django's own command made a superuser with no role group, no audit event and none of the
product's rules (names unique regardless of letter case, the role groups every permission
reads). This app is listed before ``django.contrib.auth``, so this command replaces it and
says what to use instead; it exits non-zero and creates nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Refused: use `manage.py create_user NAME --role admin` (audited) or `ensure_admin`."

    def add_arguments(self, parser: CommandParser) -> None:
        # Django's options are accepted so that a script calling it gets this message, not a
        # usage error.
        parser.add_argument("--username")
        parser.add_argument("--email")
        parser.add_argument("--noinput", "--no-input", action="store_true")
        parser.add_argument("--database")

    def handle(self, *args: Any, **options: Any) -> None:
        raise CommandError(
            "createsuperuser is not used here: accounts are made through the product so that "
            "they get a role and an audit event. Use `manage.py create_user NAME --role admin` "
            "(the password from --password-env VAR or printed once) or `manage.py ensure_admin`."
        )
