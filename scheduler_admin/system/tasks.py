"""Thin Celery tasks for operational plumbing."""

from __future__ import annotations

import logging

from celery import shared_task

from scheduler_admin.system import services

logger = logging.getLogger(__name__)


@shared_task(bind=True, ignore_result=True)
def record_heartbeat(self) -> None:
    """Beat sends this every 10 s; the worker that runs it records it is alive (a DEBUG line:
    at INFO it would be a third of an idle system's log)."""
    worker = self.request.hostname or "unknown"
    services.record_heartbeat(worker)
    logger.debug("heartbeat recorded for %s", worker)
