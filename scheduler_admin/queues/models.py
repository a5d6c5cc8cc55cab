"""Partitions, their queue tree and the revision history of their configuration.

Rows here are written only by ``scheduler_admin.queues.services``: every change validates the whole
partition, bumps versions, and writes a revision and an audit event in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.db.models import Value
from django.db.models.expressions import RawSQL

from preemption.config import VICTIM_STRATEGIES, PartitionConfig, PartitionSettings, QueueConfig


class EnforcementMode(models.TextChoices):
    """SPEC 5 "Enforcement mode": whether the partition's runs evict, or only plan and record."""

    ENFORCE = "enforce", "Enforce (evict)"
    OBSERVE = "observe", "Observe only (evict nothing)"


class ApprovalMode(models.TextChoices):
    """SPEC 6 "Approvals": which changes become a change request for another admin to approve."""

    NONE = "none", "No approval (every change is saved at once)"
    DECREASES = "decreases", "Decreases (a lower or new max, a lower guarantee)"
    ALL = "all", "All queue changes"


class AskPolicy(models.TextChoices):
    INTER_QUEUE = "inter_queue", "Inter-queue (seven laws)"
    PRIORITY = "priority", "Kubernetes priority"


def default_victim_strategy() -> list[str]:
    """The default order of required-node victim strategies (a callable: a list default
    must not be shared between rows)."""
    return list(VICTIM_STRATEGIES)


class Partition(models.Model):
    """A partition's settings (SPEC 3.2). Delays are whole seconds.

    ``version`` rises with every saved change to the partition's config, so a client that read
    revision N can refuse to overwrite a newer one. ``extra`` keeps the YuniKorn partition keys the
    product does not act on (placement rules, limits, ...) for export.
    """

    name = models.CharField(max_length=64, unique=True)
    preemption_enabled = models.BooleanField(default=True)
    quota_preemption_enabled = models.BooleanField(default=False)
    miss_percent = models.PositiveSmallIntegerField(default=0)
    default_preemption_delay = models.PositiveIntegerField(default=30)
    daemonset_preemption_delay = models.PositiveIntegerField(default=0)
    ask_policy = models.CharField(
        max_length=20, choices=AskPolicy.choices, default=AskPolicy.INTER_QUEUE
    )
    #: Engine options the live loop plans with (SPEC 4.3, 4.5; ``preemption.model.Options``).
    #: Their defaults are the database's too, so a process still running the code before them
    #: (a rolling upgrade) can insert a partition.
    victim_strategy = models.JSONField(
        default=default_victim_strategy,
        db_default=Value(list(VICTIM_STRATEGIES), output_field=models.JSONField()),
    )
    deviation_percent = models.PositiveIntegerField(default=10, db_default=10)
    max_victims = models.PositiveIntegerField(default=5, db_default=5)
    soft_eviction = models.BooleanField(default=False, db_default=False)
    #: Whether runs evict or only observe, and how many eviction orders the partition's runs may
    #: create together in any minute (0: unlimited) (SPEC 5). Database defaults as above.
    enforcement = models.CharField(
        max_length=10,
        choices=EnforcementMode.choices,
        default=EnforcementMode.ENFORCE,
        db_default=EnforcementMode.ENFORCE.value,
    )
    max_evictions_per_minute = models.PositiveIntegerField(default=0, db_default=0)
    #: Which changes need another admin's approval (SPEC 6; ``queues.approval_gate``).
    approval = models.CharField(
        max_length=10,
        choices=ApprovalMode.choices,
        default=ApprovalMode.NONE,
        db_default=ApprovalMode.NONE.value,
    )
    extra = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(miss_percent__lte=100), name="partition_miss_percent_max_100"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def observes(self) -> bool:
        """Whether the partition only observes (plans and records runs, evicts nothing)."""
        return self.enforcement == EnforcementMode.OBSERVE

    def settings_config(self) -> PartitionSettings:
        return PartitionSettings(
            name=self.name,
            preemption_enabled=self.preemption_enabled,
            quota_preemption_enabled=self.quota_preemption_enabled,
            miss_percent=self.miss_percent,
            default_preemption_delay=self.default_preemption_delay,
            daemonset_preemption_delay=self.daemonset_preemption_delay,
            ask_policy=self.ask_policy,
            victim_strategy=self.victim_strategy,
            deviation_percent=self.deviation_percent,
            max_victims=self.max_victims,
            soft_eviction=self.soft_eviction,
            enforcement=self.enforcement,
            max_evictions_per_minute=self.max_evictions_per_minute,
            approval=self.approval,
            extra=self.extra,
        )

    def current_config(self) -> PartitionConfig:
        """The partition as saved now, queues parents first in configured order.

        Read as plain rows (``values_list``), not ``Queue`` instances: at 5,000 queues the
        instances cost about twice the rest (each sweep of due timers and every preview reads
        the whole config). Each row becomes what ``Queue.to_config`` makes of it.
        """
        rows = self.queues.order_by().values_list(
            "id", "parent_id", "position", "path", "name", "guaranteed", "max", "properties",
            "extra",
        )  # fmt: skip
        children: dict[int | None, list[tuple]] = {}
        for row in sorted(rows, key=lambda row: (row[2], row[3])):  # position, then path
            children.setdefault(row[1], []).append(row)
        ordered: list[QueueConfig] = []
        stack = list(reversed(children.get(None, [])))
        while stack:  # depth-first, parents before children, siblings in configured order
            id_, parent_id, _, path, name, guaranteed, max_, properties, extra = stack.pop()
            ordered.append(
                QueueConfig(
                    path=path,
                    parent=path.rsplit(".", 1)[0] if parent_id else None,
                    name=name,
                    guaranteed=dict(guaranteed),
                    max=dict(max_),
                    properties=dict(properties),
                    extra=dict(extra),
                )
            )
            stack.extend(reversed(children.get(id_, [])))
        return PartitionConfig(settings=self.settings_config(), queues=tuple(ordered))


