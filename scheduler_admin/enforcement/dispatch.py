"""Enqueue a Celery task by its name, once the transaction that asked for it has committed.

Services never import ``tasks``: the tasks import the services (ids in, one service call), and
a service that needs a follow-up names the task here. That keeps the import graph one-way
(``tasks`` -> services -> ``dispatch``) and the house rule of side effects after commit: the task
is sent by ``transaction.on_commit``, so a worker never sees a row that is not committed yet, and
a transaction that rolls back (a retried deadlock victim included) sends nothing. Outside a
transaction (autocommit) it is sent at once. This is what ``Task.delay_on_commit`` does; the
signature resolves the registered task when it is sent, so its options (routing, eager mode)
apply as they did.
"""

from __future__ import annotations

import functools

from celery import current_app
from django.db import transaction

#: The task that claims and executes one run (``tasks.execute_run``).
EXECUTE_RUN = "scheduler_admin.enforcement.tasks.execute_run"


def send_on_commit(task: str, *args: object) -> None:
    """Send ``task`` (its registered name) with positional JSON ``args`` after commit."""
    transaction.on_commit(functools.partial(current_app.signature(task, args=args).delay))


def enqueue_run(run_id: int) -> None:
    """Hand the run to a worker once the transaction that created (or re-enqueued) it commits."""
    send_on_commit(EXECUTE_RUN, run_id)
