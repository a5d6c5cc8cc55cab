"""Answers for the people whose pods get preempted: every run that considered a task (or the
tasks of an application), what it decided and why, and what became of the eviction order;
how often a queue's or an application's tasks were preempted lately; and the applications
preempted most.

Everything is read from the runs' own record (``RunCandidate``, ``RunVictim``,
``EvictionOrder``), never from the cluster as it is now, so a task that is long gone still has
its history. The candidate rows are the entry point: every victim of a run is one of its
accepted candidates (``record.store_plan``), and a candidate row carries the task's queue and
application as they were when the run planned (indexes ``candidate_task_id`` and
``candidate_application``).

**Who sees what.** A queue grant's holder sees the considerations of tasks inside their
subtrees only (the candidate's queue, as the run recorded it), whichever queue's run weighed
them: the point is that a tenant whose pod was evicted by another tenant's ask learns that it
was, and why in the rule's words. What they may not see is that other run: when the run itself
is not readable to them (``visibility.visible_runs``: it weighed tasks of another tenant), the
consideration says so (``run_visible`` false) and leaves out the run's queue and the specific
reason (``detail``, which may name the other tenant's queue and tasks); the reason code, the
decision and the eviction order, all about their own task, stay.

Reads only; no transaction, no audit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet, Subquery

from scheduler_admin.accounts.permissions import User, read_scope, visible_rows
from scheduler_admin.cluster.models import Allocation, Application
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    PreemptionRun,
    RunCandidate,
    RunStatus,
    RunVictim,
)
from scheduler_admin.enforcement.visibility import visible_runs
from scheduler_admin.queues.models import Partition, Queue

#: The windows of "how often was it preempted lately", shortest first.
WINDOWS: tuple[tuple[str, timedelta], ...] = (
    ("24 hours", timedelta(hours=24)),
    ("7 days", timedelta(days=7)),
)
#: The window of the dashboard's "preempted most" and of the per-application metric.
TOP_WINDOW = timedelta(days=7)
#: How many runs a window's count links to (the newest).
RUN_LINKS = 10


@dataclass(frozen=True)
class OrderFacts:
    """A victim's eviction order, and what the cluster said about it."""

    id: int
    status: str
    created_at: datetime
    soft: bool
    outcome: str
    acknowledged_at: datetime | None
    cluster_status: str
    cluster_reason: str
    cluster_code: int | None
    cluster_reported_at: datetime | None

    @property
    def words(self) -> str:
        """What became of the order, in one sentence."""
        if self.status == "acknowledged":
            if self.outcome == "gone":
                return "Acknowledged: the task was already gone, nothing to evict."
            if self.outcome == "evicted":
                return "Acknowledged: the cluster evicted the task."
            return "Acknowledged by the cluster."
        if self.cluster_status == "blocked":
            return "Pending: a disruption budget refuses the eviction for now."
        if self.cluster_status == "failed":
            return "Pending: the cluster failed to evict the task and retries."
        if self.cluster_status == "waiting":
            return "Pending: waiting for the pod's owner to delete it (soft eviction)."
        return "Pending: the cluster has not answered yet."


