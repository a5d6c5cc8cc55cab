"""Celery tasks of the live loop: ids in, one service call, nothing returned (SPEC 5).

Every task is idempotent, so redelivery (``acks_late``) is harmless: sweeps re-read the database,
``execute_run`` claims before it writes, and eviction delivery claims each order.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from scheduler_admin.enforcement import evictions, runs

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def sweep_due_quota_timers() -> None:
    runs.sweep_due_quota_timers()


@shared_task(ignore_result=True)
def sweep_pending_asks() -> None:
    runs.sweep_pending_asks()


@shared_task(ignore_result=True)
def reap_stale_runs() -> None:
    runs.reap_stale_runs()


@shared_task(ignore_result=True)
def deliver_eviction_webhooks() -> None:
    """Runs on the ``webhooks`` queue, served by a worker of its own, under a soft and a hard
    time limit (``scheduler_admin/celery.py``): a slow receiver never holds up sweeps and runs.
    Hitting the soft limit means the service's own budget failed; what it left claimed is
    retried once the claims pass."""
    try:
        evictions.deliver_eviction_webhooks()
    except SoftTimeLimitExceeded:
        logger.warning("eviction webhook delivery stopped by its soft time limit")


@shared_task(bind=True, ignore_result=True)
def execute_run(self, run_id: int) -> None:
    runs.execute_run(run_id, worker=self.request.hostname or "unknown")
