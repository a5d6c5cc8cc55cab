"""Pages of the console. Views only read and render; writes go through the services."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from preemption import resources
from preemption.durations import format_duration
from preemption.hierarchy import Hierarchy
from scheduler_admin.cluster.adapters import queue_usage
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, TimerStatus
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.system.models import WorkerHeartbeat

#: A worker whose heartbeat is older than this is shown as not running.
HEARTBEAT_STALE_AFTER = timedelta(seconds=30)


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """Partitions with their queue trees and effective settings, recent revisions, worker state."""
    now = timezone.now()
    partitions = []
    for partition in Partition.objects.prefetch_related("queues"):
        config = partition.current_config()
        hierarchy = Hierarchy(config)
        usage = queue_usage(partition)
        timers = {
            timer.queue_path: timer
            for timer in QuotaTimer.objects.filter(partition=partition, status=TimerStatus.PENDING)
        }
        rows = []
        for queue in config.queues:
            policy = hierarchy.effective_policy(queue.path)
            quota_delay = hierarchy.effective_quota_delay(queue.path)
            used = usage.get(queue.path, {})
            rows.append(
                {
                    "path": queue.path,
                    "name": queue.name,
                    "depth": queue.path.count("."),
                    "usage": resources.format_resources(used),
                    "guaranteed": resources.format_resources(queue.guaranteed),
                    "max": resources.format_resources(queue.max),
                    "over_max": bool(resources.over(used, queue.max)),
                    "policy": policy.value,
                    "quota_delay": quota_delay.value,
                    "is_leaf": hierarchy.is_leaf(queue.path),
                    "timer": timers.get(queue.path),
                    "timer_due_in": _due_in(timers.get(queue.path), now),
                }
            )
        partitions.append({"partition": partition, "queues": rows})
    heartbeats = [
        {
            "worker": beat.worker,
            "last_seen": beat.last_seen,
            "alive": now - beat.last_seen < HEARTBEAT_STALE_AFTER,
        }
        for beat in WorkerHeartbeat.objects.all()[:10]
    ]
    revisions = ConfigRevision.objects.select_related("partition").order_by("-created_at")[:10]
    recent_runs = PreemptionRun.objects.select_related("partition").annotate(
        victim_count=Count("victims")
    )[:10]
    return render(
        request,
        "web/dashboard.html",
        {
            "partitions": partitions,
            "heartbeats": heartbeats,
            "revisions": revisions,
            "runs": recent_runs,
            "now": now,
        },
    )


def _due_in(timer: QuotaTimer | None, now: datetime) -> str:
    """Countdown of a pending timer ("45s", "1m30s"); "now" once due (deferred or next sweep)."""
    if timer is None:
        return ""
    seconds = math.ceil((timer.due_at - now).total_seconds())
    return format_duration(seconds) if seconds > 0 else "now"


@login_not_required
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose health checks: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
