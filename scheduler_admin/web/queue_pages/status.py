"""What the queue page shows that changes while it is open: usage against guaranteed and max,
and the quota timer with the run it started. Built here for the page (``views.queue_detail``)
and for its live updates (``web.live``), so both read the same numbers from the same queries.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from preemption import resources
from preemption.config import QueueConfig
from preemption.hierarchy import Hierarchy
from scheduler_admin.cluster.adapters import usage_of_queues
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.bars import OVER, queue_bars
from scheduler_admin.web.dashboard.tree import Timer, queue_runs
from scheduler_admin.web.queue_pages import tables


def pending_timer(partition: Partition, path: str) -> QuotaTimer | None:
    return QuotaTimer.objects.filter(
        partition=partition, queue_path=path, status=TimerStatus.PENDING
    ).first()


def usage_status(partition: Partition, hierarchy: Hierarchy, queue: QueueConfig) -> dict[str, Any]:
    """The usage card: one bar per resource (``web.bars``, the dashboard's), the exact numbers
    beside them, and whether the queue is over its effective max (``over``: the resources that
    are).

    Usage is read for the queue's subtree only (``usage_of_queues``: the usage summary on
    PostgreSQL, root's from the partition's totals), then rolled up by the engine's hierarchy;
    pending asks are summed from the subtree's waiting asks. A type only asked for gets a bar too
    (zero usage), as the tables get a column for it.
    """
    path = queue.path
    usage = usage_of_queues(partition, hierarchy, [path])[path]
    pending: dict[str, int] = {}
    asks = tables.ask_queryset(partition, path)
    for amounts in asks.values_list("resources", flat=True).iterator(chunk_size=5000):
        pending = resources.add(pending, amounts)
    bars = queue_bars(hierarchy, path, {**dict.fromkeys(pending, 0), **usage})
    return {
        "bars": bars,
        "numbers": [
            {
                "bar": bar,
                "pending": pending.get(bar.resource, 0),
                "own_max": queue.max.get(bar.resource),
            }
            for bar in bars
        ],
        "over": [bar.resource for bar in bars if bar.level == OVER],
        "limited": any(bar.limit is not None for bar in bars),
    }


def timer_status(
    partition: Partition, path: str, now: datetime, *, user: object | None = None
) -> dict[str, Any]:
    """The quota timer card: the pending timer (the row, and its countdown), else the queue's
    current or just-ended run (``tree.queue_runs``; one ``user`` may read, when given)."""
    timer = pending_timer(partition, path)
    return {
        "timer": timer,
        "countdown": Timer.of(timer, now) if timer is not None else None,
        "run": queue_runs(partition, now, path, user=user).get(path),
    }


def live_state(usage: dict[str, Any], timer: dict[str, Any]) -> dict[str, Any]:
    """The numbers the live updates report and compare (exact integers, no rendered text)."""
    return {
        "over_max": bool(usage["over"]),
        "usage": [
            {**row["bar"].state(), "pending": row["pending"], "own_max": row["own_max"]}
            for row in usage["numbers"]
        ],
        "timer": timer["countdown"].state() if timer["countdown"] else None,
        "run": timer["run"].state() if timer["run"] else None,
    }
