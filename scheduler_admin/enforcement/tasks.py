"""Celery tasks of the live loop: ids in, one service call, nothing returned (SPEC 5).

Every task is idempotent, so redelivery (``acks_late``) is harmless: sweeps re-read the database,
``execute_run`` claims before it writes, and eviction delivery claims each order.

Beat sends the sweeps every few seconds, so they log at INFO only when they did something (started
a run, acknowledged an eviction) and at DEBUG otherwise; Celery's own lines about them are DEBUG
too (``scheduler_admin/logfilters.py``). A run's end is always INFO.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from scheduler_admin.enforcement import evictions, runs
from scheduler_admin.enforcement.log_context import run_context

logger = logging.getLogger(__name__)


def _log_runs(did: str, run_ids: list[int]) -> None:
    """One INFO line naming the runs a sweep started or re-enqueued; DEBUG when there were none."""
    if run_ids:
        logger.info("%s run(s) %s", did, ", ".join(str(run_id) for run_id in run_ids))
    else:
        logger.debug("%s no run", did)


@shared_task(ignore_result=True)
def sweep_due_quota_timers() -> None:
    _log_runs("quota timer sweep started", runs.sweep_due_quota_timers())


@shared_task(ignore_result=True)
def sweep_pending_asks() -> None:
    _log_runs("pending ask sweep started", runs.sweep_pending_asks())


@shared_task(ignore_result=True)
def reap_stale_runs() -> None:
    _log_runs("reaper re-enqueued", runs.reap_stale_runs())


@shared_task(ignore_result=True)
def deliver_eviction_webhooks() -> None:
    """Runs on the ``webhooks`` queue, served by a worker of its own, under a soft and a hard
    time limit (``scheduler_admin/celery.py``): a slow receiver never holds up sweeps and runs.
    Hitting the soft limit means the service's own budget failed; what it left claimed is
    retried once the claims pass."""
    try:
        acknowledged = evictions.deliver_eviction_webhooks()
    except SoftTimeLimitExceeded:
        logger.warning("eviction webhook delivery stopped by its soft time limit")
        return
    level = logging.INFO if acknowledged else logging.DEBUG
    logger.log(level, "eviction webhook: %s order(s) acknowledged", acknowledged)


@shared_task(bind=True, ignore_result=True)
def execute_run(self, run_id: int) -> None:
    with run_context(run_id):  # every log line of the run names it and its partition
        run = runs.execute_run(run_id, worker=self.request.hostname or "unknown")
        if run is None:
            logger.debug("run %s: not ours to execute (finished, or held by a live worker)", run_id)
            return
        outcome = f", {run.outcome}" if run.outcome else ""
        logger.info(
            "run %s (%s, %s %s): %s%s",
            run.pk, run.policy, run.partition.name, run.queue_path, run.status, outcome,
        )  # fmt: skip
