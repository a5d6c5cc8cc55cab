"""Beat's own heartbeat: the scheduler records that beat is alive while it ticks.

Workers prove they are alive by running the heartbeat task beat sends them; nothing proved that
beat itself was (a stopped beat only showed as every worker going silent at once, the same as a
broken broker). ``HeartbeatScheduler`` is Celery's default ``PersistentScheduler`` (the schedule
file, the entries of ``scheduler_admin/celery.py``) that also writes its ``beat`` heartbeat row
every ``BEAT_HEARTBEAT_SECONDS`` from its tick loop, which is what ``/readyz`` and the compose
health check of beat read. Celery uses it through the ``beat_scheduler`` setting, so the beat
command is unchanged.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from celery.beat import PersistentScheduler
from django.db import close_old_connections

from scheduler_admin.system import services
from scheduler_admin.system.models import ProcessKind

logger = logging.getLogger(__name__)

#: How often beat records its heartbeat (as often as the workers' heartbeat task is sent).
BEAT_HEARTBEAT_SECONDS = 10.0
#: Import path of the scheduler, for Celery's ``beat_scheduler`` setting.
SCHEDULER = "scheduler_admin.system.beat:HeartbeatScheduler"


def beat_name() -> str:
    """Beat's heartbeat name: ``beat@<host>``, like a worker's node name."""
    return f"beat@{socket.gethostname()}"


class HeartbeatScheduler(PersistentScheduler):
    """``PersistentScheduler`` that records beat's heartbeat between sending due tasks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._next_heartbeat = 0.0
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send what is due (the parent's tick), record the heartbeat when it is time, and
        sleep no longer than until the next heartbeat."""
        interval = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now >= self._next_heartbeat:
            self._next_heartbeat = now + BEAT_HEARTBEAT_SECONDS
            record_beat_heartbeat()
        return min(interval, max(self._next_heartbeat - time.monotonic(), 0.1))


def record_beat_heartbeat() -> None:
    """Write beat's row; a database that does not answer is logged and tried again at the next
    heartbeat (beat goes on sending tasks: the workers need no database to receive them)."""
    close_old_connections()  # beat lives for weeks: never reuse a connection that went stale
    try:
        services.record_heartbeat(beat_name(), ProcessKind.BEAT)
    except Exception as exc:  # any database error: beat must keep ticking
        logger.warning("beat could not record its heartbeat: %s", exc)
    else:
        logger.debug("beat heartbeat recorded")
