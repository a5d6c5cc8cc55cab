"""``manage.py unlock_signin (--user NAME | --address IP | --user NAME --address IP | --all)``:
forget failed sign-ins so signing in works again before the lockout period ends
(``SIGNIN_LOCKOUT_MINUTES``): a user name's from every address, an address's for every user
name, one user name's from one address, or everyone's. ``--list`` shows the locks in force.
Audited (``signin.unlocked``, actor ``system``) with the locks it lifted, which it also prints.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.accounts import signin


class Command(BaseCommand):
    help = (
        "Unlock sign-in for a user name (--user), an address (--address), both (that user "
        "name from that address) or --all; --list shows the locks in force."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", metavar="NAME")
        parser.add_argument("--address", metavar="IP")
        parser.add_argument("--all", action="store_true", help="forget every failed sign-in")
        parser.add_argument("--list", action="store_true", help="show the locks in force")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for lockout in signin.current_lockouts():
                self.stdout.write(
                    f"{lockout.kind}\t{lockout.username or '*'}\t{lockout.address}\t"
                    f"{lockout.failures} failures\tuntil {lockout.until:%Y-%m-%d %H:%M:%S} UTC"
                )
            return
        user, address = options["user"], options["address"]
        if options["all"] == bool(user or address):
            raise CommandError("pass --user NAME and/or --address IP, or --all")
        try:
            done = signin.unlock(username=user, address=address, actor=None)
        except ValueError as exc:
            raise CommandError(f"--address: {exc}") from None
        for lockout in done.lifted:
            self.stdout.write(f"lifted: {lockout.words}")
        removed = done.counters_removed
        self.stdout.write(
            f"unlocked ({len(done.lifted)} lock{'s' if len(done.lifted) != 1 else ''} lifted, "
            f"{removed} counter{'s' if removed != 1 else ''} removed)"
        )
