"""``manage.py unlock_signin (--user NAME | --address IP | --all)``: forget the failed sign-ins
of a user name, an address or everyone, so they may sign in again before the lockout period
ends (``SIGNIN_LOCKOUT_MINUTES``). ``--list`` shows the lockouts in force. Audited
(``signin.unlocked``, actor ``system``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import signin


class Command(BaseCommand):
    help = "Unlock sign-in for a user name (--user), an address (--address) or --all; --list."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", metavar="NAME")
        parser.add_argument("--address", metavar="IP")
        parser.add_argument("--all", action="store_true", help="forget every failed sign-in")
        parser.add_argument("--list", action="store_true", help="show the lockouts in force")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for lockout in signin.current_lockouts():
                self.stdout.write(
                    f"{lockout.kind}\t{lockout.value}\t{lockout.failures} failures\t"
                    f"until {lockout.until:%Y-%m-%d %H:%M:%S} UTC"
                )
            return
        user, address = options["user"], options["address"]
        if options["all"] == bool(user or address):
            raise CommandError("pass --user NAME and/or --address IP, or --all")
        removed = signin.unlock(username=user, address=address, actor=None)
        self.stdout.write(f"unlocked ({removed} counter{'s' if removed != 1 else ''} removed)")