class Queue(models.Model):
    """One queue of a partition's tree.

    The tree is an adjacency list (``parent``) plus the materialised ``path`` (``root.a.b``):
    queue names cannot contain ``.``, so a subtree is ``path = P or path LIKE 'P.%'`` in one indexed
    query and no tree library is needed. ``position`` keeps the configured order of siblings so an
    export reproduces the imported file. ``version`` is the optimistic-concurrency token: a write
    that names an older version is refused.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="queues")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    name = models.CharField(max_length=64)
    path = models.CharField(max_length=1024)
    depth = models.PositiveSmallIntegerField(default=0)
    position = models.PositiveIntegerField(default=0)
    guaranteed = models.JSONField(default=dict, blank=True)
    max = models.JSONField(default=dict, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["partition", "path"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "path"], name="queue_unique_path"),
            models.UniqueConstraint(
                fields=["partition"],
                condition=models.Q(parent__isnull=True),
                name="queue_one_root_per_partition",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.partition.name}:{self.path}"

    def to_config(self) -> QueueConfig:
        parent_path = self.path.rsplit(".", 1)[0] if self.parent_id else None
        return QueueConfig(
            path=self.path,
            parent=parent_path,
            name=self.name,
            guaranteed=dict(self.guaranteed),
            max=dict(self.max),
            properties=dict(self.properties),
            extra=dict(self.extra),
        )


class RevisionKind(models.TextChoices):
    CHANGE = "change", "Change"
    IMPORT = "import", "Import"
    REVERT = "revert", "Revert"


class ConfigRevision(models.Model):
    """An immutable snapshot of a whole partition config after one saved change.

    History is append-only (STYLE habit 6): a revert is a new revision copied from an old one, and
    diffs between any two revisions are computed on read from the snapshots.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=RevisionKind.choices)
    created_at = models.DateTimeField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150)
    comment = models.TextField()
    reverted_from = models.PositiveIntegerField(null=True, blank=True)
    #: The admin who approved the change request this revision saves (SPEC 6 "Approvals"); the
    #: author is the request's author. Empty for a change saved without approval.
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_name = models.CharField(max_length=150, blank=True, default="", db_default="")
    snapshot = models.JSONField()

    class Meta:
        ordering = ["partition", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "number"], name="revision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.partition.name} r{self.number}"

    def config(self) -> PartitionConfig:
        return PartitionConfig.from_json(self.snapshot)

    @staticmethod
    def queue_entries(partition: Partition, path: str) -> Iterator[tuple[Any, ...]]:
        """``(number, kind, created_at, author_name, comment, entry)`` for every revision of
        ``partition`` in order, ``entry`` being ``path``'s item of the snapshot (or None).

        On PostgreSQL the database picks the one item out of each snapshot (a jsonpath query),
        so a queue's history over hundreds of revisions of a 5,000-queue tree reads a few
        kilobytes instead of every whole snapshot; elsewhere the snapshots are read and searched
        here.
        """
        fields = ("number", "kind", "created_at", "author_name", "comment")
        revisions = partition.revisions.order_by("number")
        if connection.vendor == "postgresql":
            entry = RawSQL(
                "jsonb_path_query_first(snapshot, '$.queues[*] ? (@.path == $p)', "
                "jsonb_build_object('p', %s::text))",
                (path,),
                output_field=models.JSONField(),
            )
            rows = revisions.annotate(entry=entry).values_list(*fields, "entry")
            yield from rows.iterator(chunk_size=500)
            return
        for *head, snapshot in revisions.values_list(*fields, "snapshot").iterator(chunk_size=50):
            found = next((q for q in snapshot.get("queues", []) if q.get("path") == path), None)
            yield (*head, found)


# Scheduled changes and change requests (SPEC 6) live in modules of their own; imported here so
# Django registers their models with the app's others.
from scheduler_admin.queues.request_models import ChangeRequest, RequestStatus  # noqa: E402, F401
from scheduler_admin.queues.scheduled_models import (  # noqa: E402, F401
    ScheduledChange,
    ScheduledKind,
    ScheduledStatus,
)
