"""``manage.py revert_config --partition P --to N``: a new revision equal to revision N."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from preemption.hierarchy import ConfigErrors
from scheduler_admin.queues import services
from scheduler_admin.queues.management.commands._common import (
    errors_to_command_error,
    resolve_user,
)


class Command(BaseCommand):
    help = "Revert a partition's config to an earlier revision (validated like any change)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--partition", required=True)
        parser.add_argument("--to", type=int, required=True, dest="to", help="revision number")
        parser.add_argument("--comment", default="", help="default: 'Revert to revision N'")
        parser.add_argument("--user", help="record this user as the author")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = services.revert_config(
                options["partition"],
                to_number=options["to"],
                actor=resolve_user(options["user"]),
                comment=options["comment"],
            )
        except services.NotFound as exc:
            raise CommandError(str(exc)) from None
        except ConfigErrors as exc:
            raise errors_to_command_error(f"revision {options['to']}", exc) from None
        if result.revision is None:
            self.stdout.write(f"{options['partition']} already equals revision {options['to']}")
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"{options['partition']}: revision {result.revision.number} "
                    f"restores revision {options['to']}"
                )
            )
