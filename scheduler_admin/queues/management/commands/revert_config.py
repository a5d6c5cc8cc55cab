"""``manage.py revert_config --partition P --to N --partition-version V``: a new revision equal to
revision N, made only if the partition is still at version V (the version you reviewed)."""

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
    help = (
        "Revert a partition's config to an earlier revision (validated like any change). "
        "--partition-version is the partition version you reviewed: if anyone saved since, "
        "nothing is changed and the command fails, so a revert never silently undoes a newer "
        "change."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--partition", required=True)
        parser.add_argument("--to", type=int, required=True, dest="to", help="revision number")
        parser.add_argument(
            "--partition-version",
            type=int,
            dest="partition_version",
            help="the partition version you reviewed (required; the History page and "
            "GET .../partitions/P/ show it)",
        )
        parser.add_argument("--comment", default="", help="default: 'Revert to revision N'")
        parser.add_argument("--user", help="record this user as the author")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["partition"]
        try:
            partition = services.get_partition(name)
        except services.NotFound as exc:
            raise CommandError(str(exc)) from None
        version = options["partition_version"]
        if version is None or version < 1:
            raise CommandError(
                f"--partition-version: give the version of partition {name} you reviewed (it is at "
                f"version {partition.version} now); the revert is made only if nobody saved "
                "since."
            )
        try:
            result = services.revert_config(
                name,
                to_number=options["to"],
                actor=resolve_user(options["user"]),
                comment=options["comment"],
                expected_revision=version,
            )
        except services.NotFound as exc:
            raise CommandError(str(exc)) from None
        except services.StaleVersion as exc:
            raise CommandError(
                f"--partition-version: partition {name} changed since version {version} (it is at "
                f"version {exc.current} now): nothing was reverted. Review the change and run "
                f"the command again with --partition-version {exc.current}."
            ) from None
        except ConfigErrors as exc:
            raise errors_to_command_error(f"revision {options['to']}", exc) from None
        if result.revision is None:
            self.stdout.write(f"{name} already equals revision {options['to']}")
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"{name}: revision {result.revision.number} restores revision {options['to']}"
                )
            )
