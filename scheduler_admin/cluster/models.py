"""Cluster state (SPEC 3.3), one set per partition.

Rows are written only by ``scheduler_admin.cluster.services`` (bulk, idempotent ingestion; its
statements are in ``cluster.ingest.writing``) and by the enforcement services (a victim's state).
Ids are the cluster's own (``external_id``), unique per partition, so the same body can be sent
twice without creating anything new. Text columns are as long as ``scheduler_admin.base.limits``
says, the same limits the ingest checker applies.
"""

from __future__ import annotations

from django.db import models

from scheduler_admin.base.limits import (
    CLUSTER_ID_MAX_LENGTH,
    CLUSTER_USER_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    RESOURCE_NAME_MAX_LENGTH,
)
from scheduler_admin.queues.models import Partition


class Node(models.Model):
    """A node and its capacity; free room is capacity minus the running allocations on it."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="nodes",
    )
    name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    capacity = models.JSONField(default=dict)
    schedulable = models.BooleanField(default=True)
    #: SPEC 3.3: label -> value, and ``[{key, value, effect}]``, in the JSON form of
    #: ``preemption.eligibility_fields`` (checked on ingest).
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["partition", "name"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "name"], name="node_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class Application(models.Model):
    """An application (job owner) and the leaf queue it runs in."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="applications",
    )
    external_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    user = models.CharField(max_length=CLUSTER_USER_MAX_LENGTH, blank=True)

    class Meta:
        ordering = ["partition", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "external_id"], name="app_unique_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class AllocationState(models.TextChoices):
    RUNNING = "running", "Running"
    PREEMPTING = "preempting", "Preempting"
    RELEASED = "released", "Released"


class Allocation(models.Model):
    """A running task (pod). ``queue_path`` is copied from its application so usage per queue is
    one indexed aggregate. ``preempting`` tasks are victims whose eviction order is not yet
    acknowledged; they count as gone in every plan (SPEC 4.0)."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="allocations",
    )
    external_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    application = models.ForeignKey(
        Application, on_delete=models.CASCADE, related_name="allocations"
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    node_name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    resources = models.JSONField(default=dict)
    priority = models.IntegerField(default=0)
    allow_preemption = models.BooleanField(default=True)
    originator = models.BooleanField(default=False)
    required_node = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    job = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    qos = models.CharField(max_length=20, blank=True)
    pdb = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    created_at = models.DateTimeField()
    state = models.CharField(
        max_length=12, choices=AllocationState.choices, default=AllocationState.RUNNING
    )
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["partition", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "external_id"], name="alloc_unique_id"),
        ]
        indexes = [
            models.Index(fields=["partition", "state", "queue_path"], name="alloc_state_queue"),
            models.Index(fields=["partition", "node_name"], name="alloc_node"),
        ]

    def __str__(self) -> str:
        return self.external_id


class QueueUsage(models.Model):
    """The summed resources of one queue path's allocations in one state (running or
    preempting), per resource name: usage read without reading tasks (``cluster.usage``).

    PostgreSQL only (on SQLite the table stays empty and usage is summed from the tasks). Kept by
    triggers on the allocation table (installed by migration ``cluster.0003``), so every write
    path keeps it right: each statement's inserted, updated and deleted rows are netted per
    (queue path, state, resource) into deltas, which are applied when the transaction commits,
    in key order (the summary's row locks are held only from then to the commit, and always
    taken in one order: writers of the same queues never deadlock on them). A read inside a
    transaction that wrote applies that transaction's deltas first. ``tasks`` is
    how many of those allocations name the resource: a row whose count reaches zero is deleted,
    so the summary has exactly the keys ``SUM`` over the tasks would give. Released allocations
    are not summed.

    ``partition`` has no database constraint, and deleting a partition does not touch these
    rows: its allocations' deletion empties them (a foreign key would make Django delete them
    before the allocations, whose deltas would then recreate them).
    """

    partition = models.ForeignKey(
        Partition,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the unique key's first column
        related_name="+",
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    state = models.CharField(max_length=12, choices=AllocationState.choices)
    resource = models.CharField(max_length=RESOURCE_NAME_MAX_LENGTH)
    #: A sum of quantities of up to 2**63 - 1 each: wider than ``bigint``.
    amount = models.DecimalField(max_digits=40, decimal_places=0)
    tasks = models.BigIntegerField()

    class Meta:
        ordering = ["partition", "queue_path", "state", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path", "state", "resource"],
                name="queue_usage_unique_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue_path} {self.state} {self.resource}"


class PartitionUsage(models.Model):
    """``QueueUsage`` summed over a partition's queue paths (per state and resource): root's
    usage in a few rows, once the paths that are not configured queues (``QueueUsagePath``)
    are taken off. Kept by the same triggers, in the same transaction."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the unique key's first column
        related_name="+",
    )
    state = models.CharField(max_length=12, choices=AllocationState.choices)
    resource = models.CharField(max_length=RESOURCE_NAME_MAX_LENGTH)
    amount = models.DecimalField(max_digits=40, decimal_places=0)
    tasks = models.BigIntegerField()

    class Meta:
        ordering = ["partition", "state", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "state", "resource"], name="partition_usage_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.state} {self.resource}"


