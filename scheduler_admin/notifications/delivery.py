"""Sending the outbox: claim what is due, send it through Apprise, record the result.

Runs on the webhook worker (Celery queue ``webhooks``), never on the worker of sweeps and runs,
and the code that reports an event only wrote a row: however slow a mail server or a chat
service, no run waits for it.

Bounds, so the eviction webhooks that share the worker get their turn:

- each message waits at most ``NOTIFICATION_TIMEOUT`` seconds per connection and per read;
- a delivery pass stops claiming when its budget (``NOTIFICATION_TASK_BUDGET``) is spent and
  leaves the rest, still due, for the next pass;
- a failed message is retried with exponential backoff (``NOTIFICATION_RETRY_BASE`` seconds,
  doubling, at most ``NOTIFICATION_RETRY_MAX``) and given up after ``NOTIFICATION_MAX_ATTEMPTS``.

Each message is claimed with a conditional UPDATE (still pending, still due, not claimed or its
claim passed) before it is sent: two passes at once (a redelivered task) never send the same
message twice, and a worker that dies mid-send leaves a claim that passes, after which the
message is sent again (at least once, like every task here).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from scheduler_admin.notifications import channels
from scheduler_admin.notifications.models import Notification, NotificationStatus

logger = logging.getLogger(__name__)


def deliver_due(now: datetime | None = None, *, batch: int = 50) -> int:
    """Send what is due (as of ``now``, default the clock) within the task's budget; how many
    were sent. Retries are scheduled from ``now`` too, or from the clock when it is later."""
    started = time.monotonic()
    budget = settings.NOTIFICATION_TASK_BUDGET
    due_at = now or timezone.now()
    sent = 0
    tried: set[int] = set()
    while time.monotonic() - started < budget:
        ids = list(
            _due(due_at).exclude(pk__in=tried).order_by("next_attempt_at", "pk")
            .values_list("pk", flat=True)[:batch]
        )  # fmt: skip
        if not ids:
            break
        for notification_id in ids:
            if time.monotonic() - started >= budget:
                break
            tried.add(notification_id)
            notification = _claim(notification_id, due_at)
            if notification is not None:
                sent += _send(notification, due_at)
    return sent


def prune(now: datetime) -> int:
    """Delete sent and given-up messages older than ``NOTIFICATION_RETENTION_DAYS``; how many.
    Pending ones stay whatever their age: they are still to be sent."""
    cutoff = now - timedelta(days=settings.NOTIFICATION_RETENTION_DAYS)
    deleted, _ = Notification.objects.filter(
        status__in=[NotificationStatus.SENT, NotificationStatus.FAILED], created_at__lt=cutoff
    ).delete()
    return deleted


def retry_delay(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed attempt: base, 2 x base, 4 x base, ... capped."""
    seconds = settings.NOTIFICATION_RETRY_BASE * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(seconds, settings.NOTIFICATION_RETRY_MAX))


def _due(now: datetime):  # type: ignore[no-untyped-def]
    return Notification.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=timezone.now()),
        status=NotificationStatus.PENDING,
        next_attempt_at__lte=now,
    )


def _claim(notification_id: int, now: datetime) -> Notification | None:
    """Claim one message for this pass, or None when another pass has it or it is no longer
    due. The claim lasts two timeouts more than one send can take."""
    claim_until = timezone.now() + timedelta(seconds=4 * settings.NOTIFICATION_TIMEOUT + 30)
    claimed = (
        _due(now)
        .filter(pk=notification_id)
        .update(claimed_until=claim_until, attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    return Notification.objects.select_related("channel").get(pk=notification_id)


def _send(notification: Notification, now: datetime) -> int:
    if notification.channel is not None:
        url = notification.channel.url
    else:
        url = channels.email_url(notification.email_to)
    result = channels.send(
        url,
        title=notification.title,
        body=notification.body,
        timeout=settings.NOTIFICATION_TIMEOUT,
    )
    # The pass's clock: a pass run "as of" a later time (tests) schedules from that time.
    finished = max(timezone.now(), now)
    if result.ok:
        Notification.objects.filter(pk=notification.pk).update(
            status=NotificationStatus.SENT, sent_at=finished, claimed_until=None, last_error=""
        )
        return 1
    gave_up = notification.attempts >= settings.NOTIFICATION_MAX_ATTEMPTS
    Notification.objects.filter(pk=notification.pk).update(
        status=NotificationStatus.FAILED if gave_up else NotificationStatus.PENDING,
        next_attempt_at=finished + retry_delay(notification.attempts),
        claimed_until=None,
        last_error=result.error,
    )
    logger.warning(
        "notification %s (%s) attempt %s failed%s: %s",
        notification.pk, notification.event_kind, notification.attempts,
        ", giving up" if gave_up else "", result.error,
    )  # fmt: skip
    return 0
