"""``manage.py create_user NAME [--role viewer|operator|admin] [--grant PARTITION:QUEUE:ROLE]...``:
add a console user (audited).

- ``--role`` gives a global role; ``--grant`` (repeatable) gives a queue grant, the operator or
  admin role on that queue and below (``default:root.team-a:admin``). A user with grants only
  (no ``--role``) is a tenant account: it sees and changes only its subtrees. At least one of
  the two is needed. A grant that cannot be given (no such partition or queue) creates nothing.

- The password comes from the environment variable named by ``--password-env VAR`` (so it never
  shows in the process list or the shell history); without it one is generated and printed
  once. It must pass the configured password validators.
- ``--email`` is optional.
- A name that exists already (in any letter case) is refused with a non-zero exit, so a typo
  never silently changes someone's account; so is one created by someone else at the same
  moment (the database's unique index decides). ``--update-role`` changes the existing user's
  role instead (their password and email stay as they are; grants are given on the Users page
  or ``POST /api/v1/grants/``); without an existing user it creates one as usual. The last
  active admin cannot be demoted this way either.
- A role other than viewer, operator or admin is refused by the argument parser, naming
  ``--role`` (exit status 2 from the shell, ``CommandError`` from ``call_command``); a
  malformed ``--grant`` names itself.

The audit events name the actor ``system``: the command runs with no signed-in user.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import services
from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.roles import ROLES

#: The argument to blame for a refused field, so the message names what to fix.
OPTIONS = {
    "username": "NAME",
    "role": "--role",
    "email": "--email",
    "password": "--password-env",
    "grants": "--grant",
}


class Command(BaseCommand):
    help = (
        "Create a console user holding a role and/or queue grants. The password comes from the "
        "variable named by --password-env, or is generated and printed once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, help="a global role")
        parser.add_argument(
            "--grant",
            action="append",
            default=[],
            metavar="PARTITION:QUEUE:ROLE",
            help="a queue grant, e.g. default:root.team-a:admin (repeatable); with no --role "
            "the user sees and changes only these subtrees",
        )
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-env",
            metavar="VAR",
            help="read the password from this environment variable",
        )
        parser.add_argument(
            "--update-role",
            action="store_true",
            help="if the user exists, change their role instead of failing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        role: str | None = options["role"]
        try:
            grants = [GrantSpec.parse(text) for text in options["grant"]]
        except ValueError as exc:
            raise CommandError(f"--grant: {exc}.") from None
        if role is None and not grants:
            raise CommandError(
                "--role or --grant: a user needs a global role or at least one queue grant."
            )
        existing = services.existing_user(username)
        try:
            if existing is not None:
                if grants:
                    raise CommandError(
                        f"--grant: a user named {existing.get_username()!r} already exists; "
                        "give grants to an existing user on the Users page or with "
                        "POST /api/v1/grants/ (nothing was changed)."
                    )
                self._update_role(existing, role, update=options["update_role"])
                return
            created = services.create_user(
                username,
                role=role,
                actor=None,
                email=options["email"],
                password=self._password(options["password_env"]),
                grants=grants,
            )
        except services.AccountError as exc:
            option = OPTIONS.get(exc.field)
            raise CommandError(f"{option}: {exc}" if option else str(exc)) from None
        name = created.user.get_username()
        holds = f"the {role} role" if role is not None else "no global role"
        if grants:
            holds += " and the queue grants " + ", ".join(spec.words for spec in grants)
        if created.generated_password is None:
            self.stdout.write(f"Created user {name!r} with {holds}.")
            return
        self.stdout.write(
            self.style.WARNING(
                f"Created user {name!r} with {holds} and password: "
                f"{created.generated_password}\n"
                "This password is shown only once; change it after signing in."
            )
        )

    def _update_role(self, user: Any, role: str | None, *, update: bool) -> None:
        name = user.get_username()
        if not update:
            raise CommandError(
                f"A user named {name!r} already exists; nothing was changed "
                "(pass --update-role to change its role)."
            )
        if role is None:
            raise CommandError("--update-role needs --role.")
        if services.change_role(user, role, actor=None):
            self.stdout.write(f"User {name!r} now has the {role} role (password unchanged).")
        else:
            self.stdout.write(f"User {name!r} already has the {role} role; nothing changed.")

    @staticmethod
    def _password(variable: str | None) -> str | None:
        """The password from ``variable`` (None when no variable is named: generate one)."""
        if variable is None:
            return None
        value = os.environ.get(variable, "")
        if not value:
            raise CommandError(f"--password-env: the variable {variable} is not set or empty.")
        return value
