"""The guaranteed and max of one queue as they were in force over a window, from the config
revisions (history is append-only: every saved change is a whole snapshot, ``queues.models``).

A chart of last week must draw last week's quotas, not today's. Each revision is in force from
its ``created_at`` until the next one; the window needs the revision in force at its start and
every later one before its end. The max in force is the *effective* max (SPEC 3.1: per type the
smallest max on the path from root), as the usage bars draw it.

Two ways to read them, one answer (a test holds them equal):

- recorded: the sampler keeps ``QueueQuota``, a queue's quotas at each revision that changed
  them (``services.record_quotas``), so a window reads that queue's few rows, whatever the number
  of revisions and queues; revisions saved since the sampler last ran are read as below;
- from the snapshots: only the queue's own entry and its ancestors' are read from each revision
  of the window. On PostgreSQL the database picks those entries out of each snapshot (a
  jsonpath query, as the queue page's history does); still, each snapshot of a 5,000-queue tree
  is a megabyte to decompress (about 3 ms a revision).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, models
from django.db.models.expressions import RawSQL

from preemption.config import PartitionConfig, QueueConfig
from scheduler_admin.history.models import QueueQuota
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


Quotas = tuple[bool, dict[str, int], dict[str, int]]


def effective_quotas(config: PartitionConfig) -> dict[str, Quotas]:
    """Every queue's (exists, guaranteed, effective max) in ``config``: parents first, each
    child's max per type the smaller of its own and its parent's effective one."""
    limits: dict[str, dict[str, int]] = {}
    found: dict[str, Quotas] = {}
    for queue in sorted(config.queues, key=lambda queue: queue.path.count(".")):
        limit = dict(limits.get(queue.parent or "", {}))
        for name, value in queue.max.items():
            limit[name] = min(value, limit.get(name, value))
        limits[queue.path] = limit
        found[queue.path] = (
            True,
            dict(sorted(queue.guaranteed.items())),
            dict(sorted(limit.items())),
        )
    return found


def quota_steps(
    partition: Partition,
    path: str,
    since: datetime,
    until: datetime,
    *,
    recorded_until: int | None = None,
) -> list[QuotaStep]:
    """The revisions in force during ``[since, until)``, oldest first: the one in force at
    ``since`` (if any) and every later one before ``until``, each as the queue's quotas then.

    ``recorded_until`` is the newest revision recorded in ``QueueQuota`` (None: read every
    revision from the snapshots); later ones are read from the snapshots. Recorded steps are
    those that changed the queue's quotas; snapshot steps are every revision (``changes``
    tells them apart)."""
    steps: list[QuotaStep] = []
    if recorded_until is not None:
        steps = _recorded_steps(partition, path, since, until)
        revisions = partition.revisions.filter(number__gt=recorded_until, created_at__lt=until)
    else:
        first = (
            partition.revisions.filter(created_at__lte=since)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        revisions = partition.revisions.filter(created_at__lt=until)
        revisions = revisions.filter(number__gte=first) if first is not None else revisions
    steps += _snapshot_steps(revisions, path)
    if not steps or steps[0].at > since:
        # Nothing in force at ``since`` (no revision yet, or none recorded then): an absent
        # step, so the revision that brings the queue is marked as the change it is.
        steps.insert(0, QuotaStep(at=since, revision=0, author="", comment="", exists=False))
    return steps


def _recorded_steps(
    partition: Partition, path: str, since: datetime, until: datetime
) -> list[QuotaStep]:
    """The recorded rows of ``path``: the last at or before ``since``, and those after it."""
    rows = QueueQuota.objects.filter(partition=partition, queue_path=path)
    fields = ("revision", "at", "exists", "guaranteed", "limit")
    before = rows.filter(at__lte=since).order_by("-at", "-revision").values_list(*fields)[:1]
    during = rows.filter(at__gt=since, at__lt=until).order_by("revision").values_list(*fields)
    found = [*before, *during]
    about = {
        number: (author, comment)
        for number, author, comment in partition.revisions.filter(
            number__in=[row[0] for row in found]
        ).values_list("number", "author_name", "comment")
    }
    return [
        QuotaStep(
            at=at, revision=number, author=about.get(number, ("", ""))[0],
            comment=about.get(number, ("", ""))[1], exists=exists,
            guaranteed={name: int(value) for name, value in guaranteed.items()},
            limit={name: int(value) for name, value in limit.items()},
        )
        for number, at, exists, guaranteed, limit in found
    ]  # fmt: skip


def _snapshot_steps(revisions: models.QuerySet[ConfigRevision], path: str) -> list[QuotaStep]:
    """Each revision of ``revisions`` as the queue's quotas then, read from its snapshot."""
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
