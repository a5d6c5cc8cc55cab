"""The Celery application, configured from Django settings (SPEC 5).

Delivery is at-least-once by design: ``acks_late`` with ``reject_on_worker_lost`` means a task
whose worker dies is delivered again, so every task must be idempotent (they take ids only and the
services they call check state before writing). The hard time limit stays below the broker's
visibility timeout so a slow task is killed before the broker hands it to a second worker.

Eviction webhook deliveries wait on a receiver outside our control, so they have a queue of their
own (``WEBHOOK_QUEUE``) served by a worker of their own (compose service ``webhook-worker``,
``scripts/run.sh``): however slow the receiver, the sweeps and runs on the default queue keep
their worker. The delivery task also has time limits of its own, derived from its budget.
"""

from __future__ import annotations

import os

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "scheduler_admin.settings")

app = Celery("scheduler_admin")

#: The queue of sweeps, runs, the reaper and heartbeats (Celery's default name).
DEFAULT_QUEUE = "celery"
#: The queue of eviction webhook deliveries, consumed only by the webhook worker.
WEBHOOK_QUEUE = "webhooks"
WEBHOOK_TASK = "scheduler_admin.enforcement.tasks.deliver_eviction_webhooks"
#: Notifications to people (e-mail, chat webhooks) wait on outside services too: same queue.
NOTIFICATION_TASK = "scheduler_admin.notifications.tasks.send_notifications"
#: Every task not listed goes to ``DEFAULT_QUEUE``.
TASK_ROUTES: dict[str, dict[str, str]] = {
    WEBHOOK_TASK: {"queue": WEBHOOK_QUEUE},
    NOTIFICATION_TASK: {"queue": WEBHOOK_QUEUE},
}

#: Static beat schedule. Each entry expires before its next tick so a backlog never piles up.
BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "sweep-due-quota-timers": {
        "task": "scheduler_admin.enforcement.tasks.sweep_due_quota_timers",
        "schedule": 5.0,
        "options": {"expires": 4.0},
    },
    # Scheduled changes (SPEC 6): applied within one sweep of their time.
    "apply-scheduled-changes": {
        "task": "scheduler_admin.accounts.tasks.apply_scheduled_changes",
        "schedule": 5.0,
        "options": {"expires": 4.0},
    },
    "sweep-pending-asks": {
        "task": "scheduler_admin.enforcement.tasks.sweep_pending_asks",
        "schedule": 5.0,
        "options": {"expires": 4.0},
    },
    "reap-stale-runs": {
        "task": "scheduler_admin.enforcement.tasks.reap_stale_runs",
        "schedule": 30.0,
        "options": {"expires": 25.0},
    },
    "deliver-eviction-webhooks": {
        "task": WEBHOOK_TASK,
        "schedule": 5.0,
        "options": {"expires": 4.0, "queue": WEBHOOK_QUEUE},
    },
    # Notifications to people: read new events into the outbox, then send it.
    "send-notifications": {
        "task": NOTIFICATION_TASK,
        "schedule": 5.0,
        "options": {"expires": 4.0, "queue": WEBHOOK_QUEUE},
    },
    # Usage history (issue 16): one sample per queue and resource each minute, roll-ups, retention.
    "sample-usage": {
        "task": "scheduler_admin.history.tasks.sample_usage",
        "schedule": 60.0,
        "options": {"expires": 50.0},
    },
    "record-worker-heartbeat": {
        "task": "scheduler_admin.system.tasks.record_heartbeat",
        "schedule": 10.0,
        "options": {"expires": 8.0},
    },
    # --- issue 16, observability: the webhook worker's heartbeat (beat records its own, see
    # scheduler_admin/system/beat.py), so /readyz has an age for each background process.
    "record-webhook-worker-heartbeat": {
        "task": "scheduler_admin.system.tasks.record_heartbeat",
        "schedule": 10.0,
        "kwargs": {"kind": "webhook_worker"},
        "options": {"expires": 8.0, "queue": WEBHOOK_QUEUE},
    },
}


def _transport_options(broker_url: str) -> dict[str, object]:
    """The visibility timeout matters on Redis (unacked tasks are redelivered after it); the
    SQLAlchemy transport of the embedded default passes options to ``create_engine`` and takes
    none of these."""
    if broker_url.startswith(("redis://", "rediss://")):
        return {"visibility_timeout": settings.CELERY_BROKER_VISIBILITY_TIMEOUT}
    return {}


def configure(celery_app: Celery) -> None:
    """Apply the task, broker and beat settings; called once Django settings can be read."""
    celery_app.conf.update(
        broker_url=settings.CELERY_BROKER_URL,
        broker_connection_retry_on_startup=True,
        broker_transport_options=_transport_options(settings.CELERY_BROKER_URL),
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=settings.CELERY_TASK_TIME_LIMIT,
        task_soft_time_limit=max(settings.CELERY_TASK_TIME_LIMIT - 30, 5),
        task_default_queue=DEFAULT_QUEUE,
        task_routes=TASK_ROUTES,
        # Backstops of the delivery task's own budget (settings.py says how they are derived).
        task_annotations={
            WEBHOOK_TASK: {
                "soft_time_limit": settings.EVICTION_WEBHOOK_SOFT_TIME_LIMIT,
                "time_limit": settings.EVICTION_WEBHOOK_TIME_LIMIT,
            },
            NOTIFICATION_TASK: {
                "soft_time_limit": settings.NOTIFICATION_SOFT_TIME_LIMIT,
                "time_limit": settings.NOTIFICATION_TIME_LIMIT,
            },
        },
        worker_hijack_root_logger=False,
        beat_schedule=BEAT_SCHEDULE,
        # Celery's PersistentScheduler that also records beat's own heartbeat (issue 16).
        beat_scheduler="scheduler_admin.system.beat:HeartbeatScheduler",
        beat_schedule_filename=settings.CELERY_BEAT_SCHEDULE_FILE,
        timezone="UTC",
        enable_utc=True,
    )


app.config_from_object({})  # settings are applied lazily below, once Django is importable
app.on_configure.connect(lambda sender, **_: configure(sender), weak=False)
app.autodiscover_tasks()
