"""Preemption runs: created by the sweeps, claimed by one worker, executed resumably (SPEC 5).

Lifecycle of a run:

1. **Created** ``pending`` by ``sweep_due_quota_timers`` (a timer fell due and the engine says
   run) or ``sweep_pending_asks`` (an ask's policy found victims). A sweep decides on a state it
   read earlier, and another sweeper (a second beat, or a sweep slower than its period) may have
   started runs since; so the rules that depend on other runs are decided again in the database
   at the moment the run is created, under the partition's run-creation lock
   (``_lock_run_creation``): a quota timer is deferred while a run is active on its queue, an
   ancestor or a descendant; an ask whose queue or trigger already has an active run, whose
   earlier victims are still being evicted, or whose planned victims are no longer running gets
   no run (it is planned again on the next sweep). The partial unique index
   ``run_one_active_per_queue`` backs the one-run-per-queue rule, and the timer's own
   ``pending -> fired`` update is conditional, so only one sweeper fires it. A quota sweep reads
   the usage once for all the partition's due timers, then takes the lock once, locks those
   timers and decides and writes them all in that transaction (``decide_due_timers``).
2. **Claimed** by ``execute_run``: the queue's fencing token is raised and copied to the run,
   with a lease. A second worker cannot claim a run whose lease is alive.
3. **Planned** once: the victims are stored as ``RunVictim`` rows, and every explained candidate
   with the facts the decision used and its specific reason as a ``RunCandidate`` row (the
   record the run page, the API and the exports read). A run that is resumed after its worker
   died finds ``planned`` set and never selects again.
4. **Executed**: in chunks of ``RUN_EVICTION_BATCH`` victims, in order, one transaction each
   (``_preempt_chunk``): each victim is marked preempted (once), gets one eviction order (unique
   per allocation) and turns ``preempting``, with one audit event. Every chunk first checks,
   under the run's lock, that the run is still running and the queue's token still the run's
   (``_fence``): a worker that lost its lease, or whose run an admin aborted, writes nothing.
5. **Stopped**, when no longer needed (SPEC 5): before each chunk the run checks again whether
   it is still needed (``_no_longer_needed``): a quota run whose queue is back within its max on
   every type of its target (the max raised or removed, tasks finished; the victims it already
   preempted count as gone), or for which quota preemption is no longer in force (the
   partition's switch, the queue's effective delay 0, the queue deleted); an ask's or a job's
   run whose ask is no longer pending. It then ends ``stopped`` with the reason and preempts
   nothing more; the victims already preempted stay preempted.
6. **Finished** with the plan's outcome. ``reap_stale_runs`` re-enqueues runs whose lease
   expired (the worker died or stalled).
7. **Failed**, when it cannot finish: an attempt that raises records its error and hands the run
   back (its lease ends, so the reaper re-enqueues it); a worker that dies mid-run leaves its
   lease to expire. After ``RUN_MAX_ATTEMPTS`` claims the run ends ``failed`` with the error,
   which releases its queue (and its relatives' timers) instead of blocking them forever. An
   admin can also abort an active run (``abort_run``). Either way the queue's fencing token is
   raised, so a worker still holding the run writes nothing more; victims already preempted
   stay preempted (their eviction orders stand), and the dashboard raises an alert.

Every transaction here takes its locks in the order ``scheduler_admin.base.lock_order`` writes down
(the partition row before the run's row, the run's row before the queue's fencing token), and
is run again when PostgreSQL still ends it as a deadlock victim (``retry_on_conflict``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from preemption import model as engine
from preemption import timers as engine_timers
from preemption.model import Options, Outcome, Plan
from preemption.policies import plan_ask, plan_quota
from scheduler_admin.accounts.permissions import Authorize
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import actor_name, new_event, record_events
from scheduler_admin.base import metrics
from scheduler_admin.base.limits import WORKER_NAME_MAX_LENGTH
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.adapters import load_cluster_state, load_quota_state
from scheduler_admin.cluster.locking import lock_allocations, lock_asks
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, AskState
from scheduler_admin.cluster.usage import ENGINE_STATES, leaf_usage
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunStatus,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.enforcement.record import Described, store_candidates
from scheduler_admin.enforcement.timers import (
    as_engine_timer,
    load_due_state,
    timer_event,
)
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_config, current_tree

logger = logging.getLogger(__name__)


class StaleRun(Exception):
    """The run is no longer this worker's to write: it ended (an admin aborted it, it failed)
    or the queue's fencing token moved on (another worker owns it now)."""


