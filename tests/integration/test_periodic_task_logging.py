"""Celery's own lines about the periodic tasks are DEBUG lines unless ``LOG_PERIODIC_TASKS`` is
true (issue 13: about 150 lines a minute of an idle ``make run`` buried the admin password).

Each case runs a Python process with the product's real logging configuration (Django set up
from ``scheduler_admin.settings``) and logs through Celery's own functions and loggers, as a
worker and beat do: ``celery.app.trace.info`` (the "succeeded" line, with the task's context as
``record.data``), the "received" line of ``celery.worker.strategy``, the "Discarding revoked
task" line of ``celery.worker.request`` (a tick that expired) and beat's "Sending due task".
``test_run_script.py`` checks the same on a running product (an idle minute stays quiet).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.processes import PROJECT_DIR

SWEEP = "scheduler_admin.enforcement.tasks.sweep_due_quota_timers"
RUN = "scheduler_admin.enforcement.tasks.execute_run"

EMIT = f"""
import logging
import django
django.setup()
from celery.app import trace

def context(name):
    return {{"id": "id-" + name.rsplit(".", 1)[1], "name": name, "return_value": None,
            "runtime": 0.01, "args": "()", "kwargs": "{{}}"}}

received = logging.getLogger("celery.worker.strategy")
discarding = logging.getLogger("celery.worker.request")
for name in ({SWEEP!r}, {RUN!r}):
    received.info(trace.LOG_RECEIVED, context(name), extra={{"data": context(name)}})
    trace.info(trace.LOG_SUCCESS, context(name))
    discarding.info("Discarding revoked task: %s[%s]", name, "id-" + name.rsplit(".", 1)[1])
logging.getLogger("celery.beat").info(
    "Scheduler: Sending due task %s (%s)", "sweep-due-quota-timers", {SWEEP!r})
failure = {{**context({SWEEP!r}), "description": "raised unexpected", "exc": "boom"}}
logging.getLogger("celery.app.trace").error(trace.LOG_FAILURE, failure, extra={{"data": failure}})
"""


def emitted(**variables: str) -> list[str]:
    """The log lines (level and message) the snippet writes with these variables set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DJANGO_SETTINGS_MODULE", "LOG_LEVEL", "LOG_PERIODIC_TASKS"}
    }
    env.update(
        SCHEDULER_ENV="local", DJANGO_SETTINGS_MODULE="scheduler_admin.settings", **variables
    )
    result = subprocess.run(
        [sys.executable, "-c", EMIT], cwd=PROJECT_DIR, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [line.split(" ", 2)[2] for line in result.stderr.splitlines()]


def test_periodic_task_lines_are_hidden_and_everything_else_is_shown():
    lines = emitted()
    assert lines == [
        f"INFO celery.worker.strategy: Task {RUN}[id-execute_run] received",
        f"INFO celery.app.trace: Task {RUN}[id-execute_run] succeeded in 0.01s: None",
        f"INFO celery.worker.request: Discarding revoked task: {RUN}[id-execute_run]",
        f"ERROR celery.app.trace: Task {SWEEP}[id-sweep_due_quota_timers] raised unexpected: boom",
    ]


@pytest.mark.parametrize(
    ("variables", "level"),
    [({"LOG_LEVEL": "DEBUG"}, "DEBUG"), ({"LOG_PERIODIC_TASKS": "true"}, "INFO")],
    ids=["at-debug-level", "log-periodic-tasks"],
)
def test_periodic_task_lines_show_at_debug_level_or_when_asked(variables, level):
    lines = emitted(**variables)
    assert f"{level} celery.beat: Scheduler: Sending due task sweep-due-quota-timers ({SWEEP})" in (
        lines
    )
    assert f"{level} celery.worker.strategy: Task {SWEEP}[id-sweep_due_quota_timers] received" in (
        lines
    )
    assert (
        f"{level} celery.worker.request: Discarding revoked task: "
        f"{SWEEP}[id-sweep_due_quota_timers]"
    ) in lines
    assert len(lines) == 8