@dataclass(frozen=True)
class Consideration:
    """One run that considered one task: the run, the verdict on the task and its order."""

    run_id: int
    partition: str
    policy: str
    trigger: str
    #: The run's own queue (the queue it enforced, or the asking task's queue); "" when the
    #: reader may not read the run.
    run_queue: str
    run_status: str
    run_outcome: str
    observe: bool
    created_at: datetime
    #: Whether the reader may open the run's page.
    run_visible: bool
    task: str
    application: str
    queue: str
    node: str
    accepted: bool
    reason: str
    #: The specific reason with its numbers; "" when the reader may not read the run.
    detail: str
    position: int | None
    preempted_at: datetime | None
    order: OrderFacts | None

    @property
    def decision(self) -> str:
        """``preempted``, ``chosen`` (a victim not preempted: see ``decision_words``) or
        ``kept``."""
        if not self.accepted:
            return "kept"
        return "preempted" if self.preempted_at is not None else "chosen"

    @property
    def decision_words(self) -> str:
        """The verdict in a sentence, with what the run did about it."""
        if not self.accepted:
            return "Kept: the run did not take this task."
        victim = f"victim #{self.position}" if self.position else "a victim"
        if self.preempted_at is not None:
            return f"Preempted: {victim} of the run."
        if self.observe or self.run_status == RunStatus.OBSERVED:
            return f"Chosen as {victim}, not evicted: the partition only observes."
        if self.run_status in ACTIVE_RUN_STATUSES:
            return f"Chosen as {victim}; the run has not reached it yet."
        if self.run_status == RunStatus.STOPPED:
            return f"Chosen as {victim}, not evicted: the run stopped, no longer needed."
        if self.run_status == RunStatus.FAILED:
            return f"Chosen as {victim}, not evicted: the run failed or was aborted first."
        return f"Chosen as {victim}, not evicted."


# --- which considerations ---------------------------------------------------------------------


def _scoped(user: User | None, queryset: QuerySet[RunCandidate]) -> QuerySet[RunCandidate]:
    """Candidate rows of tasks inside the reader's subtrees (all for a global reader)."""
    return visible_rows(user, queryset, partition_field="run__partition__name")


def task_considerations(
    partition: Partition, task_id: str, user: User | None
) -> QuerySet[RunCandidate]:
    """The rows of every run of the partition that considered the task, newest run first."""
    rows = RunCandidate.objects.filter(run__partition=partition, candidate=task_id)
    return _scoped(user, rows).order_by("-run__created_at", "-run_id")


def application_considerations(
    partition: Partition, application_id: str, user: User | None
) -> QuerySet[RunCandidate]:
    """The rows of every run of the partition that considered a task of the application,
    newest run first, and within a run by task id."""
    rows = RunCandidate.objects.filter(run__partition=partition, application=application_id)
    return _scoped(user, rows).order_by("-run__created_at", "-run_id", "candidate")


def describe(rows: Iterable[RunCandidate], user: User | None) -> list[Consideration]:
    """The considerations of one page of candidate rows, in their order.

    Steps: read the rows with their runs; the victims (when preempted) and the eviction
    orders of those tasks in those runs, in one query each; which of the runs the reader may
    open (one query); then build each consideration, leaving out what the reader may not see.
    """
    page = list(rows)
    if not page:
        return []
    runs = {
        run.pk: run
        for run in PreemptionRun.objects.select_related("partition")
        .defer("subject", "targets", "freed", "nominations")
        .filter(pk__in={row.run_id for row in page})
    }
    wanted = Q(pk__in=[])
    for row in page:
        wanted |= Q(run_id=row.run_id, allocation_id=row.candidate)
    victims = {
        (victim.run_id, victim.allocation_id): victim
        for victim in RunVictim.objects.filter(wanted).select_related("eviction")
    }
    readable = set(
        visible_runs(user, PreemptionRun.objects.filter(pk__in=runs)).values_list("pk", flat=True)
    )
    found = []
    for row in page:
        run = runs[row.run_id]
        visible = run.pk in readable
        victim = victims.get((row.run_id, row.candidate))
        order = getattr(victim, "eviction", None) if victim is not None else None
        found.append(
            Consideration(
                run_id=run.pk, partition=run.partition.name, policy=run.policy,
                trigger=run.trigger, run_queue=run.queue_path if visible else "",
                run_status=run.status, run_outcome=run.outcome, observe=run.observe,
                created_at=run.created_at, run_visible=visible, task=row.candidate,
                application=row.application, queue=row.queue_path, node=row.node_name,
                accepted=row.accepted, reason=row.reason,
                detail=row.detail if visible else "", position=row.position,
                preempted_at=victim.preempted_at if victim is not None else None,
                order=_order_facts(order) if order is not None else None,
            )
        )  # fmt: skip
    return found


