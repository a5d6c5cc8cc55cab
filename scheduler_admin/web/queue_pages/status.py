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
from scheduler_admin.cluster.usage import leaf_usage, resource_names
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.dashboard.tree import Timer, queue_runs
from scheduler_admin.web.queue_pages import effective, tables
from scheduler_admin.web.queue_pages.effective import exact_quantity


def pending_timer(partition: Partition, path: str) -> QuotaTimer | None:
    return QuotaTimer.objects.filter(
        partition=partition, queue_path=path, status=TimerStatus.PENDING
    ).first()


def usage_status(partition: Partition, hierarchy: Hierarchy, queue: QueueConfig) -> dict[str, Any]:
    """The usage card: chart rows and geometry, the exact numbers, and whether the queue is over
    its effective max (``over``: the resources that are).

    Usage is summed in the database for the queue's subtree only, then rolled up by the engine's
    hierarchy; pending asks are summed from the subtree's waiting asks.
    """
    path = queue.path
    names = resource_names(partition, hierarchy.config)
    usage = hierarchy.usage_by_queue(leaf_usage(partition, path, names=names)).get(path, {})
    pending: dict[str, int] = {}
    asks = tables.ask_queryset(partition, path)
    for amounts in asks.values_list("resources", flat=True).iterator(chunk_size=5000):
        pending = resources.add(pending, amounts)
    limit = hierarchy.effective_max(path)
    chart = effective.chart_rows(usage, queue.guaranteed, limit, pending)
    return {
        "chart": chart,
        "geometry": effective.chart_geometry(chart),
        "numbers": [
            {
                "resource": item.resource,
                "usage": exact_quantity(usage.get(item.resource), item.resource),
                "pending": exact_quantity(pending.get(item.resource), item.resource),
                "guaranteed": exact_quantity(queue.guaranteed.get(item.resource), item.resource),
                "max": exact_quantity(queue.max.get(item.resource), item.resource),
                "effective_max": exact_quantity(limit.get(item.resource), item.resource),
                "over_max": item.state == "over_max",
            }
            for item in chart
        ],
        "over": [item.resource for item in chart if item.state == "over_max"],
        "limited": bool(limit),
    }


def timer_status(partition: Partition, path: str, now: datetime) -> dict[str, Any]:
    """The quota timer card: the pending timer (the row, and its countdown), else the queue's
    current or just-ended run (``tree.queue_runs``)."""
    timer = pending_timer(partition, path)
    return {
        "timer": timer,
        "countdown": Timer.of(timer, now) if timer is not None else None,
        "run": queue_runs(partition, now, path).get(path),
    }


def live_state(usage: dict[str, Any], timer: dict[str, Any]) -> dict[str, Any]:
    """The numbers the live updates report and compare (exact integers, no rendered text)."""
    return {
        "over_max": bool(usage["over"]),
        "usage": [
            {
                "resource": item.resource,
                "used": item.usage,
                "pending": item.pending,
                "guaranteed": item.guaranteed,
                "max": item.max,
                "state": item.state,
            }
            for item in usage["chart"]
        ],
        "timer": timer["countdown"].state() if timer["countdown"] else None,
        "run": timer["run"].state() if timer["run"] else None,
    }