class QueueUsagePath(models.Model):
    """The queue paths that have ``QueueUsage`` rows (``keys``: how many), one row each: a few
    thousand short rows that tell which paths of the partition's total are not configured
    queues (tasks of a deleted queue), without reading every usage row."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # the unique key's first column
        related_name="+",
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    keys = models.IntegerField()

    class Meta:
        ordering = ["partition", "queue_path"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path"], name="queue_usage_path_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return self.queue_path


class AskState(models.TextChoices):
    PENDING = "pending", "Pending"
    RESERVED = "reserved", "Reserved"
    ALLOCATED = "allocated", "Allocated"
    REMOVED = "removed", "Removed"


class Ask(models.Model):
    """A pending request. ``node`` is the node reserved for it (inter-queue) or nominated to it
    (priority). ``retry_after`` is when the sweep may plan it again after a ``does_not_help``
    (SPEC 4.2: "tried again only after its delay has passed once more")."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="asks",
    )
    external_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="asks")
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    resources = models.JSONField(default=dict)
    priority = models.IntegerField(default=0)
    allow_preemption = models.BooleanField(default=True)
    preemption_policy = models.CharField(max_length=30, default="PreemptLowerPriority")
    required_node = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    job = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    created_at = models.DateTimeField()
    state = models.CharField(max_length=12, choices=AskState.choices, default=AskState.PENDING)
    node = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    #: Where the ask may run (SPEC 3.3), in the JSON form of ``preemption.eligibility_fields``.
    node_selector = models.JSONField(default=dict, blank=True)
    node_affinity = models.JSONField(default=list, blank=True)
    tolerations = models.JSONField(default=list, blank=True)
    retry_after = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["partition", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "external_id"], name="ask_unique_id"),
        ]
        indexes = [models.Index(fields=["partition", "state"], name="ask_state")]

    def __str__(self) -> str:
        return self.external_id


class DisruptionBudget(models.Model):
    """A Kubernetes-style disruption budget: how many of its pods may still be disrupted."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="budgets",
    )
    name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    allowed_disruptions = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["partition", "name"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "name"], name="budget_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class ReplacementPage(models.Model):
    """One page of a cluster-state replacement sent in several requests
    (``cluster.replacement_pages``): kept, unapplied, until the replacement's last page arrives,
    then applied with the others as one ``replace`` push and deleted. ``items`` is the page's
    ``nodes``, ``allocations``, ``asks`` and ``budgets`` as JSON text (read back once, whole)."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="replacement_pages",
    )
    generation = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    index = models.PositiveIntegerField()
    items = models.TextField()
    received_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["partition", "generation", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "generation", "index"], name="replacement_page_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.generation}[{self.index}]"


class DynamicQueue(models.Model):
    """A queue YuniKorn created for an application (SPEC 3.4 "dynamic queue"): part of the
    cluster state, not of the config (no revision), pushed by the cluster agent with the
    ``childtemplate`` it was created with (``template``, as in ``queues.yaml``), and dropped by
    a ``replace`` push that no longer lists it. ``guaranteed``, ``max`` and ``properties`` are
    the template's, read once on ingest (canonical integers) for the engine
    (``cluster.dynamic``). ``path`` spells its configured ancestors as the config does."""

    partition = models.ForeignKey(
        Partition,
        on_delete=models.CASCADE,
        db_index=False,  # the unique key's first column
        related_name="dynamic_queues",
    )
    path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    leaf = models.BooleanField(default=True)
    template = models.JSONField(default=dict, blank=True)
    guaranteed = models.JSONField(default=dict, blank=True)
    max = models.JSONField(default=dict, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["partition", "path"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "path"], name="dynamic_queue_unique"),
        ]

    def __str__(self) -> str:
        return self.path


class UsageGeneration(models.Model):
    """A number that changes whenever a partition's usage summary or dynamic queues change:
    what the dashboard's cached usage roll-up is keyed by (``web.dashboard.rollup``).

    PostgreSQL only (elsewhere the table stays empty and the dashboard computes per request).
    Kept by statement triggers on ``QueueUsage`` and ``DynamicQueue`` (migration
    ``cluster.0007``), so every writer keeps it without knowing of it: the ingest of a
    cluster-state push, acknowledged evictions, a rebuild. The summary's own triggers write it
    at commit, in the transaction that moves usage, so a reader never sees new usage under an
    old number. ``number`` comes from a sequence, which no rollback or table flush rewinds: a
    number is never given to two different states of one database.
    """

    partition = models.OneToOneField(
        Partition,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        primary_key=True,
        related_name="+",
    )
    number = models.BigIntegerField()

    def __str__(self) -> str:
        return f"generation {self.number}"