def _order_facts(order: EvictionOrder) -> OrderFacts:
    return OrderFacts(
        id=order.pk, status=order.status, created_at=order.created_at, soft=order.soft,
        outcome=order.outcome, acknowledged_at=order.acknowledged_at,
        cluster_status=order.cluster_status, cluster_reason=order.cluster_reason,
        cluster_code=order.cluster_code, cluster_reported_at=order.cluster_reported_at,
    )  # fmt: skip


# --- how often, lately ------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowCount:
    """How many tasks were preempted in a window, and the newest runs that preempted them."""

    label: str
    since: datetime
    count: int
    #: (run id, whether the reader may open it), newest first, at most ``RUN_LINKS``.
    runs: list[tuple[int, bool]]


def _preempted_since(partition: Partition, user: User | None, since: datetime) -> QuerySet:
    """Victims of the partition preempted since ``since``, inside the reader's subtrees."""
    victims = RunVictim.objects.filter(run__partition=partition, preempted_at__gte=since)
    return visible_rows(user, victims, partition_field="run__partition__name")


def _of_application(victims: QuerySet, application_id: str) -> QuerySet:
    same = RunCandidate.objects.filter(
        run=OuterRef("run"), candidate=OuterRef("allocation_id"), application=application_id
    )
    return victims.filter(Exists(same))


def _of_subtree(victims: QuerySet, path: str) -> QuerySet:
    return victims.filter(Q(queue_path=path) | Q(queue_path__startswith=path + "."))


def preemption_counts(
    partition: Partition,
    user: User | None,
    now: datetime,
    *,
    application: str | None = None,
    queue: str | None = None,
) -> list[WindowCount]:
    """For each of ``WINDOWS``: how many tasks of the application (or of the queue and its
    subtree) were preempted, and the newest runs that did it (index ``victim_preempted_at``)."""
    counts = []
    for label, length in WINDOWS:
        since = now - length
        victims = _preempted_since(partition, user, since)
        if application is not None:
            victims = _of_application(victims, application)
        if queue is not None:
            victims = _of_subtree(victims, queue)
        total = victims.count()
        run_ids = list(
            victims.values_list("run_id", flat=True).order_by("-run_id").distinct()[:RUN_LINKS]
        )
        readable = set(
            visible_runs(user, PreemptionRun.objects.filter(pk__in=run_ids)).values_list(
                "pk", flat=True
            )
        )
        counts.append(WindowCount(label, since, total, [(pk, pk in readable) for pk in run_ids]))
    return counts


@dataclass(frozen=True)
class PreemptedApplication:
    partition: str
    application: str
    queue: str
    count: int


def most_preempted(
    partition: Partition | None,
    user: User | None,
    now: datetime,
    *,
    limit: int = 10,
    window: timedelta = TOP_WINDOW,
) -> list[PreemptedApplication]:
    """The applications whose tasks were preempted most in the window (all partitions when
    ``partition`` is None), most first, then by name; a reader sees their subtrees' only.

    Driven by the victims preempted in the window (index ``victim_preempted_at``); each
    victim's application is read from its own candidate row (the unique ``(run, candidate)``
    index), so no run's other candidates are touched.
    """
    victims = RunVictim.objects.filter(preempted_at__gte=now - window)
    if partition is not None:
        victims = victims.filter(run__partition=partition)
    victims = visible_rows(user, victims, partition_field="run__partition__name")
    application = RunCandidate.objects.filter(
        run=OuterRef("run"), candidate=OuterRef("allocation_id")
    ).values("application")[:1]
    rows = (
        victims.annotate(app=Subquery(application))
        .values("run__partition__name", "app")
        .annotate(count=Count("*"), queue=Min("queue_path"))
        .order_by("-count", "run__partition__name", "app")[:limit]
    )
    return [
        PreemptedApplication(
            row["run__partition__name"], row["app"] or "", row["queue"], row["count"]
        )
        for row in rows
    ]


# --- the search box ---------------------------------------------------------------------------

