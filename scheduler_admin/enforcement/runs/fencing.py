"""Whether a worker may still write for a run: the run's row and its queue's fencing token
(SPEC 5).

A claim raises the queue's token and copies it to the run (``raise_token``); an abort or a final
failure raises it again. Every write of the run's worker begins with ``fence``, which checks,
under the run's lock, that the run is still running and the token still the run's: a worker
that lost its lease, or whose run an admin aborted, writes nothing (``StaleRun``).

The locks are taken in the order ``scheduler_admin.base.lock_order`` writes down: the partition row
(level 2, shared), then the run's row (level 5), then the queue's fencing-token row (level 6).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from scheduler_admin.base.lock_order import lock_partition
from scheduler_admin.enforcement.models import PreemptionRun, QueueLock, RunStatus


class StaleRun(Exception):
    """The run is no longer this worker's to write: it ended (an admin aborted it, it failed)
    or the queue's fencing token moved on (another worker owns it now)."""


def lock_run(run_id: int) -> PreemptionRun | None:
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


def raise_token(run: PreemptionRun) -> QueueLock:
    """Raise the queue's fencing token (inside a transaction, the run's row locked before it:
    ``lock_order`` level 6): whoever held the old value can write nothing more for this queue's
    runs."""
    lock, _ = QueueLock.objects.select_for_update().get_or_create(
        partition=run.partition, queue_path=run.queue_path
    )
    lock.token += 1
    lock.save(update_fields=["token"])
    return lock


def fence(run: PreemptionRun, token: int, now: datetime) -> None:
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
