"""The notification task: one sweep, then one delivery pass, on the webhook worker.

Thin like every task here: no arguments, the services do the work. It runs on the ``webhooks``
queue (``scheduler_admin/celery.py``), so however slow a mail server or a chat service, sweeps
and runs on the default queue never wait for it; its budget and time limits keep it from holding
that worker from the eviction webhooks for long.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from scheduler_admin.notifications import delivery, sweep

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def send_notifications() -> None:
    """Read new events into the outbox, send what is due, drop what is old. Idempotent: the
    sweep's cursor and the outbox's unique keys make a redelivered task write nothing twice,
    and each message is claimed before it is sent."""
    try:
        now = timezone.now()
        written = sweep.sweep_events(now)
        sent = delivery.deliver_due()
        delivery.prune(now)
    except SoftTimeLimitExceeded:
        logger.warning("notification delivery stopped by its soft time limit")
        return
    level = logging.INFO if written or sent else logging.DEBUG
    logger.log(level, "notifications: %s written, %s sent", written, sent)