#: At most this many hits of each kind.
SEARCH_LIMIT = 20


@dataclass(frozen=True)
class TaskHit:
    partition: str
    task: str
    application: str
    queue: str


@dataclass(frozen=True)
class ApplicationHit:
    partition: str
    application: str
    queue: str
    user: str


@dataclass(frozen=True)
class QueueHit:
    partition: str
    path: str


@dataclass(frozen=True)
class SearchResults:
    query: str
    tasks: list[TaskHit]
    applications: list[ApplicationHit]
    #: Applications whose user is exactly the query.
    users: list[ApplicationHit]
    queues: list[QueueHit]

    @property
    def empty(self) -> bool:
        return not (self.tasks or self.applications or self.users or self.queues)


def search(query: str, user: User | None) -> SearchResults:
    """Tasks and applications whose id starts with ``query`` (in the runs' record and in the
    cluster as it is now), applications of the user named exactly ``query``, and queues whose
    path contains it, in the partitions and subtrees the reader may read; at most
    ``SEARCH_LIMIT`` of each, by partition and id."""
    scope = read_scope(user)

    def scoped(queryset: QuerySet, partition_field: str, path_field: str) -> QuerySet:
        return queryset if scope is None else queryset.filter(scope.q(partition_field, path_field))

    tasks: dict[tuple[str, str], TaskHit] = {}
    recorded = scoped(
        RunCandidate.objects.filter(candidate__startswith=query),
        "run__partition__name", "queue_path",
    )  # fmt: skip
    for name, task, app, queue in (
        recorded.values_list("run__partition__name", "candidate", "application", "queue_path")
        .order_by("run__partition__name", "candidate")
        .distinct()[: SEARCH_LIMIT * 2]
    ):
        tasks.setdefault((name, task), TaskHit(name, task, app, queue))
    running = scoped(
        Allocation.objects.filter(external_id__startswith=query),
        "partition__name", "queue_path",
    )  # fmt: skip
    for name, task, app, queue in running.values_list(
        "partition__name", "external_id", "application__external_id", "queue_path"
    ).order_by("partition__name", "external_id")[:SEARCH_LIMIT]:
        tasks.setdefault((name, task), TaskHit(name, task, app, queue))

    applications: dict[tuple[str, str], ApplicationHit] = {}
    for name, app, queue in (
        scoped(
            RunCandidate.objects.filter(application__startswith=query),
            "run__partition__name",
            "queue_path",
        )
        .values_list("run__partition__name", "application", "queue_path")
        .order_by("run__partition__name", "application")
        .distinct()[: SEARCH_LIMIT * 2]
    ):
        applications.setdefault((name, app), ApplicationHit(name, app, queue, ""))
    current = scoped(Application.objects.all(), "partition__name", "queue_path")
    for name, app, queue, owner in current.filter(external_id__startswith=query).values_list(
        "partition__name", "external_id", "queue_path", "user"
    )[:SEARCH_LIMIT]:
        applications[(name, app)] = ApplicationHit(name, app, queue, owner)
    users = [
        ApplicationHit(name, app, queue, owner)
        for name, app, queue, owner in current.filter(user=query)
        .values_list("partition__name", "external_id", "queue_path", "user")
        .order_by("partition__name", "external_id")[:SEARCH_LIMIT]
    ]
    queues = [
        QueueHit(name, path)
        for name, path in scoped(
            Queue.objects.filter(path__icontains=query), "partition__name", "path"
        )
        .values_list("partition__name", "path")
        .order_by("partition__name", "path")[:SEARCH_LIMIT]
    ]
    return SearchResults(
        query=query,
        tasks=_first(sorted(tasks.values(), key=lambda hit: (hit.partition, hit.task))),
        applications=_first(
            sorted(applications.values(), key=lambda hit: (hit.partition, hit.application))
        ),
        users=users,
        queues=queues,
    )


def _first(items: Sequence) -> list:
    return list(items[:SEARCH_LIMIT])