class RunNotFound(Exception):
    """No run with that id (HTTP 404)."""


class RunNotActive(Exception):
    """The run already ended, so it cannot be aborted (HTTP 409)."""


#: Longest error text stored on a run (the full traceback goes to the worker's log).
ERROR_MAX_LENGTH = 2000
#: The ``outcome`` label a stopped run is counted under in the metrics.
STOPPED_OUTCOME = "stopped"


def _enqueue(run_id: int) -> None:
    """Hand the run to a worker once the transaction that created it has committed."""
    from scheduler_admin.enforcement.tasks import execute_run

    execute_run.delay_on_commit(run_id)


def _run_event(
    kind: AuditKind,
    run: PreemptionRun,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> None:
    """Audit one step of a run (``actor`` None: the system acts; names stored as text)."""
    _run_event_row(kind, run, at=at, summary=summary, data=data, actor=actor).save(
        force_insert=True
    )


def _run_event_row(
    kind: AuditKind,
    run: PreemptionRun,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> AuditEvent:
    """The event ``_run_event`` writes, not yet saved (for ``record_events``)."""
    return new_event(
        kind,
        actor=actor,
        at=at,
        partition_name=run.partition.name,
        queue_path=run.queue_path,
        object_type="run",
        object_id=str(run.pk),
        summary=summary,
        data=data,
    )


def active_run_queues(partition: Partition) -> set[str]:
    return set(
        PreemptionRun.objects.filter(
            partition=partition, status__in=ACTIVE_RUN_STATUSES
        ).values_list("queue_path", flat=True)
    )


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
        )
        for row in rows
    )
    record_events(
        _run_event_row(
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
        _enqueue(run.pk)
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
        run = PreemptionRun.objects.create(
            partition=partition,
            policy=plan.policy,
            queue_path=ask.queue,
            trigger=trigger,
            trigger_id=trigger_id,
            created_at=now,
            soft_eviction=soft,
        )
        _store_plan(run, plan, described)
        _reserve_nodes(partition, ask, plan)
        _run_event(
            AuditKind.RUN_STARTED,
            run,
            at=now,
            summary=f"{plan.policy} run {run.pk} for {trigger} {trigger_id}: "
            f"{len(plan.victims)} victims on {plan.node or 'several nodes'}",
            data={"run": run.pk, "policy": str(plan.policy), "victims": list(plan.victims)},
        )
        _enqueue(run.pk)
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


# --------------------------------------------------------------------------------------------
# Executing a run
# --------------------------------------------------------------------------------------------


def execute_run(run_id: int, *, worker: str) -> PreemptionRun | None:
    """Claim, plan (once) and execute the run; returns it, or None if not ours to run.

    Safe to call any number of times: a finished run is left alone, a run owned by a live
    worker is not claimed, and a resumed run continues with the victims already stored. A run
    that is no longer needed stops before its next chunk (``_preempt_victims``) and is not
    finished.
    """
    token = claim_run(run_id, worker=worker)
    if token is None:
        return None
    run = PreemptionRun.objects.select_related("partition").get(pk=run_id)
    try:
        if not run.planned:
            _plan_run(run, token)
        if _preempt_victims(run, token):
            _finish_run(run, token)
    except StaleRun:
        logger.warning(
            "run %s: ended meanwhile (aborted?) or taken over by another worker; stopping "
            "without writing", run_id,
        )  # fmt: skip
        return None
    except Exception as exc:
        # Whatever failed was rolled back with its transaction; the steps done before it stand.
        logger.exception("run %s: attempt %s failed", run_id, run.attempt)
        try:
            _attempt_failed(run, token, f"{type(exc).__name__}: {exc}")
        except StaleRun:
            return None
    run.refresh_from_db()
    return run


@retry_on_conflict
def claim_run(run_id: int, *, worker: str, now: datetime | None = None) -> int | None:
    """Take the run for this worker: raise the queue's fencing token and give the run the new
    value with a fresh lease. Returns the token, or None when the run is finished or another
    worker holds a live lease on it. Locks in the order of ``lock_order``: the partition row
    (shared), the run's row, the queue's fencing token (``_lock_run``, ``_raise_token``)."""
    now = now or timezone.now()
    worker = worker[:WORKER_NAME_MAX_LENGTH]
    with transaction.atomic():
        run = _lock_run(run_id)
        if run is None or run.status not in ACTIVE_RUN_STATUSES:
            return None
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None
        lock = _raise_token(run)
        if run.attempt >= settings.RUN_MAX_ATTEMPTS:
            # Every attempt so far ended without finishing (its worker died, or it raised):
            # a further one would fare no better, and the run blocks its queue meanwhile.
            why = run.error or "each worker stopped before finishing (its lease expired)"
            _end_failed(
                run,
                now,
                f"Gave up after {run.attempt} attempts: {why}",
                kind=AuditKind.RUN_FAILED,
                actor=None,
            )
            return None
        resumed = run.status == RunStatus.RUNNING
        run.status = RunStatus.RUNNING
        run.fence_token = lock.token
        run.lease_expires_at = now + timedelta(seconds=settings.RUN_LEASE_SECONDS)
        run.attempt += 1
        run.worker = worker
        run.started_at = run.started_at or now
        run.save(
            update_fields=[
                "status", "fence_token", "lease_expires_at", "attempt", "worker", "started_at",
            ]
        )  # fmt: skip
        if resumed:
            _run_event(
                AuditKind.RUN_RESUMED,
                run,
                at=now,
                summary=f"Run {run.pk} resumed by {worker} (attempt {run.attempt}) after its "
                "previous worker's lease expired",
                data={"run": run.pk, "attempt": run.attempt, "fence_token": lock.token},
            )
    return lock.token


def _lock_run(run_id: int) -> PreemptionRun | None:
    """Lock order (``lock_order``) levels 2 and 5: the run's partition row, shared, then the
    run's own row (and only it: ``of``, or the partition row would be locked exclusive by the
    join); the run as it is now, or None when there is no such run."""
    partition_id = (
        PreemptionRun.objects.filter(pk=run_id).values_list("partition_id", flat=True).first()
    )
    if partition_id is None:
        return None
    lock_partition(partition_id, exclusive=False)
    return (
        PreemptionRun.objects.select_for_update(of=("self",))
        .select_related("partition")
        .filter(pk=run_id)
        .first()
    )


def _raise_token(run: PreemptionRun) -> QueueLock:
    """Raise the queue's fencing token (inside a transaction, the run's row locked before it:
    ``lock_order`` level 6): whoever held the old value can write nothing more for this queue's
    runs."""
    lock, _ = QueueLock.objects.select_for_update().get_or_create(
        partition=run.partition, queue_path=run.queue_path
    )
    lock.token += 1
    lock.save(update_fields=["token"])
    return lock


@retry_on_conflict
def _attempt_failed(run: PreemptionRun, token: int, error: str) -> None:
    """Record a failed attempt (fenced: only the run's owner may). The last allowed attempt
    ends the run ``failed``; an earlier one gives the run back with an expired lease, so the
    reaper hands it to a worker again (which resumes from the stored victims)."""
    now = timezone.now()
    error = error[:ERROR_MAX_LENGTH]
    with transaction.atomic():
        _fence(run, token, now)
        run.refresh_from_db(fields=["attempt"])
        if run.attempt >= settings.RUN_MAX_ATTEMPTS:
            _raise_token(run)
            message = f"Failed on attempt {run.attempt} of {settings.RUN_MAX_ATTEMPTS}: {error}"
            _end_failed(run, now, message, kind=AuditKind.RUN_FAILED, actor=None)
            return
        PreemptionRun.objects.filter(pk=run.pk).update(error=error, lease_expires_at=now)
        _run_event(
            AuditKind.RUN_ATTEMPT_FAILED,
            run,
            at=now,
            summary=f"Run {run.pk} attempt {run.attempt} of {settings.RUN_MAX_ATTEMPTS} "
            f"failed ({error[:200]}); it will be retried",
            data={"run": run.pk, "attempt": run.attempt, "error": error},
        )


def _end_failed(
    run: PreemptionRun,
    now: datetime,
    error: str,
    *,
    kind: AuditKind,
    actor: AbstractBaseUser | None,
) -> None:
    """End an active run ``failed`` (inside a transaction that raised the token): its queue
    and its relatives are free again. Victims already preempted stay preempted."""
    error = error[:ERROR_MAX_LENGTH]
    PreemptionRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, finished_at=now, lease_expires_at=None, error=error
    )
    preempted = run.victims.filter(preempted_at__isnull=False).count()
    verb = "aborted" if kind == AuditKind.RUN_ABORTED else "failed"
    metrics.run_ended(run, outcome=verb, ended_at=now)
    _run_event(
        kind,
        run,
        actor=actor,
        at=now,
        summary=f"Run {run.pk} of {run.queue_path} {verb} after {preempted} victims: {error}",
        data={"run": run.pk, "error": error, "attempt": run.attempt, "preempted": preempted},
    )


@retry_on_conflict
def abort_run(
    run_id: int,
    *,
    actor: AbstractBaseUser | None,
    reason: str = "",
    authorize: Authorize | None = None,
) -> PreemptionRun:
    """An admin ends an active run: it is marked ``failed`` with who aborted it and why, its
    queue's fencing token is raised (a worker still executing it writes nothing more), and its
    queue is free again. Victims already preempted stay preempted. Raises ``RunNotFound`` or
    ``RunNotActive`` (already ended).

    Locks in the order of ``lock_order``, the order of every write of the worker executing the
    run: ``authorize`` (the in-write authorization) first, on the run's partition (the account,
    then the partition row, shared), then the run's row, then the queue's fencing token. The
    worker's chunk in flight, if any, holds the run's row: the abort waits for it to commit,
    and every later chunk finds the run ended and writes nothing. So once the abort has
    answered, no victim is preempted (SPEC 5: "An admin's abort takes effect before the next
    victim")."""
    now = timezone.now()
    with transaction.atomic():
        partition = Partition.objects.filter(runs__pk=run_id).first()
        if partition is None:
            raise RunNotFound(f"no run {run_id}")
        if authorize is not None:
            authorize(partition, exclusive=False)
        run = _lock_run(run_id)
        if run is None:
            raise RunNotFound(f"no run {run_id}")
        if run.status not in ACTIVE_RUN_STATUSES:
            raise RunNotActive(f"run {run_id} already ended ({run.status})")
        _raise_token(run)
        reason = " ".join(reason.split())
        error = f"Aborted by {actor_name(actor)}" + (f": {reason}" if reason else "")
        _end_failed(run, now, error, kind=AuditKind.RUN_ABORTED, actor=actor)
    run.refresh_from_db()
    return run


def _fence(run: PreemptionRun, token: int, now: datetime) -> None:
    """The first step of every write of the run's worker (plan, each chunk of victims, finish,
    a failed attempt), inside its transaction, in the order of ``lock_order``: the partition
    row, shared; then the run's row, whose status must still be ``running`` (an admin's abort,
    once committed, has ended it: nothing is written after it); the lease is extended (the run
    is alive); then the queue's fencing-token row, which must still hold the run's token (a
    worker that lost its lease writes nothing). Raising rolls the lease back with the rest.

    The run's row stays locked until the write commits, so an abort waits for the chunk in
    flight and every victim of that chunk is preempted before the abort commits, never after.
    The partition row comes first because the chunk's new eviction orders reference it: taken
    after the run's row, it let an abort (which holds the partition row, then wants the run's)
    and the chunk each wait for the other until PostgreSQL killed one of them.
    """
    lock_partition(run.partition_id, exclusive=False)
    status = (
        PreemptionRun.objects.select_for_update()
        .filter(pk=run.pk)
        .values_list("status", flat=True)
        .first()
    )
    if status != RunStatus.RUNNING:
        raise StaleRun(run.pk)
    PreemptionRun.objects.filter(pk=run.pk).update(
        lease_expires_at=now + timedelta(seconds=settings.RUN_LEASE_SECONDS)
    )
    current = (
        QueueLock.objects.select_for_update()
        .filter(partition=run.partition, queue_path=run.queue_path)
        .values_list("token", flat=True)
        .first()
    )
    if current != token:
        raise StaleRun(run.pk)


def _plan_run(run: PreemptionRun, token: int) -> None:
    """First step of a quota run: decide the victims on the current state, describe every
    candidate with its facts (``preemption.explain``, outside the transaction: it may take a
    few seconds on a big plan) and store both under the run's fencing token.

    The state is the narrowed one a quota plan reads (``load_quota_state``: the queue's subtree
    and its guarded ancestors' usage), which gives the plan the whole partition would."""
    now = timezone.now()
    others = active_run_queues(run.partition) - {run.queue_path}
    state = load_quota_state(
        run.partition,
        [run.queue_path],
        running_runs=others,
        config=current_config(run.partition),
    )
    plan = plan_quota(state, run.queue_path, now)
    described = Described.of(state, plan, run.queue_path)
    _store_planned(run, token, plan, described, now)


@retry_on_conflict
def _store_planned(
    run: PreemptionRun, token: int, plan: Plan, described: Described, now: datetime
) -> None:
    """The write of ``_plan_run``, fenced (``_fence``)."""
    with transaction.atomic():
        _fence(run, token, now)
        vanished = _store_plan(run, plan, described)
        _run_event(
            AuditKind.RUN_PLANNED,
            run,
            at=now,
            summary=f"Run {run.pk} planned: {plan.outcome}, {len(plan.victims)} victims",
            data={
                "run": run.pk,
                "outcome": str(plan.outcome),
                "victims": list(plan.victims),
                "targets": {k: dict(v) for k, v in plan.targets.items()},
                "freed": dict(plan.freed),
                "vanished_before_eviction": vanished,
                "fence_token": token,
            },
        )


def _store_plan(run: PreemptionRun, plan: Plan, described: Described) -> list[str]:
    """Store the plan on the run: its victims (``RunVictim``, in the order taken), every
    explained candidate with the facts the decision used (``RunCandidate``, written in bulk by
    ``record.store_candidates``), and the subject's facts. Returns the victims that vanished.

    The cluster keeps pushing state while a run plans: a victim whose allocation was removed in
    between has already freed its resources, so it is left out of the victim list (its candidate
    row says so, and the audit event names it) instead of failing the run. Victims' queue, node
    and resources are those of the state the plan was made on, as every candidate's are.
    """
    present: set[str] = set()
    if plan.victims:
        present = set(
            Allocation.objects.filter(
                partition=run.partition, external_id__in=plan.victims
            ).values_list("external_id", flat=True)
        )
    chosen = {record.candidate: record for record in described.candidates if record.accepted}
    RunVictim.objects.bulk_create(
        [
            RunVictim(
                run=run,
                position=index,
                allocation_id=victim,
                queue_path=chosen[victim].queue,
                node_name=chosen[victim].node,
                resources=dict(chosen[victim].resources),
            )
            for index, victim in enumerate(v for v in plan.victims if v in present)
        ]
    )
    vanished = [victim for victim in plan.victims if victim not in present]
    store_candidates(run, described.candidates, set(vanished))
    run.planned = True
    run.outcome = str(plan.outcome)
    run.node = plan.node or ""
    run.targets = {path: dict(amounts) for path, amounts in plan.targets.items()}
    run.freed = dict(plan.freed)
    run.nominations = dict(plan.nominations)
    run.subject = described.subject
    run.save(
        update_fields=["planned", "outcome", "node", "targets", "freed", "nominations", "subject"]
    )
    return vanished


def _preempt_victims(run: PreemptionRun, token: int) -> bool:
    """Preempt the stored victims not preempted yet, in order, a chunk per transaction; False
    when the run stopped before a chunk because it is no longer needed (``_preempt_chunk``).

    A chunk is ``RUN_EVICTION_BATCH`` victims (one with ``EVICTION_PACING_SECONDS`` set: a paced
    run spreads its evictions one by one, sleeping between them). Each chunk is fenced like a
    single write was (``_fence``: the run still running, lease extended, token checked, once
    per chunk, under the run's lock for the whole chunk) and commits on its own, so a worker
    that dies between chunks leaves every victim either preempted with its order or untouched,
    and the worker that resumes the run takes the rest.

    A chunk that fails for another reason than the fence (a refused insert, say) is rolled back
    whole and done again one victim at a time: the victims before the one that fails are
    preempted, and the error is that victim's, as when every victim was its own transaction.
    """
    pacing = settings.EVICTION_PACING_SECONDS
    size = 1 if pacing else settings.RUN_EVICTION_BATCH
    left = list(run.victims.filter(preempted_at__isnull=True).order_by("position"))
    for start in range(0, len(left), size):
        chunk = left[start : start + size]
        if start and pacing:
            time.sleep(pacing)  # spread evictions out (also lets tests stop a worker mid-run)
        try:
            if not _preempt_chunk(run, chunk, token):
                return False
        except StaleRun:
            raise
        except Exception:
            if len(chunk) == 1:
                raise
            logger.warning("run %s: a chunk of %s victims failed; one by one", run.pk, len(chunk))
            for victim in chunk:
                if not _preempt_chunk(run, [victim], token):
                    return False
    return True


@retry_on_conflict
def _preempt_chunk(run: PreemptionRun, victims: list[RunVictim], token: int) -> bool:
    """Preempt stored victims exactly once, in one transaction under the run's fence: mark
    them, create their eviction orders, turn their allocations ``preempting`` (they no longer
    count towards usage) and audit each, with a few statements for the whole chunk. Returns
    False, having preempted nothing, when the run is no longer needed: it ends ``stopped``.

    0. Fence and re-check (``_fence``, ``_no_longer_needed``): the run must still be running
       with its token, and still needed, judged under the partition lock, on the config as
       saved now and the usage as it is now.
    1. Mark: the victims still unmarked are read and marked (the fence's lock on the queue's
       token row keeps any other writer of this run out until the transaction ends).
    2. Orders: inserted with ``ON CONFLICT DO NOTHING``; a task another run already evicts
       (``eviction_once_per_allocation``) gets no order, stays marked, and is skipped by the
       next steps, as a single victim's failed insert used to be; the chunk goes on.
    3. The allocations of the orders created turn ``preempting`` (locked in id order first, as
       every writer of many allocations locks them, then one update).
    4. One ``victim.preempted`` audit event per order created, as before (one insert).
    """
    by_pk = {victim.pk: victim for victim in victims}
    with transaction.atomic():
        _fence(run, token, timezone.now())
        now = timezone.now()  # after the locks: the moment these victims are really taken
        why = _no_longer_needed(run)
        if why:
            _end_stopped(run, now, why, token)
            return False
        unmarked = RunVictim.objects.filter(pk__in=list(by_pk), preempted_at__isnull=True)
        marked = sorted(unmarked.values_list("pk", flat=True), key=lambda pk: by_pk[pk].position)
        if not marked:
            return True
        RunVictim.objects.filter(pk__in=marked).update(preempted_at=now)
        EvictionOrder.objects.bulk_create(
            [
                EvictionOrder(
                    partition=run.partition,
                    run=run,
                    victim_id=pk,
                    allocation_id=by_pk[pk].allocation_id,
                    node_name=by_pk[pk].node_name,
                    soft=run.soft_eviction,
                    created_at=now,
                    next_attempt_at=now,
                )
                for pk in marked
            ],
            ignore_conflicts=True,
        )
        orders = dict(
            EvictionOrder.objects.filter(victim_id__in=marked).values_list("victim_id", "pk")
        )
        skipped = [by_pk[pk].allocation_id for pk in marked if pk not in orders]
        if skipped:
            # eviction_once_per_allocation: another run already evicts these tasks.
            logger.info("run %s: %s already have an eviction order", run.pk, ", ".join(skipped))
        created = [by_pk[pk] for pk in marked if pk in orders]
        if not created:
            return True
        # In id order, as a cluster-state push locks them (``cluster.locking``).
        lock_allocations(run.partition, [victim.allocation_id for victim in created])
        Allocation.objects.filter(
            partition=run.partition,
            external_id__in=[victim.allocation_id for victim in created],
            state=AllocationState.RUNNING,
        ).update(state=AllocationState.PREEMPTING, state_changed_at=now)
        order_kind = "soft eviction order" if run.soft_eviction else "eviction order"
        record_events(
            [
                new_event(
                    AuditKind.VICTIM_PREEMPTED,
                    actor=None,
                    at=now,
                    partition_name=run.partition.name,
                    queue_path=victim.queue_path,
                    object_type="allocation",
                    object_id=victim.allocation_id,
                    summary=f"Run {run.pk} preempted {victim.allocation_id} on "
                    f"{victim.node_name} ({order_kind} {orders[victim.pk]})",
                    data={
                        "run": run.pk,
                        "allocation": victim.allocation_id,
                        "order": orders[victim.pk],
                        "position": victim.position,
                        "resources": victim.resources,
                        "fence_token": token,
                        **({"soft": True} if run.soft_eviction else {}),
                    },
                )
                for victim in created
            ]
        )
        metrics.victims_preempted(run, created)
    return True


def _no_longer_needed(run: PreemptionRun) -> str:
    """Why the run should stop before its next chunk (SPEC 5 "A run stops when it is no longer
    needed"), "" while it is still needed. Called under the chunk's locks: a config save takes
    the partition row exclusive, so it either committed before this check (which sees the new
    max or switch) or waits for the chunk to commit (``lock_order`` level 2)."""
    if run.policy == engine.PolicyName.QUOTA:
        return _quota_no_longer_needed(run)
    return _ask_no_longer_pending(run)


def _quota_no_longer_needed(run: PreemptionRun) -> str:
    """The quota run's queue as it is now (``timers.quota_run_stop_reason``): the partition's
    switch and the config as saved now, the queue's usage as the engine counts it (running
    tasks of its configured subtree), less the victims this run preempted whose tasks still
    count as running (the cluster reported them running again before it evicted them)."""
    partition = Partition.objects.get(pk=run.partition_id)  # its settings as saved now
    _config, hierarchy = current_tree(partition)
    path = run.queue_path
    target = {name: value for name, value in (run.subject.get("target") or {}).items() if value}
    types = set(target) or {name for amounts in run.targets.values() for name in amounts}
    usage: dict[str, int] = {}
    if path in hierarchy.queues:
        subtree = [queue for queue in hierarchy.queues if _within(queue, path)]
        for summed in leaf_usage(
            partition, names=types, paths=subtree, states=ENGINE_STATES, grouped=False
        ):
            usage = dict(summed.resources)
        for resources in _preempted_but_running(run):
            for name, value in resources.items():
                usage[name] = usage.get(name, 0) - value
    return engine_timers.quota_run_stop_reason(
        hierarchy, path, usage, types, planned_max=run.subject.get("max")
    )


def _preempted_but_running(run: PreemptionRun) -> list[dict[str, int]]:
    """Resources of the tasks of this run's preempted victims that still count as running."""
    taken = run.victims.filter(preempted_at__isnull=False).values("allocation_id")
    return list(
        Allocation.objects.filter(
            partition_id=run.partition_id, external_id__in=taken, state=AllocationState.RUNNING
        ).values_list("resources", flat=True)
    )


def _ask_no_longer_pending(run: PreemptionRun) -> str:
    """An ask's run stops when its ask is no longer pending (scheduled, removed); a job's when
    none of the job's asks is."""
    pending = Ask.objects.filter(partition_id=run.partition_id, state=AskState.PENDING)
    if run.trigger == "job":
        if not pending.filter(job=run.trigger_id).exists():
            return f"job {run.trigger_id} has no pending ask any more"
    elif run.trigger == "ask" and not pending.filter(external_id=run.trigger_id).exists():
        return f"ask {run.trigger_id} is no longer pending"
    return ""


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + ".")


