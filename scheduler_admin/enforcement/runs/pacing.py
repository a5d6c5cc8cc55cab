"""Pacing (SPEC 5 "Pacing"): a partition's runs together create at most
``max_evictions_per_minute`` eviction orders in any 60 seconds.

The eviction orders are the record: each has its ``created_at``, so the orders of the last
window are counted in the database (``eviction_partition_created``), whichever run or worker made
them. Before a chunk creates orders it takes the partition's pacing lock (a transaction-scoped
advisory lock, taken after the run's fencing-token row: ``lock_order`` level 6b) and asks
``allowance``: how many orders it may create now. Two chunks of different runs of the partition
take the lock in turn, so the second counts the first's orders (the race it prevents: both
count 95 of 100 and each adds 5, going over).

A chunk allowed fewer orders than it has victims creates what it may; one allowed none does not
sleep in the worker: the run is **paused** (``pause``) with ``paced_until``, the moment the
window frees, and its lease set to end then; it is sent again with a countdown of at most the
window (a minute, far inside Redis's visibility timeout), and the reaper re-enqueues it anyway
once that lease has expired if the message is lost (a worker restart). The claim of a paused run
is not a new attempt (``execution.claim_run``). Each chunk re-checks whether the run is still
needed first, so a paced run stops early when the max is raised or usage falls by other means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from scheduler_admin.enforcement import dispatch
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues.models import Partition

#: The window the pace is counted over.
WINDOW = timedelta(seconds=60)
#: The advisory-lock class of the pacing lock (the key's first half; the partition id is the
#: second): any constant no other advisory lock of the product uses.
_PACE_LOCK_CLASS = 27_001


@dataclass(frozen=True)
class Allowance:
    """How many eviction orders a chunk may create now (None: unlimited), and, when none, the
    moment the window frees one (``free_at``)."""

    count: int | None
    free_at: datetime | None = None


def pace_of(partition_id: int) -> int:
    """The partition's ``max_evictions_per_minute`` as saved now (0: unlimited)."""
    pace = Partition.objects.filter(pk=partition_id).values_list(
        "max_evictions_per_minute", flat=True
    )
    return pace.first() or 0


def lock_pace(partition_id: int) -> None:
    """``lock_order`` level 6b: the partition's pacing lock, until the transaction ends.
    SQLite runs one writing transaction at a time already."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_PACE_LOCK_CLASS, partition_id])


def allowance(partition_id: int, pace: int, now: datetime) -> Allowance:
    """What the partition's pace leaves at ``now`` (the pacing lock held): ``pace`` less the
    orders created in ``(now - 60 s, now]``. When the window is full, it frees when the oldest
    of its last ``pace`` orders leaves it, 60 s after that order."""
    if not pace:
        return Allowance(None)
    recent = list(
        EvictionOrder.objects.filter(partition_id=partition_id, created_at__gt=now - WINDOW)
        .order_by("-created_at")
        .values_list("created_at", flat=True)[:pace]
    )
    if len(recent) < pace:
        return Allowance(pace - len(recent))
    return Allowance(0, recent[-1] + WINDOW)


def pause(run: PreemptionRun, until: datetime, now: datetime) -> None:
    """Pause the run (inside its chunk's fenced transaction) until the window frees: its lease
    ends then, and it is sent again with that countdown once the transaction commits."""
    until = max(until, now)
    PreemptionRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        paced_until=until, lease_expires_at=until
    )
    dispatch.enqueue_run(run.pk, countdown=math.ceil((until - now).total_seconds()))


def expected_end(run: PreemptionRun, pace: int, left: int, now: datetime) -> datetime | None:
    """When a paced run should create its last order at the earliest, with ``left`` victims
    still to take (other runs of the partition share the pace, so it may be later): one window
    per ``pace`` victims after the moment it goes on. None when unpaced or nothing is left."""
    if not pace or not left or run.status not in (RunStatus.PENDING, RunStatus.RUNNING):
        return None
    start = max(run.paced_until or now, now)
    return start + WINDOW * (math.ceil(left / pace) - 1)


@dataclass(frozen=True)
class Progress:
    """How far a paced run is: victims preempted of all its victims, and its expected end."""

    preempted: int
    victims: int
    expected_end: datetime | None


def paced_progress(run: PreemptionRun, now: datetime) -> Progress | None:
    """The progress of an active, planned run of a paced partition (the run page, the API);
    None for any other run. Two counts of the run's victims."""
    pace = run.partition.max_evictions_per_minute
    if not pace or not run.planned or run.status not in (RunStatus.PENDING, RunStatus.RUNNING):
        return None
    victims = run.victims.count()
    preempted = run.victims.filter(preempted_at__isnull=False).count()
    return Progress(preempted, victims, expected_end(run, pace, victims - preempted, now))
