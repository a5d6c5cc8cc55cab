"""``manage.py readyz [--check NAME ...]``: ``/readyz`` from a shell or a container health check.

Prints the same JSON as ``/readyz`` and exits 0 when ready, 1 when not. ``--check beat`` runs
that check alone: the compose health check of beat uses it (beat's own heartbeat).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.observability import health


class Command(BaseCommand):
    help = "Check readiness as /readyz does; exit 1 when something is wrong."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="append",
            choices=health.CHECKS,
            help="run only this check (repeatable); default: all",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        only = tuple(options["check"] or health.CHECKS)
        report = health.readiness(only)
        self.stdout.write(json.dumps(report.as_json(), indent=2))
        if not report.ready:
            raise CommandError("not ready: " + "; ".join(report.as_json()["problems"]))
