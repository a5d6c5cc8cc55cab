"""Thin Celery tasks of the usage history."""

from __future__ import annotations

import logging

from celery import shared_task

from scheduler_admin.history import services

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def sample_usage() -> None:
    """Beat sends this every minute (expiring before the next): sample every partition's usage,
    roll up finished quarters, drop what is past retention. A DEBUG line: at INFO it would be
    one line a minute of an idle system's log."""
    for done in services.record_minute():
        logger.debug(
            "usage of %s: minute %s, %d series, %d quarters rolled up, %d rows expired%s",
            done.partition, done.minute, done.series, done.quarters, done.deleted,
            f" ({done.skipped})" if done.skipped else "",
        )  # fmt: skip
