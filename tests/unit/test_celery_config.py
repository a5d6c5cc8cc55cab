"""The Celery app carries the delivery guarantees SPEC 5 asks for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from scheduler_admin.celery import (
    BEAT_SCHEDULE,
    DEFAULT_QUEUE,
    NOTIFICATION_TASK,
    WEBHOOK_QUEUE,
    WEBHOOK_TASK,
    _transport_options,
    app,
)

ROOT = Path(__file__).resolve().parents[2]


def test_tasks_are_acknowledged_late_json_only_one_at_a_time() -> None:
    conf = app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]


def test_time_limit_stays_below_the_visibility_timeout() -> None:
    options = _transport_options("redis://127.0.0.1:6379/0")
    assert app.conf.task_time_limit < options["visibility_timeout"]
    assert app.conf.task_soft_time_limit < app.conf.task_time_limit
    assert _transport_options("sqla+sqlite:///x.sqlite3") == {}


def test_every_beat_entry_expires_before_its_next_tick() -> None:
    for name, entry in BEAT_SCHEDULE.items():
        assert entry["options"]["expires"] < entry["schedule"], name


# --- Eviction webhook deliveries: a queue, a worker and time limits of their own ----------------


def queue_of(task_name: str, options: dict[str, object] | None = None) -> str:
    """The queue a message for ``task_name`` goes to, as Celery's router decides when sending."""
    return app.amqp.router.route(dict(options or {}), task_name)["queue"].name


def test_webhook_deliveries_go_to_their_own_queue_and_everything_else_to_the_default() -> None:
    assert queue_of(WEBHOOK_TASK) == WEBHOOK_QUEUE == "webhooks"
    assert DEFAULT_QUEUE == "celery" == app.conf.task_default_queue
    # The webhook worker's heartbeat goes to its queue: it says that worker is alive (issue 16).
    to_webhook_worker = {"record-webhook-worker-heartbeat"}
    for name, entry in BEAT_SCHEDULE.items():
        # Notifications to people wait on outside services too: the same queue and worker.
        to_webhooks = (
            entry["task"] in {WEBHOOK_TASK, NOTIFICATION_TASK} or name in to_webhook_worker
        )
        expected = WEBHOOK_QUEUE if to_webhooks else DEFAULT_QUEUE
        assert queue_of(str(entry["task"]), entry["options"]) == expected, name
    assert queue_of("scheduler_admin.enforcement.tasks.execute_run") == DEFAULT_QUEUE
    assert any(entry["task"] == WEBHOOK_TASK for entry in BEAT_SCHEDULE.values())
    assert any(entry["task"] == NOTIFICATION_TASK for entry in BEAT_SCHEDULE.values())
    assert queue_of(NOTIFICATION_TASK) == WEBHOOK_QUEUE


def test_the_notification_task_has_time_limits_above_its_budget_and_below_the_global_limit():
    import scheduler_admin.notifications.tasks  # noqa: F401 - registers the task

    task = app.tasks[NOTIFICATION_TASK]
    budget_end = settings.NOTIFICATION_TASK_BUDGET + 3 * settings.NOTIFICATION_TIMEOUT
    assert budget_end < task.soft_time_limit < task.time_limit <= app.conf.task_time_limit


def test_the_delivery_task_has_time_limits_above_its_budget_and_below_the_global_limit() -> None:
    import scheduler_admin.enforcement.tasks  # noqa: F401 - registers the task, as autodiscovery

    task = app.tasks[WEBHOOK_TASK]
    budget_end = settings.EVICTION_WEBHOOK_TASK_BUDGET + settings.EVICTION_WEBHOOK_TIMEOUT
    assert budget_end < task.soft_time_limit < task.time_limit
    assert task.time_limit <= app.conf.task_time_limit
    options = _transport_options("redis://127.0.0.1:6379/0")
    assert task.time_limit < options["visibility_timeout"]


def import_settings(**overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVICTION_WEBHOOK_")}
    env.update(SCHEDULER_ENV="test", CELERY_TASK_TIME_LIMIT="600", **overrides)
    return subprocess.run(
        [sys.executable, "-c", "import scheduler_admin.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"EVICTION_WEBHOOK_CONCURRENCY": "0"}, "EVICTION_WEBHOOK_CONCURRENCY=0 must be at least"),
        ({"EVICTION_WEBHOOK_CONCURRENCY": "65"}, "EVICTION_WEBHOOK_CONCURRENCY=65 must be at most"),
        ({"EVICTION_WEBHOOK_CONCURRENCY": "four"}, "EVICTION_WEBHOOK_CONCURRENCY='four' is not"),
        ({"EVICTION_WEBHOOK_TASK_BUDGET": "0"}, "EVICTION_WEBHOOK_TASK_BUDGET=0 must be at least"),
        ({"EVICTION_WEBHOOK_TIMEOUT": "0"}, "EVICTION_WEBHOOK_TIMEOUT=0 must be at least 1"),
        ({"EVICTION_WEBHOOK_TASK_BUDGET": "580"}, "must not exceed CELERY_TASK_TIME_LIMIT"),
        (
            {"EVICTION_WEBHOOK_URL": "file:///etc/passwd", "EVICTION_WEBHOOK_SECRET": "s"},
            "EVICTION_WEBHOOK_URL must be an http:// or https:// URL",
        ),
        ({"EVICTION_WEBHOOK_URL": "https://cluster.example/evictions"}, "SECRET must be set"),
    ],
)
def test_bad_webhook_settings_stop_start_up_naming_the_variable(
    overrides: dict[str, str], message: str
) -> None:
    result = import_settings(**overrides)
    assert result.returncode != 0
    assert message in result.stderr


def test_good_webhook_settings_start() -> None:
    result = import_settings(
        EVICTION_WEBHOOK_URL="https://cluster.example/evictions",
        EVICTION_WEBHOOK_SECRET="s",
        EVICTION_WEBHOOK_CONCURRENCY="64",
        EVICTION_WEBHOOK_TASK_BUDGET="570",
        EVICTION_WEBHOOK_TIMEOUT="10",
    )
    assert result.returncode == 0, result.stderr
