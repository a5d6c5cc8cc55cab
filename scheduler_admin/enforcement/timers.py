"""Quota timers in the database: started, reset and cancelled by saved config changes (SPEC 4.1).

The rules themselves are the engine's (``preemption.timers.timers_after_save``); this module
loads the pending rows, asks the engine for the new set, and writes the difference with an audit
event per timer. It runs inside the config service's transaction, so a change and its timers are
saved together or not at all.

It also gives the sweep of due timers (``runs.creation.sweep_due_quota_timers``) what it decides on,
``load_due_state``: the config and the usage per queue summed in the database, not the tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from preemption import timers as engine
from preemption.config import PartitionConfig
from preemption.durations import format_duration
from scheduler_admin.accounts.permissions import Authorize
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import actor_name, new_event
from scheduler_admin.base.errors import NotFound
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.dynamic import cluster_tree
from scheduler_admin.cluster.usage import ENGINE_STATES, leaf_usage, names_to_sum
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues.models import Partition


class TimerNotFound(NotFound):
    """No pending timer with that id (HTTP 404)."""


def as_engine_timer(row: QuotaTimer) -> engine.QuotaTimer:
    return engine.QuotaTimer(
        queue=row.queue_path, started_at=row.started_at, due_at=row.due_at, delay=row.delay_seconds
    )


def apply_config_change(
    partition: Partition,
    before: PartitionConfig,
    after: PartitionConfig,
    *,
    at: datetime,
    actor: AbstractBaseUser | None,
    revision_number: int,
) -> None:
    """Start, reset or cancel the partition's timers for one saved change (in its transaction)."""
    rows = {
        row.queue_path: row
        for row in QuotaTimer.objects.select_for_update().filter(
            partition=partition, status=TimerStatus.PENDING
        )
    }
    pending = {path: as_engine_timer(row) for path, row in rows.items()}
    wanted = engine.timers_after_save(before, after, pending, at)

    for path, row in rows.items():
        if wanted.get(path) == pending[path]:
            continue
        row.status = TimerStatus.CANCELLED if path not in wanted else TimerStatus.SUPERSEDED
        row.ended_at = at
        row.save(update_fields=["status", "ended_at"])
        if path not in wanted:
            _record(AuditKind.TIMER_CANCELLED, row, actor, at, "cancelled by the change")
    for path, timer in sorted(wanted.items()):
        if pending.get(path) == timer:
            continue
        row = QuotaTimer.objects.create(
            partition=partition,
            queue_path=path,
            started_at=timer.started_at,
            due_at=timer.due_at,
            delay_seconds=timer.delay,
            revision_number=revision_number,
        )
        kind = AuditKind.TIMER_RESET if path in pending else AuditKind.TIMER_STARTED
        verb = "reset" if path in pending else "started"
        _record(kind, row, actor, at, f"{verb}: due in {format_duration(timer.delay)}")


@retry_on_conflict
def cancel_timer(
    timer_id: int,
    *,
    actor: AbstractBaseUser | None,
    partition: Partition | None = None,
    comment: str = "",
    authorize: Authorize | None = None,
) -> QuotaTimer:
    """An operator stops a pending timer before it falls due (audited, with their optional
    ``comment`` saying why). With ``partition``, a timer of another partition counts as
    unknown: callers that reached it through a partition's URL can never cancel another
    partition's timer, even if their own lookup were wrong.

    ``authorize`` (with ``partition``) runs first in the transaction: it checks the account and
    locks the partition row (shared), before the timer's row, as a config save and a sweep lock
    the partition before they lock timers: the order of ``lock_order``, so none of them waits
    for another in the opposite order (``accounts.permissions.authorizer``)."""
    now = timezone.now()
    comment = " ".join(comment.split())  # one line in the audit summary and its exports
    with transaction.atomic():
        if authorize is not None:
            if partition is None:
                raise ValueError("authorize needs the timer's partition")
            authorize(partition, exclusive=False)
        else:
            timers = QuotaTimer.objects.filter(id=timer_id)
            partition_id = (
                partition.pk
                if partition is not None
                else timers.values_list("partition_id", flat=True).first()
            )
            if partition_id is not None:
                lock_partition(partition_id, exclusive=False)
        pending = QuotaTimer.objects.select_for_update().select_related("partition")
        if partition is not None:
            pending = pending.filter(partition=partition)
        row = pending.filter(id=timer_id, status=TimerStatus.PENDING).first()
        if row is None:
            raise TimerNotFound(f"no pending timer {timer_id}")
        row.status = TimerStatus.CANCELLED
        row.ended_at = now
        row.save(update_fields=["status", "ended_at"])
        what = f"cancelled by {actor_name(actor)}" + (f": {comment}" if comment else "")
        _record(AuditKind.TIMER_CANCELLED, row, actor, now, what, comment=comment)
    return row


def load_due_state(partition: Partition, *, running_runs: Iterable[str] = ()) -> engine.DueState:
    """What ``engine.decide_due`` reads, for every timer of one sweep: the config, the usage of
    every queue as the engine counts it, and the queues with a run in progress.

    The config is the saved one parsed once per revision (``queues.saved``); the usage is summed
    per queue in the database (``cluster.usage.leaf_usage``, from the usage summary on
    PostgreSQL) in the engine's states (``preempting`` tasks count as gone, SPEC 4.0) and rolled
    up by the engine's hierarchy: loading the 200,000 tasks of a large partition to add them up
    again in Python took seconds, and the decisions read nothing else of them.
    """
    config, hierarchy, _ = cluster_tree(partition)  # dynamic queues count in their ancestors
    live = leaf_usage(partition, names=names_to_sum(partition, config), states=ENGINE_STATES)
    return engine.DueState(hierarchy, hierarchy.usage_by_queue(live), frozenset(running_runs))


def timer_event(
    kind: AuditKind,
    row: QuotaTimer,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> AuditEvent:
    """The audit event of one thing that happened to a timer (``actor`` None: the system's
    sweep), not yet saved: a sweep writes many at once with ``audit.services.record_events``."""
    return new_event(
        kind,
        actor=actor,
        at=at,
        partition_name=row.partition.name,
        queue_path=row.queue_path,
        object_type="timer",
        object_id=str(row.pk),
        summary=summary,
        data=data,
    )


def record_timer_event(
    kind: AuditKind,
    row: QuotaTimer,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> None:
    """Audit one thing that happened to a timer (``actor`` None: the system's sweep)."""
    timer_event(kind, row, at=at, summary=summary, data=data, actor=actor).save(force_insert=True)


def _record(
    kind: AuditKind,
    row: QuotaTimer,
    actor: AbstractBaseUser | None,
    at: datetime,
    what: str,
    *,
    comment: str = "",
) -> None:
    record_timer_event(
        kind,
        row,
        actor=actor,
        at=at,
        summary=f"Quota timer of {row.queue_path} {what} (due {row.due_at:%Y-%m-%d %H:%M:%S} UTC)",
        data={
            "timer": row.pk,
            "due_at": row.due_at.isoformat(),
            "delay_seconds": row.delay_seconds,
            "status": row.status,
            **({"comment": comment} if comment else {}),
        },
    )
