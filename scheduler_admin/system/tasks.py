"""Thin Celery tasks for operational plumbing."""

from __future__ import annotations

import logging

from celery import shared_task

from scheduler_admin.system import services
from scheduler_admin.system.models import ProcessKind

logger = logging.getLogger(__name__)


@shared_task(bind=True, ignore_result=True)
def record_heartbeat(self, kind: str = ProcessKind.WORKER) -> None:
    """Beat sends this every 10 s to each worker queue (``kind`` says which: ``worker`` for the
    default queue, ``webhook_worker`` for ``webhooks``); the worker that runs it records it is
    alive (a DEBUG line: at INFO it would be a third of an idle system's log)."""
    if kind not in ProcessKind.values or kind == ProcessKind.BEAT:
        logger.warning("heartbeat of unknown kind %r ignored", kind)
        return
    worker = self.request.hostname or "unknown"
    services.record_heartbeat(worker, ProcessKind(kind))
    logger.debug("heartbeat recorded for %s (%s)", worker, kind)
