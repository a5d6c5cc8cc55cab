"""The scheduled changes a reader sees, as rows for the queue page and the dashboard.

Pending changes first (soonest first), then the few that ended most recently (applied, failed
or cancelled), so a change refused at its time stays in sight with its reason. A queue grant's
holder sees only the changes of their subtrees (``queues.scheduled.visible_to``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preemption import resources
from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.scheduled_access import may_cancel
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import (
    Partition,
    ScheduledChange,
    ScheduledKind,
    ScheduledStatus,
)

#: Ended changes shown under the pending ones.
RECENTLY_ENDED = 5
#: Pending changes shown at most (the API lists every one).
PENDING_SHOWN = 50


@dataclass(frozen=True)
class Row:
    change: ScheduledChange
    what: list[str]
    may_cancel: bool

    @property
    def pending(self) -> bool:
        return self.change.status == ScheduledStatus.PENDING


def scheduled_rows(partition: Partition, user: Any, *, path: str | None = None) -> list[Row]:
    """The rows of ``partition`` (of queue ``path`` and below when given) that ``user`` reads."""
    # Every row is of ``partition``: it is set on them below rather than joined.
    rows = scheduled.visible_to(
        ScheduledChange.objects.filter(partition=partition), permissions.read_scope(user)
    )
    if path is not None:
        rows = rows.filter(queue_path=path)
    pending = list(
        rows.filter(status=ScheduledStatus.PENDING).order_by("apply_at", "id")[:PENDING_SHOWN]
    )
    ended = list(
        rows.exclude(status=ScheduledStatus.PENDING).order_by("-finished_at", "-id")[
            :RECENTLY_ENDED
        ]
    )
    for change in (*pending, *ended):
        change.partition = partition
    return [
        Row(change, what_it_changes(change), change.status == ScheduledStatus.PENDING
            and bool(may_cancel(user, change)))
        for change in (*pending, *ended)
    ]  # fmt: skip


def what_it_changes(change: ScheduledChange) -> list[str]:
    """One line per field it sets ("max: memory 40G"), or the whole config's size."""
    if change.kind != ScheduledKind.QUEUE:
        count = len(change.change.get("queues", []))
        return [f"the whole config ({count} queues and the partition settings)"]
    lines = []
    for field, values in sorted(change.change.items()):
        if field == "properties":
            shown = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
        else:
            shown = ", ".join(f"{name} {quantity}" for name, quantity
                              in sorted(resources.format_resources(values).items()))  # fmt: skip
        lines.append(f"{field}: {shown or 'none'}")
    return lines
