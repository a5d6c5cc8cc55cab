"""``manage.py ensure_admin``: make sure an admin account exists (used by the run command).

The account is made by ``accounts.services.create_user``, as every account is: audited
``user.created``, the password checked by the configured validators, the name compared
regardless of letter case (an existing ``Admin`` counts as ``admin``)."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import services
from scheduler_admin.accounts.roles import ADMIN


class Command(BaseCommand):
    help = (
        "Create the admin account if it does not exist. The password comes from "
        "ADMIN_PASSWORD, or is generated and printed once. An existing account is left as it is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("ADMIN_USERNAME") or "admin")
        parser.add_argument("--email", default=os.environ.get("ADMIN_EMAIL") or "")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        existing = services.existing_user(username)
        if existing is not None:
            self.stdout.write(
                f"Admin account {existing.get_username()!r} exists; its password is unchanged."
            )
            return
        password = os.environ.get("ADMIN_PASSWORD") or ""
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        try:
            services.create_user(
                username, role=ADMIN, actor=None, email=options["email"], password=password
            )
        except services.AccountError as exc:
            source = {"password": "ADMIN_PASSWORD", "email": "--email"}.get(exc.field, "--username")
            raise CommandError(f"{source}: {exc}") from None
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin account {username!r} with password: {password}\n"
                    "This password is shown only once; change it after signing in."
                )
            )
        else:
            self.stdout.write(f"Created admin account {username!r} (password from ADMIN_PASSWORD).")
