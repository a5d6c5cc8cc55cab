"""Executing a run: claim, plan once, preempt the victims in chunks, finish (SPEC 5, steps 2-4
and 6 of ``runs``).

``execute_run`` is what the worker's task calls. It claims the run (``claim_run``: the queue's
fencing token is raised and copied to the run, with a lease), plans it once if the sweep did not
(a quota run: ``_plan_run``), then preempts the stored victims a chunk per transaction
(``_preempt_chunk``), each chunk fenced (``fencing.fence``) and first checking the run is still
needed (``stopping.no_longer_needed``). An attempt that raises is handed to
``failure.attempt_failed``.

Every transaction here takes its locks in the order ``scheduler_admin.base.lock_order`` writes down
and is run again when PostgreSQL still ends it as a deadlock victim (``retry_on_conflict``).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from preemption.explain import collector_paused
from preemption.model import Plan
from preemption.policies import plan_quota
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import new_event, record_events
from scheduler_admin.base import metrics
from scheduler_admin.base.limits import WORKER_NAME_MAX_LENGTH
from scheduler_admin.base.lock_order import retry_on_conflict
from scheduler_admin.cluster.adapters import load_quota_state
from scheduler_admin.cluster.locking import lock_allocations
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    PreemptionRun,
    RunStatus,
    RunVictim,
    active_run_queues,
)
from scheduler_admin.enforcement.record import Described, store_plan
from scheduler_admin.enforcement.runs import pacing
from scheduler_admin.enforcement.runs.events import run_event
from scheduler_admin.enforcement.runs.failure import attempt_failed, end_failed
from scheduler_admin.enforcement.runs.fencing import StaleRun, fence, lock_run, raise_token
from scheduler_admin.enforcement.runs.observing import end_observed
from scheduler_admin.enforcement.runs.orders import insert_orders
from scheduler_admin.enforcement.runs.stopping import end_stopped, no_longer_needed
from scheduler_admin.queues.saved import current_config

logger = logging.getLogger(__name__)


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
        if run.observe:  # the partition only observed when the run was created: evict nothing
            end_observed(run, token)
        elif _preempt_victims(run, token):
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
            attempt_failed(run, token, f"{type(exc).__name__}: {exc}")
        except StaleRun:
            return None
    run.refresh_from_db()
    return run


@retry_on_conflict
def claim_run(run_id: int, *, worker: str, now: datetime | None = None) -> int | None:
    """Take the run for this worker: raise the queue's fencing token and give the run the new
    value with a fresh lease. Returns the token, or None when the run is finished or another
    worker holds a live lease on it. Locks in the order of ``lock_order``: the partition row
    (shared), the run's row, the queue's fencing token (``fencing.lock_run``,
    ``fencing.raise_token``)."""
    now = now or timezone.now()
    worker = worker[:WORKER_NAME_MAX_LENGTH]
    with transaction.atomic():
        run = lock_run(run_id)
        if run is None or run.status not in ACTIVE_RUN_STATUSES:
            return None
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None
        lock = raise_token(run)
        if run.paced_until is not None:
            # A run its partition's pace paused (``pacing.pause``) goes on: not a new attempt.
            return _go_on_paced(run, lock.token, now, worker)
        if run.attempt >= settings.RUN_MAX_ATTEMPTS:
            # Every attempt so far ended without finishing (its worker died, or it raised):
            # a further one would fare no better, and the run blocks its queue meanwhile.
            why = run.error or "each worker stopped before finishing (its lease expired)"
            end_failed(
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
            run_event(
                AuditKind.RUN_RESUMED,
                run,
                at=now,
                summary=f"Run {run.pk} resumed by {worker} (attempt {run.attempt}) after its "
                "previous worker's lease expired",
                data={"run": run.pk, "attempt": run.attempt, "fence_token": lock.token},
            )
    return lock.token


def _go_on_paced(run: PreemptionRun, token: int, now: datetime, worker: str) -> int:
    """The claim of a paused run (in ``claim_run``'s transaction, its token raised): a fresh
    lease and the new token, the pause cleared, the attempt count unchanged."""
    PreemptionRun.objects.filter(pk=run.pk).update(
        fence_token=token,
        lease_expires_at=now + timedelta(seconds=settings.RUN_LEASE_SECONDS),
        worker=worker,
        paced_until=None,
    )
    return token


def _plan_run(run: PreemptionRun, token: int) -> None:
    """First step of a quota run: decide the victims on the current state, describe every
    candidate with its facts (``preemption.explain``) and store both under the run's fencing
    token. The candidates are explained while they are written (``Described.while_stored``):
    for 100,000 of them the database stores rows as the next ones are made, which takes about
    as long as the write alone, instead of the explanation (a second or so) and then the write.

    The state is the narrowed one a quota plan reads (``load_quota_state``: the queue's subtree
    and its guarded ancestors' usage), which gives the plan the whole partition would."""
    now = timezone.now()
    others = active_run_queues(run.partition) - {run.queue_path}
    with collector_paused():  # nothing made here forms a cycle (``explain.collector_paused``)
        state = load_quota_state(
            run.partition,
            [run.queue_path],
            running_runs=others,
            config=current_config(run.partition),
        )
        plan = plan_quota(state, run.queue_path, now)
    described = Described.while_stored(state, plan, run.queue_path)
    _store_planned(run, token, plan, described, now)


@retry_on_conflict
def _store_planned(
    run: PreemptionRun, token: int, plan: Plan, described: Described, now: datetime
) -> None:
    """The write of ``_plan_run``, fenced (``fencing.fence``)."""
    with transaction.atomic():
        fence(run, token, now)
        vanished = store_plan(run, plan, described)
        run_event(
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


def _preempt_victims(run: PreemptionRun, token: int) -> bool:
    """Preempt the stored victims not preempted yet, in order, a chunk per transaction; False
    when the run stopped before a chunk because it is no longer needed (``_preempt_chunk``).

    A chunk is ``RUN_EVICTION_BATCH`` victims (one with ``EVICTION_PACING_SECONDS`` set: a paced
    run spreads its evictions one by one, sleeping between them). Each chunk is fenced like a
    single write was (``fencing.fence``: the run still running, lease extended, token checked, once
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
    False, having preempted nothing, when the run is no longer needed: it ends ``stopped``; and
    False when the partition's pace paused it (``pacing``), having preempted what the pace left.

    0. Fence and re-check (``fencing.fence``, ``stopping.no_longer_needed``): the run must
       still be running with its token, and still needed, judged under the partition lock, on
       the config as saved now and the usage as it is now.
    1. Mark: the victims still unmarked are read and marked (the fence's lock on the queue's
       token row keeps any other writer of this run out until the transaction ends).
    2. Orders: inserted with ``ON CONFLICT DO NOTHING``; a task another run already evicts
       (``eviction_once_per_allocation``) gets no order, stays marked, and is skipped by the
       next steps, as a single victim's failed insert used to be; the chunk goes on.
    3. The allocations of the orders created turn ``preempting`` (locked in id order first, as
       every writer of many allocations locks them, then one update).
    4. One ``victim.preempted`` audit event per order created, as before (one insert).

    With a pace (``max_evictions_per_minute``), steps 1 to 4 (``_create_orders``) take only the
    victims the partition's last minute leaves room for, under the pacing lock; the run then
    pauses until the window frees and goes on in a later claim.
    """
    by_pk = {victim.pk: victim for victim in victims}
    with transaction.atomic():
        fence(run, token, timezone.now())
        now = timezone.now()  # after the locks: the moment these victims are really taken
        why = no_longer_needed(run)
        if why:
            end_stopped(run, now, why, token)
            return False
        unmarked = RunVictim.objects.filter(pk__in=list(by_pk), preempted_at__isnull=True)
        marked = sorted(unmarked.values_list("pk", flat=True), key=lambda pk: by_pk[pk].position)
        if not marked:
            return True
        pace = pacing.pace_of(run.partition_id)
        if pace:  # SPEC 5 "Pacing": only what the partition's last minute leaves
            pacing.lock_pace(run.partition_id)
            now = timezone.now()  # after the pacing lock: the orders' time, counted by others
            allowed = pacing.allowance(run.partition_id, pace, now)
            if allowed.count is not None and allowed.count < len(marked):
                _create_orders(run, token, [by_pk[pk] for pk in marked[: allowed.count]], now)
                full = pacing.allowance(run.partition_id, pace, now)  # the window is full now
                pacing.pause(run, full.free_at or now + pacing.WINDOW, now)
                return False
        _create_orders(run, token, [by_pk[pk] for pk in marked], now)
    return True


def _create_orders(run: PreemptionRun, token: int, chosen: list[RunVictim], now: datetime) -> None:
    """Steps 1 to 4 of ``_preempt_chunk`` for the victims ``chosen`` (unmarked, in order)."""
    if not chosen:
        return
    by_pk = {victim.pk: victim for victim in chosen}
    marked = [victim.pk for victim in chosen]
    RunVictim.objects.filter(pk__in=marked).update(preempted_at=now)
    insert_orders(run, chosen, now)
    orders = dict(EvictionOrder.objects.filter(victim_id__in=marked).values_list("victim_id", "pk"))
    skipped = [by_pk[pk].allocation_id for pk in marked if pk not in orders]
    if skipped:
        # eviction_once_per_allocation: another run already evicts these tasks.
        logger.info("run %s: %s already have an eviction order", run.pk, ", ".join(skipped))
    created = [by_pk[pk] for pk in marked if pk in orders]
    if not created:
        return
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


@retry_on_conflict
def _finish_run(run: PreemptionRun, token: int) -> None:
    now = timezone.now()
    with transaction.atomic():
        fence(run, token, now)
        PreemptionRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FINISHED, finished_at=now, lease_expires_at=None
        )
        victims = run.victims.count()
        run.refresh_from_db(fields=["outcome"])
        metrics.run_ended(run, outcome=run.outcome, ended_at=now)
        run_event(
            AuditKind.RUN_FINISHED,
            run,
            at=now,
            summary=f"Run {run.pk} of {run.queue_path} finished: {run.outcome}, "
            f"{victims} victims preempted",
            data={"run": run.pk, "outcome": run.outcome, "victims": victims, "fence_token": token},
        )
