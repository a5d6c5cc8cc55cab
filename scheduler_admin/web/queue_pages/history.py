"""The revisions that changed one queue, computed on read from the stored snapshots (history is
append-only; no per-queue index is kept).

Each revision's snapshot is compared with the one before it, looking only at this queue's entry,
so a revision that changed only other queues or partition settings is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.web.history.changes import compare

#: Newest revisions shown on the queue page; the history page has the rest.
HISTORY_LIMIT = 20


@dataclass(frozen=True)
class QueueRevision:
    number: int
    kind: str
    created_at: datetime
    author: str
    comment: str
    changes: list[str]


def queue_history(
    partition: Partition, path: str, *, limit: int = HISTORY_LIMIT
) -> list[QueueRevision]:
    """Revisions whose change touched ``path`` (added, removed or any field), newest first."""
    empty = PartitionConfig(settings=PartitionSettings(name=partition.name), queues=())
    previous: QueueConfig | None = None
    found: list[QueueRevision] = []
    for number, kind, created_at, author, comment, entry in ConfigRevision.queue_entries(
        partition, path
    ):
        current = QueueConfig.from_json(entry) if entry else None
        if current != previous:
            found.append(
                QueueRevision(
                    number=number,
                    kind=kind,
                    created_at=created_at,
                    author=author,
                    comment=comment,
                    changes=describe_queue_changes(
                        replace(empty, queues=(previous,) if previous else ()),
                        replace(empty, queues=(current,) if current else ()),
                        path,
                    ),
                )
            )
        previous = current
    return list(reversed(found))[:limit]


def describe_queue_changes(old: PartitionConfig, new: PartitionConfig, path: str) -> list[str]:
    """``max.memory: 64Gi → 32Gi`` lines for one queue, formatted like the history page (whose
    ``compare`` groups and formats the engine's ``diff_configs``)."""
    changes = compare(old, new)
    lines = ["queue added" for queue in changes.added if queue.path == path]
    lines += ["queue removed" for queue in changes.removed if queue.path == path]
    lines += [f"{row.field}: {row.old} → {row.new}" for row in changes.queues.get(path, [])]
    return lines
