"""Beat's task that applies due scheduled changes (SPEC 6).

In the accounts app, not queues: the changes are queues' rows, but each is applied with its
submitter's rights as they are at its time, which accounts decides
(``accounts.scheduled_access``); a task imports its own app and the apps below it.
"""

from __future__ import annotations

import logging

from celery import shared_task

from scheduler_admin.accounts.scheduled_access import submitter_authorizer
from scheduler_admin.queues import scheduled

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def apply_scheduled_changes() -> None:
    """Every 5 s (``BEAT_SCHEDULE``): each due pending change applied or failed, each in its own
    transaction; idempotent (a change is claimed under its row lock, its status read again)."""
    ended = scheduled.apply_due_changes(authorizer_for=submitter_authorizer)
    if ended:
        logger.info(
            "scheduled changes: %s",
            ", ".join(f"{change.pk} {change.status}" for change in ended),
        )
    else:
        logger.debug("scheduled changes: none due")