def _end_stopped(run: PreemptionRun, now: datetime, reason: str, token: int) -> None:
    """End the run ``stopped`` with ``reason`` (inside the chunk's fenced transaction): its
    queue and relatives are free again, the victims already preempted stay preempted."""
    preempted = run.victims.filter(preempted_at__isnull=False).count()
    total = run.victims.count()
    PreemptionRun.objects.filter(pk=run.pk).update(
        status=RunStatus.STOPPED, finished_at=now, lease_expires_at=None, stop_reason=reason
    )
    metrics.run_ended(run, outcome=STOPPED_OUTCOME, ended_at=now)
    _run_event(
        AuditKind.RUN_STOPPED,
        run,
        at=now,
        summary=f"Run {run.pk} of {run.queue_path} stopped after {preempted} of {total} "
        f"victims, no longer needed: {reason}",
        data={
            "run": run.pk, "reason": reason, "preempted": preempted, "victims": total,
            "fence_token": token,
        },
    )  # fmt: skip


@retry_on_conflict
def _finish_run(run: PreemptionRun, token: int) -> None:
    now = timezone.now()
    with transaction.atomic():
        _fence(run, token, now)
        PreemptionRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FINISHED, finished_at=now, lease_expires_at=None
        )
        victims = run.victims.count()
        run.refresh_from_db(fields=["outcome"])
        metrics.run_ended(run, outcome=run.outcome, ended_at=now)
        _run_event(
            AuditKind.RUN_FINISHED,
            run,
            at=now,
            summary=f"Run {run.pk} of {run.queue_path} finished: {run.outcome}, "
            f"{victims} victims preempted",
            data={"run": run.pk, "outcome": run.outcome, "victims": victims, "fence_token": token},
        )


# --------------------------------------------------------------------------------------------
# Reaping
# --------------------------------------------------------------------------------------------


def reap_stale_runs(now: datetime | None = None) -> list[int]:
    """Re-enqueue runs whose worker went away: running with an expired lease, or pending for
    longer than a lease (their task message was lost). The claim decides who continues."""
    now = now or timezone.now()
    lease = timedelta(seconds=settings.RUN_LEASE_SECONDS)
    stale = list(
        PreemptionRun.objects.filter(
            Q(status=RunStatus.RUNNING, lease_expires_at__lt=now)
            | Q(status=RunStatus.PENDING, created_at__lt=now - lease)
        ).values_list("pk", flat=True)
    )
    for run_id in stale:
        logger.warning("run %s: lease expired or never claimed; re-enqueueing", run_id)
        _enqueue(run_id)
    return stale
