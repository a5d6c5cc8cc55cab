"""Liveness of the background processes, as seen by the dashboard."""

from django.db import models

from scheduler_admin.limits import WORKER_NAME_MAX_LENGTH


class WorkerHeartbeat(models.Model):
    """Last time a worker ran the beat-scheduled heartbeat task.

    One row per worker hostname. A recent ``last_seen`` proves the whole loop works: beat sent
    the task, the broker delivered it and a worker ran it against the database.
    """

    worker = models.CharField(max_length=WORKER_NAME_MAX_LENGTH, unique=True)
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return f"{self.worker} @ {self.last_seen:%H:%M:%S}"
