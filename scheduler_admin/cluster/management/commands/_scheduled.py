"""``import_config --apply-at``: each partition of the file kept as a scheduled import
(``queues.scheduled``), checked now as the import would be; all of them or none. Refusals are
``CommandError`` naming the option or the field (a non-zero exit)."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import CommandError
from django.db import transaction
from django.utils.dateparse import parse_datetime

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigErrors
from scheduler_admin.base import errors
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import Partition, ScheduledChange, ScheduledKind
from scheduler_admin.queues.yaml_io import error_lines


def parse_apply_at(raw: str) -> datetime:
    try:
        moment = parse_datetime(raw.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CommandError(
            f"--apply-at: {raw!r} is not an ISO 8601 time with an offset "
            "(e.g. 2026-12-01T18:00:00+00:00)"
        )
    return moment


def schedule_imports(
    configs: list[PartitionConfig],
    *,
    apply_at: datetime,
    comment: str,
    actor: AbstractBaseUser | None,
) -> list[ScheduledChange]:
    missing = sorted(
        {c.name for c in configs} - set(Partition.objects.values_list("name", flat=True))
    )
    if missing:
        raise CommandError(
            f"--apply-at: partition(s) {', '.join(missing)} do not exist yet; import them "
            "without --apply-at first"
        )
    try:
        with transaction.atomic():
            return [
                scheduled.schedule_config(
                    config,
                    actor=actor,
                    comment=comment,
                    apply_at=apply_at,
                    expected_revision=None,
                    kind=ScheduledKind.IMPORT,
                )
                for config in configs
            ]
    except ConfigErrors as exc:
        lines = error_lines("--apply-at", exc.errors)
        raise CommandError(
            f"{len(lines)} problem(s), nothing was scheduled:\n" + "\n".join(lines)
        ) from None
    except errors.Invalid as exc:
        field = "--apply-at" if scheduled.APPLY_AT in exc.errors else "config"
        raise CommandError(f"{field}: {exc}") from None
