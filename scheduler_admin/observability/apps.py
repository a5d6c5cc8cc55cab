from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

from django.apps import AppConfig
from django.conf import settings


class ObservabilityConfig(AppConfig):
    name = "scheduler_admin.observability"
    label = "observability"

    def ready(self) -> None:
        """A request's log context ends with the request; Celery's per-task hooks (they fire in
        a worker only): each task's log lines name it, and a pool process that exits is marked
        dead for the metrics files."""
        from celery import signals
        from django.core.signals import request_finished, request_started

        from scheduler_admin.base.logging import end_request

        if settings.LOG_FORMAT == "json":
            # Python's warnings (a library's DeprecationWarning, Celery's SecurityWarning) go
            # through logging too, as JSON lines, instead of plain text on stderr.
            logging.captureWarnings(True)
        request_started.connect(end_request, weak=False)
        request_finished.connect(end_request, weak=False)
        signals.task_prerun.connect(_task_started, weak=False)
        signals.task_postrun.connect(_task_ended, weak=False)
        signals.worker_process_shutdown.connect(_process_exiting, weak=False)
        signals.celeryd_after_setup.connect(_no_banner_in_json, weak=False)


#: The open log context of each task running in this process, by task id.
_TASK_TOKENS: dict[str, Any] = {}


def _task_started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    from scheduler_admin.base.logging import open_context

    _TASK_TOKENS[str(task_id)] = open_context(task=getattr(task, "name", None), task_id=task_id)


def _task_ended(task_id: str | None = None, **_: Any) -> None:
    from scheduler_admin.base.logging import close_context

    token = _TASK_TOKENS.pop(str(task_id), None)
    if token is not None:
        # ValueError: opened in another context (a thread): nothing of ours to undo.
        with contextlib.suppress(ValueError):
            close_context(token)


def _no_banner_in_json(instance: Any = None, **_: Any) -> None:
    """With ``LOG_FORMAT=json`` a worker prints no start banner (plain text that would break
    "one JSON object per line"); its "ready" line is logged as usual. Celery sends this signal
    just before it would print the banner."""
    if instance is not None and settings.LOG_FORMAT == "json":
        instance.quiet = True


def _process_exiting(**_: Any) -> None:
    from scheduler_admin.base.metrics import mark_dead

    mark_dead(os.getpid())
