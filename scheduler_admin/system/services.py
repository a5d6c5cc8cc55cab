from __future__ import annotations

from django.utils import timezone

from scheduler_admin.base.limits import WORKER_NAME_MAX_LENGTH
from scheduler_admin.system.models import ProcessKind, WorkerHeartbeat


def record_heartbeat(worker: str, kind: ProcessKind = ProcessKind.WORKER) -> WorkerHeartbeat:
    """Upsert the process's heartbeat row with the current time (the name cut to fit)."""
    worker = worker[:WORKER_NAME_MAX_LENGTH]
    heartbeat, _ = WorkerHeartbeat.objects.update_or_create(
        kind=kind, worker=worker, defaults={"last_seen": timezone.now()}
    )
    return heartbeat
