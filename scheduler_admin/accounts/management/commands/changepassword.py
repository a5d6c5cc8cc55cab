"""``manage.py changepassword [NAME] [--password-env VAR]``: set a user's password at the server.

Replaces Django's own ``changepassword`` (this app is listed before ``django.contrib.auth``, so
its command wins), which wrote the password with no audit event and no check but the
validators. This one goes through ``services.set_password_at_the_server``: validated, audited
``user.password_changed`` (actor ``system``), the user's sessions ended, a single sign-on
account refused. The password is asked twice at the terminal, as Django asks it, or read from
the environment variable named by ``--password-env`` (for scripts: never on the command line).
Exits non-zero naming the problem; nothing changes then.
"""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import services


class Command(BaseCommand):
    help = (
        "Set a user's password (audited). Asked twice at the terminal, or read from the "
        "variable named by --password-env."
    )
    requires_migrations_checks = True

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "username", nargs="?", help="the account (default: the user running the command)"
        )
        parser.add_argument("--password-env", metavar="VAR")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"] or getpass.getuser()
        user = services.existing_user(username)
        if user is None:
            raise CommandError(f"NAME: no user named {username!r}.")
        password = self._password(options["password_env"], user.username)
        try:
            services.set_password_at_the_server(user, password)
        except services.AccountError as exc:
            raise CommandError(f"password: {exc}") from None
        self.stdout.write(f"Password of {user.username} changed (audited).")

    def _password(self, variable: str | None, username: str) -> str:
        if variable:
            value = os.environ.get(variable, "")
            if not value:
                raise CommandError(f"--password-env: the variable {variable} is not set or empty.")
            return value
        first = getpass.getpass(f"New password for {username}: ")
        second = getpass.getpass("New password (again): ")
        if first != second:
            raise CommandError("password: the two passwords differ; nothing was changed.")
        return first
