"""``manage.py export_config``: write the saved config as a YuniKorn queues.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import render_queues_yaml


class Command(BaseCommand):
    help = "Export partitions as a YuniKorn queues.yaml (all partitions unless --partition)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--partition", action="append", help="partition to export (repeatable)")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        partitions = Partition.objects.order_by("name")
        wanted = options["partition"]
        if wanted:
            partitions = partitions.filter(name__in=wanted)
            missing = sorted(set(wanted) - {p.name for p in partitions})
            if missing:
                raise CommandError(f"--partition: no partition {', '.join(missing)}")
        configs = [partition.current_config() for partition in partitions]
        if not configs:
            raise CommandError("there is no partition to export")
        text = render_queues_yaml(configs)
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
