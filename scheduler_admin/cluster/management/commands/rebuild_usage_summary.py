"""``manage.py rebuild_usage_summary``: recompute the per-queue usage summary from the tasks.

The summary (``cluster.QueueUsage``, PostgreSQL) is kept by triggers on every write, so this is
for doubt only: after restoring a dump without the triggers, or editing tasks by hand with the
triggers disabled. ``--check`` only compares the summary with a sum over the tasks and lists
the differences (exit status 1 when there are some).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.cluster.usage import check_summary, rebuild_summary, summary_in_use
from scheduler_admin.queues.models import Partition


class Command(BaseCommand):
    help = (
        "Recompute the per-queue usage summary from the allocations (PostgreSQL; all "
        "partitions, or --partition). Allocation writers wait meanwhile. --check only compares."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--partition", help="only this partition (default: all)")
        parser.add_argument(
            "--check", action="store_true", help="compare with the tasks, change nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not summary_in_use():
            self.stdout.write("No usage summary on this database: usage is summed from tasks.")
            return
        partitions = Partition.objects.order_by("name")
        if options["partition"]:
            partitions = partitions.filter(name=options["partition"])
            if not partitions.exists():
                raise CommandError(f"--partition: no partition {options['partition']!r}")
        if options["check"]:
            self._check(list(partitions))
            return
        one = partitions.first() if options["partition"] else None
        written = rebuild_summary(one)
        where = f"partition {one.name}" if one else "every partition"
        self.stdout.write(self.style.SUCCESS(f"Usage summary rebuilt for {where}: {written} rows."))

    def _check(self, partitions: list[Partition]) -> None:
        wrong = 0
        for partition in partitions:
            differences = check_summary(partition)
            wrong += len(differences)
            for (path, state, name), (stored, summed) in sorted(differences.items()):
                self.stdout.write(
                    f"{partition.name} {path} {state} {name}: summary {stored}, tasks {summed}"
                )
        if wrong:
            raise CommandError(f"{wrong} summary row(s) differ; run rebuild_usage_summary.")
        self.stdout.write(self.style.SUCCESS("Usage summary agrees with the tasks."))
