"""``manage.py ensure_admin``: make sure an admin account exists (used by the run command)."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from scheduler_admin.accounts.roles import ADMIN


class Command(BaseCommand):
    help = (
        "Create the admin account if it does not exist. The password comes from "
        "ADMIN_PASSWORD, or is generated and printed once. An existing account is left as it is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("ADMIN_USERNAME") or "admin")
        parser.add_argument("--email", default=os.environ.get("ADMIN_EMAIL") or "")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        username = options["username"]
        if user_model.objects.filter(username=username).exists():
            self.stdout.write(f"Admin account {username!r} exists; its password is unchanged.")
            return
        password = os.environ.get("ADMIN_PASSWORD") or ""
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        user = user_model.objects.create_superuser(username, options["email"], password)
        user.groups.add(Group.objects.get(name=ADMIN))
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin account {username!r} with password: {password}\n"
                    "This password is shown only once; change it after signing in."
                )
            )
        else:
            self.stdout.write(f"Created admin account {username!r} (password from ADMIN_PASSWORD).")
