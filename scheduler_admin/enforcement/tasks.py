"""Celery tasks of the live loop: ids in, one service call, nothing returned (SPEC 5).

Every task is idempotent, so redelivery (``acks_late``) is harmless: sweeps re-read the database,
``execute_run`` claims before it writes, and eviction delivery claims each order.
"""

from __future__ import annotations

from celery import shared_task

from scheduler_admin.enforcement import evictions, runs


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
    evictions.deliver_eviction_webhooks()


@shared_task(bind=True, ignore_result=True)
def execute_run(self, run_id: int) -> None:
    runs.execute_run(run_id, worker=self.request.hostname or "unknown")
