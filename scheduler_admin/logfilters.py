"""Logging filters named in ``settings.LOGGING``.

Beat sends four periodic tasks every 5 to 30 s (``scheduler_admin/celery.py``), and Celery logs
each of them three times at INFO: beat's "Scheduler: Sending due task", the worker's "Task ...
received" and "Task ... succeeded". An idle system printed about 150 such lines a minute, which
buried the lines that matter (a run started or ended, an error, the one-time admin password of
``make run``). The tasks themselves log at INFO only when they did something
(``enforcement/tasks.py``); ``PeriodicTaskChatter`` lowers Celery's routine lines to DEBUG.

Each entry of the schedule expires just before its next tick, so a tick whose tasks wait behind
slower ones (one worker process, several tasks due at the same second) has its late ones
discarded by the worker with "Discarding revoked task": routine too, since the next tick does
the same work a few seconds later (an idle ``make run`` printed two such lines a minute).
"""

from __future__ import annotations

import logging
from functools import cache

#: The start of beat's line for each task it sends (``celery.beat.Scheduler.apply_entry``).
BEAT_SENDING = "Scheduler: Sending due task"
#: The start of the worker's line for a task that expired before it was reached
#: (``celery.worker.request.Request.revoked``; the task name is its first argument).
WORKER_DISCARDING = "Discarding revoked task"


@cache
def periodic_task_names() -> frozenset[str]:
    """The task names of the beat schedule; imported late, since ``LOGGING`` is configured while
    Django sets up, before the Celery app module can be imported."""
    from scheduler_admin.celery import BEAT_SCHEDULE

    return frozenset(str(entry["task"]) for entry in BEAT_SCHEDULE.values())


class PeriodicTaskChatter(logging.Filter):
    """Treat Celery's INFO lines about periodic tasks as DEBUG lines.

    Attached to the loggers ``celery.beat``, ``celery.worker.strategy`` ("received"),
    ``celery.worker.request`` ("discarding", an expired tick) and ``celery.app.trace``
    ("succeeded"). Celery passes each task line's context as
    ``record.data`` for custom log handlers (``celery.app.trace.info``): its ``name`` is the task
    name. A matching INFO record becomes DEBUG and passes only if its logger is enabled for
    DEBUG (``--loglevel DEBUG``). Everything else passes unchanged: failures and retries
    (ERROR/WARNING, or INFO of other tasks such as ``execute_run``), and every line of a task
    that is not in the beat schedule.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not self._is_periodic(record):
            return True
        record.levelno = logging.DEBUG
        record.levelname = logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)

    @staticmethod
    def _is_periodic(record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(BEAT_SENDING):
            return True  # beat sends nothing but the schedule's entries
        if isinstance(record.msg, str) and record.msg.startswith(WORKER_DISCARDING):
            args = record.args if isinstance(record.args, tuple) else ()
            return bool(args) and args[0] in periodic_task_names()
        data = getattr(record, "data", None)
        return isinstance(data, dict) and data.get("name") in periodic_task_names()
