"""``manage.py ingest_state FILE.json``: push cluster state, as the REST endpoint will."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.cluster.services import IngestErrors, ingest_cluster_state
from scheduler_admin.queues.management.commands._common import resolve_user
from scheduler_admin.queues.models import Partition


class Command(BaseCommand):
    help = (
        "Apply a cluster-state JSON body (nodes, allocations, asks, budgets, remove) to a "
        "partition: all or nothing, idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="JSON file ('-' for stdin)")
        parser.add_argument("--partition", default="default")
        parser.add_argument("--user", help="record this user as the actor")

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
            body = json.loads(text)
        except OSError as exc:
            raise CommandError(f"{source}: cannot read ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{source}: not JSON (line {exc.lineno}: {exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{source}: not UTF-8 text (byte {exc.start})") from None
        except RecursionError:
            raise CommandError(f"{source}: not JSON (nested too deeply)") from None
        partition = Partition.objects.filter(name=options["partition"]).first()
        if partition is None:
            raise CommandError(f"--partition: no partition {options['partition']!r}")
        try:
            result = ingest_cluster_state(partition, body, actor=resolve_user(options["user"]))
        except IngestErrors as exc:
            lines = [f"{source}: {path}: {'; '.join(msgs)}" for path, msgs in exc.errors.items()]
            raise CommandError(
                f"{len(lines)} problem(s), nothing was changed:\n" + "\n".join(lines)
            ) from None
        self.stdout.write(self.style.SUCCESS(json.dumps(result.to_json())))
