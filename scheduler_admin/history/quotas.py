"""The guaranteed and max of one queue as they were in force over a window, from the config
revisions (history is append-only: every saved change is a whole snapshot, ``queues.models``).

A chart of last week must draw last week's quotas, not today's. Each revision is in force from
its ``created_at`` until the next one; the window needs the revision in force at its start and
every later one before its end. From each, only the queue's own entry and its ancestors' are
read (the max in force is the *effective* max, SPEC 3.1: per type the smallest max on the path
from root, as the usage bars draw it). On PostgreSQL the database picks those few entries out of
each snapshot (a jsonpath query, as the queue page's history does), so a week of revisions of a
5,000-queue tree reads kilobytes, not megabytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, models
from django.db.models.expressions import RawSQL

from preemption.config import QueueConfig
from scheduler_admin.queues.models import ConfigRevision, Partition


@dataclass(frozen=True)
class QuotaStep:
    """The queue's quotas from ``at`` on (until the next step): its own ``guaranteed`` and its
    effective ``limit`` (max), per resource; empty when the queue did not exist (``exists``)."""

    at: datetime
    revision: int
    author: str
    comment: str
    exists: bool
    guaranteed: Mapping[str, int] = field(default_factory=dict)
    limit: Mapping[str, int] = field(default_factory=dict)

    def changes_from(self, before: QuotaStep) -> dict[str, dict[str, list[int | None]]]:
        """Per resource whose guarantee or max differs from ``before``: ``{"guaranteed": [old,
        new], "max": [old, new]}`` (only the fields that changed; None: none set)."""
        found: dict[str, dict[str, list[int | None]]] = {}
        for label, old, new in (
            ("guaranteed", before.guaranteed, self.guaranteed),
            ("max", before.limit, self.limit),
        ):
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
                    found.setdefault(name, {})[label] = [old.get(name), new.get(name)]
        return dict(sorted(found.items()))


def path_from_root(path: str) -> list[str]:
    """``root.a.b`` -> ``[root, root.a, root.a.b]`` (queue names hold no dot)."""
    parts = path.split(".")
    return [".".join(parts[: depth + 1]) for depth in range(len(parts))]


def quota_steps(
    partition: Partition, path: str, since: datetime, until: datetime
) -> list[QuotaStep]:
    """The revisions in force during ``[since, until)``, oldest first: the one in force at
    ``since`` (if any) and every later one before ``until``, each as the queue's quotas then.
    Consecutive revisions that did not change this queue's quotas are kept (they cost nothing
    and ``changes`` tells them apart)."""
    first = (
        partition.revisions.filter(created_at__lte=since)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    revisions = partition.revisions.filter(created_at__lt=until)
    revisions = revisions.filter(number__gte=first) if first is not None else revisions
    lineage = path_from_root(path)
    steps = []
    for number, created_at, author, comment, entries in _entries(revisions, lineage):
        by_path = {entry.get("path"): entry for entry in entries or ()}
        queues = [QueueConfig.from_json(by_path[step]) for step in lineage if step in by_path]
        exists = bool(queues) and queues[-1].path == path
        limit: dict[str, int] = {}
        for queue in queues:
            for name, value in queue.max.items():
                limit[name] = min(value, limit.get(name, value))
        steps.append(
            QuotaStep(
                at=created_at,
                revision=number,
                author=author,
                comment=comment,
                exists=exists,
                guaranteed=dict(queues[-1].guaranteed) if exists else {},
                limit=dict(sorted(limit.items())) if exists else {},
            )
        )
    return steps


def _entries(
    revisions: models.QuerySet[ConfigRevision], lineage: list[str]
) -> Iterator[tuple[int, datetime, str, str, list[dict[str, Any]]]]:
    """``(number, created_at, author, comment, entries)`` per revision in number order, where
    ``entries`` are the snapshot's items for the queues of ``lineage``."""
    fields = ("number", "created_at", "author_name", "comment")
    revisions = revisions.order_by("number")
    if connection.vendor == "postgresql":
        # ``@.path == $paths[*]`` is true when the path equals any of them (SQL/JSON path
        # comparisons are existential).
        picked = RawSQL(
            "jsonb_path_query_array(snapshot, '$.queues[*] ? (@.path == $paths[*])', "
            "jsonb_build_object('paths', %s::jsonb))",
            (json.dumps(lineage),),
            output_field=models.JSONField(),
        )
        yield from revisions.annotate(picked=picked).values_list(*fields, "picked")
        return
    wanted = set(lineage)
    for *head, snapshot in revisions.values_list(*fields, "snapshot").iterator(chunk_size=50):
        picked = [queue for queue in snapshot.get("queues", []) if queue.get("path") in wanted]
        yield (*head, picked)  # type: ignore[misc]
