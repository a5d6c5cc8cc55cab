"""The live loop's state: quota timers, preemption runs, their victims and eviction orders.

Correctness rests on PostgreSQL constraints, not on the workers behaving:

- one active run per queue: a partial unique index on ``PreemptionRun(partition, queue_path)``
  while the run is pending or running;
- no stale writer: every write of a run checks ``QueueLock.token`` (a fencing token raised on every
  claim), so a worker whose lease expired and whose run was taken over writes nothing;
- no double preemption: an eviction order is unique per allocation, and a victim is marked
  preempted by a conditional update.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from scheduler_admin.base.limits import (
    ACKNOWLEDGED_BY_MAX_LENGTH,
    CLUSTER_ID_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    WORKER_NAME_MAX_LENGTH,
)
from scheduler_admin.queues.models import Partition


class TimerStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    FIRED = "fired", "Fired (run started)"
    CANCELLED = "cancelled", "Cancelled"
    NOT_NEEDED = "not_needed", "Not needed (usage within max)"
    SUPERSEDED = "superseded", "Superseded (reset by a later change)"


class QuotaTimer(models.Model):
    """A queue's pending quota enforcement (SPEC 4.1 "Timer"), stored so it survives restarts.

    Beat's sweep looks for ``pending`` timers whose ``due_at`` passed (indexed). A timer due while
    a run is active on its queue, an ancestor or a descendant stays pending with
    ``deferred_since`` set and is looked at again on every sweep until that run ends.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="timers")
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    started_at = models.DateTimeField()
    due_at = models.DateTimeField(db_index=True)
    delay_seconds = models.PositiveIntegerField()
    status = models.CharField(
        max_length=12, choices=TimerStatus.choices, default=TimerStatus.PENDING
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    deferred_since = models.DateTimeField(null=True, blank=True)
    revision_number = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["due_at", "queue_path"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(status="pending"),
                name="timer_one_pending_per_queue",
            ),
        ]
        indexes = [models.Index(fields=["status", "due_at"], name="timer_status_due")]

    def __str__(self) -> str:
        return f"{self.queue_path} due {self.due_at:%H:%M:%S} ({self.status})"


class QueueLock(models.Model):
    """The fencing token of a queue (unrelated to preemption fences).

    Every claim of a run on the queue raises ``token`` and gives the run the new value; every
    later write of that run first checks that the token is still its own. A worker that stalled
    past its lease while the reaper handed the run to another worker finds a higher token and
    stops without writing.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="+")
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    token = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["partition", "queue_path"], name="lock_unique_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.queue_path} token {self.token}"


class RunStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    #: Ended before its last victim because it was no longer needed (SPEC 5): ``stop_reason``.
    STOPPED = "stopped", "Stopped (no longer needed)"
    #: Planned and recorded in a partition that only observes (SPEC 5 "Enforcement mode"): no
    #: eviction order was created, no task changed.
    OBSERVED = "observed", "Observed (nothing evicted)"


ACTIVE_RUN_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING)


def active_run_queues(partition: Partition) -> set[str]:
    """The queues of the partition with an active (pending or running) run: the engine's
    ``running_runs``, which defer timers and keep a queue from a second run."""
    return set(
        PreemptionRun.objects.filter(
            partition=partition, status__in=ACTIVE_RUN_STATUSES
        ).values_list("queue_path", flat=True)
    )


class RunQuerySet(models.QuerySet):
    def listed(self) -> RunQuerySet:
        """Runs as the lists show them (``runs/``, the Runs page, the dashboard's recent runs):
        with ``victim_count``, and without the record of the plan (the ``subject``; the
        ``RunCandidate`` rows are never joined).

        The count is a correlated subquery, which PostgreSQL evaluates for the rows of the page
        only, after the sort and the limit (one index range per run). A ``Count("victims")``
        join grouped every victim of every run matched by the filter before the page was cut:
        five runs of 2,000 victims cost more than the rest of the request.
        """
        victims = (
            RunVictim.objects.filter(run=OuterRef("pk"))
            .order_by()
            .values("run")
            .annotate(count=Count("*"))
            .values("count")
        )
        return self.defer("subject").annotate(
            victim_count=Coalesce(Subquery(victims, output_field=models.IntegerField()), 0)
        )


class PreemptionRun(models.Model):
    """One decision of a policy and its execution.

    Steps (``enforcement.runs``): a sweep creates it ``pending``; a worker claims it (``running``,
    new fence token, lease); the first step plans and stores the victims as ``RunVictim`` rows
    and every explained candidate, with its facts and reason, as a ``RunCandidate`` row; then
    each victim is preempted (idempotently); the run ends ``finished`` with the plan's outcome,
    or ``stopped`` before a chunk when it is no longer needed (``stop_reason``), or ``failed``
    (aborted, or out of attempts: ``error``), or ``observed`` right after planning when it was
    created in a partition that only observes (``observe``). A resumed run (after its worker
    died) finishes the stored victim list and never plans again.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="runs")
    policy = models.CharField(max_length=20)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    trigger = models.CharField(max_length=20)  # quota_timer | ask | job
    trigger_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    timer = models.ForeignKey(
        QuotaTimer, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.PENDING)
    outcome = models.CharField(max_length=20, blank=True)
    planned = models.BooleanField(default=False)
    fence_token = models.BigIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=WORKER_NAME_MAX_LENGTH, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    node = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    targets = models.JSONField(default=dict, blank=True)
    freed = models.JSONField(default=dict, blank=True)
    nominations = models.JSONField(default=dict, blank=True)
    #: Its victims get soft eviction orders (SPEC 4.5 ``soft_eviction``: the pod is labelled and
    #: its owner deletes it). Fixed when the run is created, so a resumed run orders alike.
    soft_eviction = models.BooleanField(default=False, db_default=False)
    #: Created while its partition only observed (SPEC 5 "Enforcement mode"): it plans and
    #: records, then ends ``observed`` without evicting. Fixed when the run is created, like
    #: ``soft_eviction``, so a resumed run does the same.
    observe = models.BooleanField(default=False, db_default=False)
    #: Paused by its partition's pace until then (SPEC 5 "Pacing", ``runs.pacing``): its lease
    #: ends at the same moment, and the claim that goes on is not a new attempt. Null otherwise.
    paced_until = models.DateTimeField(null=True, blank=True)
    #: What the plan was for, as the state had it when the run planned (``preemption.explain.
    #: subject_facts``): the queue with its usage, max, guarantee and target, or the ask (id,
    #: queue, priority, resources, ...), or the job. Empty until planned.
    subject = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    #: Why a ``stopped`` run was no longer needed (its queue back within max, quota preemption
    #: off, its ask no longer pending), in words. The database default lets a process still on
    #: the code before it insert runs.
    stop_reason = models.TextField(blank=True, default="", db_default="")

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(status__in=["pending", "running"]),
                name="run_one_active_per_queue",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
            models.Index(fields=["partition", "queue_path", "-created_at"], name="run_queue_time"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} {self.policy} {self.queue_path} ({self.status})"


