"""``manage.py cancel_timer ID``: stop a pending quota timer (audited)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.queues.management.commands._common import resolve_user


class Command(BaseCommand):
    help = "Cancel a pending quota preemption timer before it falls due."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("timer_id", type=int)
        parser.add_argument("--user", help="record this user as the actor")
        parser.add_argument("--comment", default="", help="why (kept in the audit event)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            timer = cancel_timer(
                options["timer_id"],
                actor=resolve_user(options["user"]),
                comment=options["comment"],
            )
        except TimerNotFound as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"cancelled the timer of {timer.queue_path}"))
