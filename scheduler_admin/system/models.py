"""Liveness of the background processes, as seen by the dashboard and ``/readyz``."""

from django.db import models

from scheduler_admin.base.limits import WORKER_NAME_MAX_LENGTH


class ProcessKind(models.TextChoices):
    """Which part of the background loop a heartbeat stands for."""

    #: A worker of the default queue (sweeps, runs, the reaper): it ran the heartbeat task.
    WORKER = "worker", "Worker (sweeps and runs)"
    #: A worker of the ``webhooks`` queue (eviction webhook deliveries): it ran the heartbeat
    #: task sent to that queue.
    WEBHOOK_WORKER = "webhook_worker", "Webhook worker"
    #: Celery beat itself, recorded by its scheduler (``system.beat``) while it ticks.
    BEAT = "beat", "Beat"


class WorkerHeartbeat(models.Model):
    """Last time a background process said it was alive; one row per process kind and name.

    A worker's row is written when it runs the heartbeat task that beat sends every 10 s to its
    queue (``scheduler_admin/celery.py``): a recent ``last_seen`` proves the whole loop works
    (beat sent the task, the broker delivered it, the worker ran it against the database). Beat's
    row is written by beat itself (``system.beat.HeartbeatScheduler``), so a stopped beat is told
    apart from stopped workers. A worker that consumes both queues has two rows.
    """

    kind = models.CharField(max_length=20, choices=ProcessKind.choices, default=ProcessKind.WORKER)
    worker = models.CharField(max_length=WORKER_NAME_MAX_LENGTH)
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["-last_seen"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "worker"], name="heartbeat_unique_process"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} ({self.kind}) @ {self.last_seen:%H:%M:%S}"