class RunVictim(models.Model):
    """A victim chosen by a run's first step, in the order taken."""

    run = models.ForeignKey(PreemptionRun, on_delete=models.CASCADE, related_name="victims")
    position = models.PositiveIntegerField()
    allocation_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    node_name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    resources = models.JSONField(default=dict)
    preempted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "allocation_id"], name="victim_unique_in_run"),
        ]
        indexes = [
            # How often a queue's or an application's tasks were preempted lately, and the
            # applications preempted most (``task_history``): victims by when preempted.
            models.Index(
                fields=["preempted_at"],
                condition=Q(preempted_at__isnull=False),
                name="victim_preempted_at",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.allocation_id} (run {self.run_id})"


class RunCandidate(models.Model):
    """One candidate a run's plan explained, with the facts the decision used, as they were.

    Written once, with the victims, when the run plans (``record.store_plan``), from
    ``preemption.explain``: the run page, ``runs/{id}/`` and the run's exports read these rows
    only, never the live cluster, so they still answer "why this task?" after the task is gone.
    A table rather than a JSON list on the run: a plan can explain 100,000 candidates, which
    pages, filters by reason and counts here without loading them all.

    ``position`` is the 1-based place among the plan's victims (null for the others), ``rank``
    the place in the policy's walk order (null when a static rule stopped the candidate).
    ``remaining_before`` / ``remaining_after`` map a scope (a leaf queue, ``node <name>`` or a
    queue whose max the ask would exceed) to what was still to be freed there. Runs planned
    before this table existed were converted from their JSON explanations: their facts come
    from the victims' rows where known and are empty otherwise, and their ``detail`` is empty.
    """

    # No index of its own: ``candidate_unique_in_run`` (and ``candidate_run_reason``) lead with
    # the run, and one index less to maintain is faster for a 100,000-candidate ``COPY``.
    run = models.ForeignKey(
        PreemptionRun, on_delete=models.CASCADE, related_name="candidates", db_index=False
    )
    candidate = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    accepted = models.BooleanField()
    reason = models.CharField(max_length=40)
    detail = models.TextField(blank=True)
    position = models.PositiveIntegerField(null=True, blank=True)
    rank = models.PositiveIntegerField(null=True, blank=True)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH, blank=True)
    application = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    node_name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    resources = models.JSONField(default=dict, blank=True)
    priority = models.IntegerField(null=True, blank=True)
    qos = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    originator = models.BooleanField(null=True, blank=True)
    allow_preemption = models.BooleanField(null=True, blank=True)
    budget = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    required_node = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH, blank=True)
    remaining_before = models.JSONField(null=True, blank=True)
    remaining_after = models.JSONField(null=True, blank=True)

    #: The order every reader lists candidates in: victims in the order taken, then the others
    #: by id (the engine's order).
    ORDER = (F("position").asc(nulls_last=True), "candidate")

    class Meta:
        ordering = ["run", F("position").asc(nulls_last=True), "candidate"]
        constraints = [
            models.UniqueConstraint(fields=["run", "candidate"], name="candidate_unique_in_run"),
        ]
        indexes = [
            models.Index(fields=["run", "reason"], name="candidate_run_reason"),
            # "Why was my pod evicted?" (``task_history``): every run that considered a task or
            # an application's tasks, by exact id and by the search box's prefix (the pattern
            # operator class serves ``LIKE 'id%'`` on PostgreSQL whatever the collation).
            models.Index(
                fields=["candidate"], name="candidate_task_id", opclasses=["varchar_pattern_ops"]
            ),
            models.Index(
                fields=["application"],
                name="candidate_application",
                opclasses=["varchar_pattern_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate} (run {self.run_id}: {self.reason})"


class EvictionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"


class EvictionOutcome(models.TextChoices):
    """What the cluster says happened to the task when it acknowledged the order."""

    EVICTED = "evicted", "Evicted"
    GONE = "gone", "Already gone (nothing to evict)"
    #: The cluster cannot carry the order out (a pod under several disruption budgets: the
    #: API server refuses every eviction of it). The order ends with the cluster's reason
    #: (``cluster_reason``); the task stays, running, and is not preempted (SPEC 5).
    REFUSED = "refused", "Refused by the cluster (the task stays)"


class ClusterStatus(models.TextChoices):
    """Why the cluster has not carried out a pending order yet (``evictions/report``)."""

    BLOCKED = "blocked", "Blocked by a disruption budget"
    FAILED = "failed", "Failed (retrying)"
    WAITING = "waiting", "Waiting for the pod's owner (soft eviction)"


class EvictionOrder(models.Model):
    """The outbox: an order to the cluster to evict one allocation (SPEC 5).

    Unique per allocation, so no task can be preempted twice, whichever run or worker tries.
    The cluster polls pending orders and acknowledges them, or receives them by webhook (signed,
    retried with backoff; the order id is the idempotency key). Once acknowledged, the
    allocation is ``released`` and stops counting towards usage, and ``outcome`` says whether
    the task was evicted or already gone.

    While an order is pending, the cluster's agent reports what stops it (``cluster_*``: a
    disruption budget refusing the eviction, another error, a soft eviction waiting for the
    pod's owner), so the run page shows why a victim is still running. Only the latest report
    is kept, with how many were made; an order removed from the cluster meanwhile stays pending
    until acknowledged (its allocation may already be gone).
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="evictions")
    run = models.ForeignKey(PreemptionRun, on_delete=models.PROTECT, related_name="evictions")
    victim = models.OneToOneField(RunVictim, on_delete=models.PROTECT, related_name="eviction")
    allocation_id = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    node_name = models.CharField(max_length=CLUSTER_ID_MAX_LENGTH)
    soft = models.BooleanField(default=False)
    status = models.CharField(
        max_length=14, choices=EvictionStatus.choices, default=EvictionStatus.PENDING
    )
    created_at = models.DateTimeField()
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=ACKNOWLEDGED_BY_MAX_LENGTH, blank=True)
    webhook_attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    #: Set when acknowledged; blank for a pending order (and for orders acknowledged before the
    #: outcome was kept).
    outcome = models.CharField(max_length=10, choices=EvictionOutcome.choices, blank=True)
    cluster_status = models.CharField(max_length=10, choices=ClusterStatus.choices, blank=True)
    #: At most ``limits.CLUSTER_MESSAGE_MAX_LENGTH`` characters (longer reports are cut).
    cluster_reason = models.TextField(blank=True)
    #: The HTTP status the cluster answered (429 for a disruption budget), when there was one.
    cluster_code = models.PositiveIntegerField(null=True, blank=True)
    cluster_attempts = models.PositiveIntegerField(default=0)
    cluster_reported_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "allocation_id"], name="eviction_once_per_allocation"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="eviction_due"),
            models.Index(fields=["partition", "status"], name="eviction_partition_status"),
            # Pacing counts a partition's orders of the last minute before every paced chunk.
            models.Index(fields=["partition", "-created_at"], name="eviction_partition_created"),
        ]

    def __str__(self) -> str:
        return f"evict {self.allocation_id} ({self.status})"

    def waiting_too_long(self, now: datetime) -> bool:
        """A soft eviction still pending, the cluster's last word ``waiting`` (the pod is
        labelled, its owner has not deleted it), made ``SOFT_EVICTION_WAIT_WARNING_SECONDS``
        ago or more: nothing may ever act on the label (no controller watches it)."""
        return (
            self.soft
            and self.status == EvictionStatus.PENDING
            and self.cluster_status == ClusterStatus.WAITING
            and now - self.created_at
            >= timedelta(seconds=settings.SOFT_EVICTION_WAIT_WARNING_SECONDS)
        )
