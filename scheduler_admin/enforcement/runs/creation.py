"""Creating runs: the two sweeps that start them (SPEC 5, step 1 of ``runs``).

``sweep_due_quota_timers`` turns due quota timers into quota runs; ``sweep_pending_asks`` plans
every waiting ask with its policy and starts a run for each that found victims. A sweep decides
on a state it read earlier, and another sweeper (a second beat, or a sweep slower than its
period) may have started runs since; so the rules that depend on other runs are decided again in
the database at the moment the run is created, under the partition's run-creation lock
(``_lock_run_creation``, level 2 of ``scheduler_admin.base.lock_order``). The partial unique index
``run_one_active_per_queue`` backs the one-run-per-queue rule, and the timer's own
``pending -> fired`` update is conditional, so only one sweeper fires it.

A created run is handed to a worker once its transaction commits (``dispatch.enqueue_run``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from preemption import model as engine
from preemption import timers as engine_timers
from preemption.model import Options, Outcome, Plan
from preemption.policies import plan_ask
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import record_events
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.adapters import load_cluster_state
from scheduler_admin.cluster.locking import lock_asks
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, AskState
from scheduler_admin.enforcement import dispatch
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    TimerStatus,
    active_run_queues,
)
from scheduler_admin.enforcement.record import Described, store_plan
from scheduler_admin.enforcement.runs.events import run_event, run_event_row
from scheduler_admin.enforcement.runs.observing import observes_now
from scheduler_admin.enforcement.timers import as_engine_timer, load_due_state, timer_event
from scheduler_admin.queues.models import Partition

logger = logging.getLogger(__name__)


def _lock_run_creation(partition: Partition) -> None:
    """Serialise run creation within a partition, for the rest of the transaction.

    The race it prevents: two sweepers read the state, one fires a leaf's timer; the other, whose
    list of active runs was read before that run existed, fires the leaf's parent, and both runs
    preempt from the same tasks (over-preemption), or plans an ask on victims the first run just
    took. Checks of other runs made after this lock see every run committed before it, and no
    run can be created in the partition until this transaction ends. The lock is the partition
    row, exclusive (a config save takes it too, briefly; level 2 of ``lock_order``); on SQLite
    the IMMEDIATE transaction already holds the database's single write lock.
    """
    lock_partition(partition.pk, exclusive=True)


def _creation_time(now: datetime) -> datetime:
    """When a run is really created: the moment of the insert, under the run-creation lock,
    not the sweep's ``now`` (taken when the sweep began). A sweep can begin before a related
    run ends and create its run after; stamped with ``now``, the record would show two related
    runs active at once although the database check ran after the first had ended. Never
    earlier than ``now`` (due times are compared with it; tests pass it with a frozen clock)."""
    return max(now, timezone.now())


# --------------------------------------------------------------------------------------------
# Sweeping due quota timers
# --------------------------------------------------------------------------------------------


def sweep_due_quota_timers(now: datetime | None = None) -> list[int]:
    """Handle every pending timer whose ``due_at`` passed; returns the ids of runs created.

    Per partition, the due timers are taken in the engine's order (earliest first, a leaf before
    its ancestors) and each is decided on one state read for the whole sweep: run, defer (a run
    is active on the queue, an ancestor or a descendant), cancel (quota preemption off) or not
    needed (usage within max). A run created in this sweep defers the related timers after it.
    """
    now = now or timezone.now()
    created: list[int] = []
    partitions = Partition.objects.filter(
        timers__status=TimerStatus.PENDING, timers__due_at__lte=now
    ).distinct()
    for partition in partitions:
        created.extend(_sweep_partition_timers(partition, now))
    return created


@dataclass(frozen=True)
class SweepRead:
    """What a sweep read before deciding: the partition's usage per queue and config
    (``timers.load_due_state``), and when (the wall clock, like the runs' ``finished_at``)."""

    at: datetime
    state: engine_timers.DueState


def read_for_sweep(partition: Partition) -> SweepRead:
    """The slow read of a sweep, done before the run-creation lock is taken: one state for all
    the partition's due timers."""
    at = timezone.now()
    return SweepRead(at, load_due_state(partition))


def _sweep_partition_timers(partition: Partition, now: datetime) -> list[int]:
    due = QuotaTimer.objects.filter(
        partition=partition, status=TimerStatus.PENDING, due_at__lte=now
    )
    if not due.exists():
        return []
    read = read_for_sweep(partition)
    try:
        return decide_due_timers(partition, now, read)
    except IntegrityError:
        # run_one_active_per_queue: a run on one of the queues was created without the
        # run-creation lock. Nothing of this sweep was written; the next one decides again.
        logger.warning("partition %s: a run started outside the lock; next sweep", partition)
        return []


@retry_on_conflict
def decide_due_timers(partition: Partition, now: datetime, read: SweepRead) -> list[int]:
    """Decide and write every due timer of the partition in one transaction, under the
    run-creation lock (``_lock_run_creation``); returns the ids of the runs created.

    The state was read before (``read``); what depends on other runs is read under the lock,
    where it is exact: the due timers that are still pending (locked, in the order the config
    service locks them, so another sweeper, an operator's cancel or a config save waits for
    this sweep and then finds them handled), the runs active now (another sweeper's runs
    committed before the lock defer their relatives here, as this sweep's own new runs do),
    and the runs that ended since the read (they changed the usage the decision saw: a timer
    related to one is left pending for the next sweep, on a fresh state). Each timer's outcome
    is then written in bulk: the fired timers and their runs, the first deferral of each
    deferred timer, the timers ended without a run, with their audit events.
    """
    decided = _Decided()
    with transaction.atomic():
        _lock_run_creation(partition)
        rows = list(
            QuotaTimer.objects.select_for_update()
            .filter(partition=partition, status=TimerStatus.PENDING, due_at__lte=now)
            .order_by("due_at", "queue_path", "pk")
        )
        if not rows:
            return []
        by_queue = {}
        for row in rows:
            row.partition = partition  # for the audit events, without a join
            by_queue[row.queue_path] = row
        active = active_run_queues(partition)
        ended_since = set(
            PreemptionRun.objects.filter(partition=partition, finished_at__gt=read.at)
            .values_list("queue_path", flat=True)
            .distinct()
        )
        state = replace(read.state, running_runs=frozenset(active))
        for timer in engine_timers.due_order(as_engine_timer(row) for row in rows):
            row = by_queue[timer.queue]
            decision = engine_timers.decide_due(state, timer)
            if decision == engine_timers.DueDecision.RUN:
                if any(_related(path, row.queue_path) for path in ended_since):
                    logger.info(
                        "timer %s: a related run ended during the sweep; next sweep", row.pk
                    )
                    continue
                decided.fire.append(row)
                active.add(row.queue_path)
                state = state.with_run(row.queue_path)
            elif decision == engine_timers.DueDecision.DEFERRED:
                blockers = sorted(path for path in active if _related(path, row.queue_path))
                decided.defer.append((row, blockers))
            elif decision == engine_timers.DueDecision.CANCELLED:
                decided.end.append((row, TimerStatus.CANCELLED))
            else:
                decided.end.append((row, TimerStatus.NOT_NEEDED))
        created = _fire_timers(partition, decided.fire, now)
        _defer_timers(decided.defer, now)
        _end_timers(decided.end, now)
    return created


@dataclass
class _Decided:
    """A sweep's decisions, in the engine's order, until they are written."""

    fire: list[QuotaTimer] = field(default_factory=list)
    defer: list[tuple[QuotaTimer, list[str]]] = field(default_factory=list)
    end: list[tuple[QuotaTimer, TimerStatus]] = field(default_factory=list)


class SweepRaced(Exception):
    """A locked pending timer was not pending when written: never expected (the transaction
    rolls back, and the next sweep decides again)."""


def _fire_timers(partition: Partition, rows: list[QuotaTimer], now: datetime) -> list[int]:
    """Turn the due timers into pending runs (under the lock, the rows locked): the timers'
    ``pending -> fired`` update stays conditional, one run per timer with its audit event, and
    each run is handed to a worker once the transaction commits."""
    if not rows:
        return []
    created_at = _creation_time(now)
    observe = observes_now(partition)
    fired = QuotaTimer.objects.filter(
        pk__in=[row.pk for row in rows], status=TimerStatus.PENDING
    ).update(status=TimerStatus.FIRED, ended_at=created_at)
    if fired != len(rows):
        raise SweepRaced(f"{len(rows) - fired} locked timers were no longer pending")
    created = PreemptionRun.objects.bulk_create(
        PreemptionRun(
            partition=partition,
            policy=engine.PolicyName.QUOTA,
            queue_path=row.queue_path,
            trigger="quota_timer",
            trigger_id=str(row.pk),
            timer=row,
            created_at=created_at,
            observe=observe,
        )
        for row in rows
    )
    record_events(
        run_event_row(
            AuditKind.RUN_STARTED,
            run,
            at=created_at,
            summary=f"Quota preemption run {run.pk} of {row.queue_path} started "
            f"(timer {row.pk} fell due at {row.due_at:%H:%M:%S} UTC)",
            data={"run": run.pk, "timer": row.pk, "policy": run.policy},
        )
        for run, row in zip(created, rows, strict=True)
    )
    for run in created:
        dispatch.enqueue_run(run.pk)
    return [run.pk for run in created]


def _defer_timers(deferred: list[tuple[QuotaTimer, list[str]]], now: datetime) -> None:
    """Leave the timers pending; record the first deferral of each, not one per sweep."""
    first = [(row, blockers) for row, blockers in deferred if row.deferred_since is None]
    if not first:
        return
    QuotaTimer.objects.filter(
        pk__in=[row.pk for row, _ in first],
        status=TimerStatus.PENDING,
        deferred_since__isnull=True,
    ).update(deferred_since=now)
    record_events(
        timer_event(
            AuditKind.TIMER_DEFERRED,
            row,
            at=now,
            summary=f"Quota timer of {row.queue_path} deferred: a run is active on "
            f"{', '.join(blockers)}",
            data={"timer": row.pk, "blocking_runs_on": blockers},
        )
        for row, blockers in first
    )


def _end_timers(ended: list[tuple[QuotaTimer, TimerStatus]], now: datetime) -> None:
    """End the timers without a run, each with its status and an audit event."""
    for status in (TimerStatus.CANCELLED, TimerStatus.NOT_NEEDED):
        ids = [row.pk for row, end in ended if end == status]
        if ids:
            QuotaTimer.objects.filter(pk__in=ids, status=TimerStatus.PENDING).update(
                status=status, ended_at=now
            )
    record_events(_end_event(row, status, now) for row, status in ended)


def _end_event(row: QuotaTimer, status: TimerStatus, now: datetime) -> AuditEvent:
    if status == TimerStatus.CANCELLED:
        kind, why = AuditKind.TIMER_CANCELLED, "quota preemption is off for it now"
    else:
        kind, why = AuditKind.TIMER_NOT_NEEDED, "its usage is within max"
    return timer_event(
        kind,
        row,
        at=now,
        summary=f"Quota timer of {row.queue_path} ended without a run: {why}",
        data={"timer": row.pk, "status": status},
    )


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


# --------------------------------------------------------------------------------------------
# Sweeping pending asks
# --------------------------------------------------------------------------------------------


def sweep_pending_asks(now: datetime | None = None) -> list[int]:
    """Plan every waiting ask with its policy (SPEC 4.0) and start a run for each that found
    victims. One policy per ask per sweep; a job is planned once for all its asks; an ask whose
    earlier victims are still ``preempting`` waits until they are gone; one that got
    ``does_not_help`` is tried again only after its delay has passed once more."""
    now = now or timezone.now()
    created: list[int] = []
    for partition in Partition.objects.filter(asks__state=AskState.PENDING).distinct():
        created.extend(_sweep_partition_asks(partition, now))
    return created


def _sweep_partition_asks(partition: Partition, now: datetime) -> list[int]:
    waiting = list(
        Ask.objects.filter(partition=partition, state=AskState.PENDING)
        .filter(Q(retry_after__isnull=True) | Q(retry_after__lte=now))
        .order_by("created_at", "external_id")
        .values_list("external_id", "job")
    )
    if not waiting:
        return []
    blocked = _asks_waiting_for_victims(partition)
    active = active_run_queues(partition)
    state = load_cluster_state(partition, running_runs=active)
    options = Options.of(state.settings)  # the partition's own tunables (SPEC 4.3, 4.5)
    created, seen_jobs = [], set()
    for ask_id, job in waiting:
        if ask_id in blocked or (job and job in blocked):
            continue
        if job:
            if job in seen_jobs:
                continue
            seen_jobs.add(job)
        ask = state.asks_by_id.get(ask_id)
        if ask is None or ask.queue in active:
            continue
        plan = plan_ask(state, ask_id, now, options)
        if plan.outcome == Outcome.NOT_TRIGGERED:
            continue
        if plan.outcome == Outcome.DOES_NOT_HELP:
            _retry_later(partition, state, ask, now)
            continue
        run = _start_ask_run(partition, state, ask, plan, now, options)
        if run is not None:
            created.append(run.pk)
            active.add(ask.queue)
            if run.observe:  # observed once per delay, as an ask that preemption cannot help
                _retry_later(partition, state, ask, now)
    return created


def _asks_waiting_for_victims(partition: Partition) -> set[str]:
    """Asks and jobs with an earlier run whose victims are still being evicted."""
    return set(
        EvictionOrder.objects.filter(
            partition=partition, status="pending", run__trigger__in=["ask", "job"]
        ).values_list("run__trigger_id", flat=True)
    )


def _retry_later(
    partition: Partition, state: engine.ClusterState, ask: engine.Ask, now: datetime
) -> None:
    if ask.required_node:
        delay = partition.daemonset_preemption_delay
    else:
        delay = int(state.hierarchy.preemption_delay(ask.queue).value)
    Ask.objects.filter(partition=partition, external_id=ask.id).update(
        retry_after=now + timedelta(seconds=max(delay, 1))
    )


def _start_ask_run(
    partition: Partition,
    state: engine.ClusterState,
    ask: engine.Ask,
    plan: Plan,
    now: datetime,
    options: Options,
) -> PreemptionRun | None:
    """Create a run whose victims are already chosen (the sweep's plan, made on ``state`` with
    ``options``, is the first step), described before the run-creation lock is taken. A job
    run of a partition with ``soft_eviction`` orders its victims softly (SPEC 4.5)."""
    is_job = plan.policy == engine.PolicyName.JOB
    trigger, trigger_id = ("job", ask.job) if is_job else ("ask", ask.id)
    described = Described.of(state, plan, trigger_id or ask.id, options)
    try:
        return _create_ask_run(
            partition, ask, plan, now, described, trigger=trigger, trigger_id=trigger_id,
            soft=is_job and options.soft_eviction,
        )  # fmt: skip
    except IntegrityError:
        return None  # another run on this queue started meanwhile: try on the next sweep


@retry_on_conflict
def _create_ask_run(
    partition: Partition, ask: engine.Ask, plan: Plan, now: datetime, described: Described,
    *, trigger: str, trigger_id: str, soft: bool,
) -> PreemptionRun | None:  # fmt: skip
    """The write of ``_start_ask_run``: under the run-creation lock (the partition row,
    exclusive, then the asks it nominates: ``lock_order`` levels 2 and 9)."""
    with transaction.atomic():
        _lock_run_creation(partition)
        stale = _stale_ask_plan(partition, ask, plan, trigger, trigger_id)
        if stale:
            logger.info("%s %s: no run this sweep: %s", trigger, trigger_id, stale)
            return None
        now = _creation_time(now)
        observe = observes_now(partition)
        run = PreemptionRun.objects.create(
            partition=partition,
            policy=plan.policy,
            queue_path=ask.queue,
            trigger=trigger,
            trigger_id=trigger_id,
            created_at=now,
            soft_eviction=soft,
            observe=observe,
        )
        store_plan(run, plan, described)
        if not observe:  # an observing partition changes no ask
            _reserve_nodes(partition, ask, plan)
        run_event(
            AuditKind.RUN_STARTED,
            run,
            at=now,
            summary=f"{plan.policy} run {run.pk} for {trigger} {trigger_id}: "
            f"{len(plan.victims)} victims on {plan.node or 'several nodes'}",
            data={"run": run.pk, "policy": str(plan.policy), "victims": list(plan.victims)},
        )
        dispatch.enqueue_run(run.pk)
        return run


def _stale_ask_plan(
    partition: Partition, ask: engine.Ask, plan: Plan, trigger: str, trigger_id: str
) -> str:
    """Why a plan made from the sweep's earlier read must not start a run now ("" if it may).

    Checked in the database under ``_lock_run_creation``: another sweeper may have started a run
    for the same ask or queue, or taken some of the same victims, since this sweep read the
    state. The ask is simply planned again on the next sweep, on a fresh state.
    """
    active = PreemptionRun.objects.filter(partition=partition, status__in=ACTIVE_RUN_STATUSES)
    if active.filter(Q(queue_path=ask.queue) | Q(trigger=trigger, trigger_id=trigger_id)).exists():
        return "a run for it or its queue is already active"
    if trigger_id in _asks_waiting_for_victims(partition):
        return "the victims of its earlier run are still being evicted"
    asks = Ask.objects.filter(partition=partition, state=AskState.PENDING)
    asks = asks.filter(job=ask.job) if trigger == "job" else asks.filter(external_id=ask.id)
    if not asks.exists():
        return "it is no longer pending"
    running = Allocation.objects.filter(
        partition=partition, external_id__in=plan.victims, state=AllocationState.RUNNING
    ).count()
    if running != len(set(plan.victims)):
        return "some of its victims are no longer running"
    return ""


def _reserve_nodes(partition: Partition, ask: engine.Ask, plan: Plan) -> None:
    """Inter-queue reserves the node for the ask, priority nominates it, job nominates each."""
    if plan.nominations:
        lock_asks(partition, plan.nominations)  # in id order, as a cluster-state push does
        for ask_id, node in sorted(plan.nominations.items()):
            Ask.objects.filter(partition=partition, external_id=ask_id).update(node=node)
    elif plan.node:
        Ask.objects.filter(partition=partition, external_id=ask.id).update(node=plan.node)
