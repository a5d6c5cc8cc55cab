from __future__ import annotations

from django.utils import timezone

from scheduler_admin.limits import WORKER_NAME_MAX_LENGTH
from scheduler_admin.system.models import WorkerHeartbeat


def record_heartbeat(worker: str) -> WorkerHeartbeat:
    """Upsert the worker's heartbeat row with the current time (the name cut to fit)."""
    worker = worker[:WORKER_NAME_MAX_LENGTH]
    heartbeat, _ = WorkerHeartbeat.objects.update_or_create(
        worker=worker, defaults={"last_seen": timezone.now()}
    )
    return heartbeat
