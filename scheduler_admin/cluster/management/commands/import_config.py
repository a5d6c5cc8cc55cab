"""``manage.py import_config FILE``: load a YuniKorn queues.yaml, all or nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from preemption.config import PartitionConfig, diff_configs
from preemption.hierarchy import ConfigErrors
from scheduler_admin.cluster.management.commands import _scheduled as scheduled_imports
from scheduler_admin.cluster.resource_types import import_warnings
from scheduler_admin.queues import services
from scheduler_admin.queues.management.commands._common import (
    errors_to_command_error,
    resolve_user,
)
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import parse_queues_yaml


class Command(BaseCommand):
    help = (
        "Import a YuniKorn queues.yaml. Every partition in the file is validated first; if any "
        "error is found nothing is saved and every error is listed with its path."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="path of the queues.yaml to import ('-' for stdin)")
        parser.add_argument("--partition", help="import only this partition of the file")
        parser.add_argument("--comment", help="revision comment (default: 'Imported from FILE')")
        parser.add_argument("--user", help="record this user as the author")
        parser.add_argument(
            "--skip-existing",
            action="store_true",
            help="leave partitions that already exist untouched (used to load the demo once)",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and show the changes, save nothing"
        )
        parser.add_argument(
            "--apply-at",
            help="schedule the import for this future time (ISO 8601 with an offset, e.g. "
            "2026-12-01T18:00:00+00:00) instead of saving now; every partition must exist",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        content = self._read(source)
        try:
            configs = parse_queues_yaml(
                content, settings_for=services.settings_for_import, source=source
            )
        except ConfigErrors as exc:
            raise errors_to_command_error(source, exc) from None
        if options["partition"]:
            configs = [c for c in configs if c.name == options["partition"]]
            if not configs:
                raise CommandError(
                    f"--partition: {source} has no partition {options['partition']!r}"
                )

        if options["skip_existing"]:
            existing = set(Partition.objects.values_list("name", flat=True))
            for name in sorted(existing & {c.name for c in configs}):
                self.stdout.write(f"{name}: exists, left as it is")
            configs = [c for c in configs if c.name not in existing]
            if not configs:
                return
        self._show_warnings(source, configs)
        if options["dry_run"]:
            self._show_plan(configs)
            self.stdout.write("Dry run: nothing was saved.")
            return
        comment = options["comment"] or f"Imported from {Path(source).name}"
        if options["apply_at"]:
            self._schedule(configs, options["apply_at"], comment, options["user"])
            return
        try:
            results = services.import_partition_configs(
                configs, actor=resolve_user(options["user"]), comment=comment
            )
        except ConfigErrors as exc:
            raise errors_to_command_error(source, exc) from None
        for result in results:
            if result.revision is None:
                self.stdout.write(f"{result.partition.name}: unchanged")
            else:
                self.stdout.write(
                    self.style.SUCCESS(
                        f"{result.partition.name}: saved as revision {result.revision.number}"
                    )
                )

    def _schedule(
        self, configs: list[PartitionConfig], raw: str, comment: str, user: str | None
    ) -> None:
        """Keep each partition as a scheduled import (``queues.scheduled``), all or none."""
        apply_at = scheduled_imports.parse_apply_at(raw)
        kept = scheduled_imports.schedule_imports(
            configs, apply_at=apply_at, comment=comment, actor=resolve_user(user)
        )
        for change in kept:
            self.stdout.write(
                self.style.SUCCESS(
                    f"{change.partition.name}: scheduled as change {change.pk} for "
                    f"{change.apply_at.isoformat()}"
                )
            )

    def _read(self, source: str) -> bytes:
        if source == "-":
            return sys.stdin.buffer.read()
        try:
            return Path(source).read_bytes()
        except OSError as exc:
            raise CommandError(f"{source}: cannot read ({exc.strerror})") from None

    def _show_warnings(self, source: str, configs: list[PartitionConfig]) -> None:
        """The warnings the console's import preview and the API show (they never block the
        import), one line each on stderr: the file, the partition, where, what."""
        existing = {p.name: p for p in Partition.objects.filter(name__in=[c.name for c in configs])}
        for config in configs:
            for warning in import_warnings(existing.get(config.name), config):
                self.stderr.write(
                    self.style.WARNING(f"{source}: warning: partition {config.name}: {warning}")
                )

    def _show_plan(self, configs: list) -> None:
        for config in configs:
            partition = Partition.objects.filter(name=config.name).first()
            if partition is None:
                self.stdout.write(f"{config.name}: new partition with {len(config.queues)} queues")
                continue
            changes = diff_configs(partition.current_config(), config)
            self.stdout.write(f"{config.name}: {len(changes)} change(s)")
            for change in changes:
                where = change.queue or "partition"
                self.stdout.write(f"  {where} {change.field}: {change.old!r} -> {change.new!r}")
