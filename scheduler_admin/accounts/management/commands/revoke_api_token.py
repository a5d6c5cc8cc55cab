"""``manage.py revoke_api_token USER (NAME | --all)``: delete USER's token NAME, or all of
their tokens; requests with them get 401 at once. Audited (``token.revoked``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import services
from scheduler_admin.accounts.tokens import ApiToken


class Command(BaseCommand):
    help = "Revoke USER's API token NAME (or --all of them)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("name", nargs="?")
        parser.add_argument("--all", action="store_true", help="revoke every token of USER")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        if options["all"] == bool(options["name"]):
            raise CommandError("name one token, or pass --all")
        token_id = None
        if options["name"]:
            token = ApiToken.objects.filter(user=user, name=options["name"]).first()
            if token is None:
                raise CommandError(f"{user.get_username()} has no token named {options['name']!r}")
            token_id = token.pk
        if services.revoke_token(user, actor=None, token_id=token_id):
            self.stdout.write("revoked")
        else:
            self.stdout.write(f"{user.get_username()} had no API token")
