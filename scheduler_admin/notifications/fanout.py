"""From one event to the messages it sends: which subscriptions match it, who among their
people may read it, and one outbox row per address.

Nothing is sent here: rows are written (in the caller's transaction) and the webhook worker
delivers them (``delivery``), so the code that reports an event never waits on a mail server or
a chat service. ``notify`` is the entry point for apps that report events of their own (a change
request waiting for review); the sweep (``sweep``) calls ``fan_out`` for what it reads from the
audit log and the agents.

Who may read what follows the product's own rules: ``enforcement.visibility.visible_audit`` for
events read from the audit log (a run's events only for who may read the run), ``can(READ)``
on the queue otherwise, and on the partition as a whole for partition-wide events (a stale
agent), which only global roles read. A subscription for a group sends each member's e-mail
only to members who may read the event, and posts to its channel only when every member may
(a channel's readers are not known, so the group stands for them).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from scheduler_admin.accounts import permissions as access
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.enforcement.visibility import visible_audit
from scheduler_admin.notifications.events import PARTITION_WIDE, Event, EventKind
from scheduler_admin.notifications.models import (
    TITLE_MAX_LENGTH,
    Notification,
    Subscription,
)

User = get_user_model()


def notify(
    kind: EventKind,
    *,
    key: str,
    partition: str,
    queue_path: str,
    summary: str,
    link: str,
    now: datetime | None = None,
) -> int:
    """Report an event to its subscribers: writes the outbox rows in the caller's transaction
    (a rollback sends nothing) and returns to how many addresses. ``key`` names the event
    uniquely (the same key twice sends once); ``link`` is a console path (``/changes/12/``),
    made absolute with ``PUBLIC_BASE_URL``. The webhook worker sends the rows within one
    sweep.

    For ``CHANGE_REQUEST_WAITING`` and any kind without a source of its own in this app."""
    event = Event(
        kind=kind, key=key, partition=partition, queue_path=queue_path, summary=summary, link=link
    )
    return fan_out(event, now=now or timezone.now())


def fan_out(event: Event, *, now: datetime) -> int:
    """Write one pending notification per address the event goes to; how many addresses (an
    address that already has this event's message keeps it: the outbox's ``dedupe`` is
    unique)."""
    rows: dict[str, Notification] = {}
    for subscription in _matching(event):
        members = _members(subscription)
        readers = [user for user in members if _may_read(user, event)]
        if subscription.email:
            for user in readers:
                address = (user.email or "").strip()
                if address:
                    dedupe = f"{event.key}|mail|{address.lower()}"
                    rows.setdefault(dedupe, _row(event, subscription, dedupe, now, email=address))
        channel = subscription.channel
        if channel is not None and members and len(readers) == len(members):
            dedupe = f"{event.key}|channel|{channel.pk}"
            rows.setdefault(dedupe, _row(event, subscription, dedupe, now, channel=channel))
    if not rows:
        return 0
    created = Notification.objects.bulk_create(rows.values(), ignore_conflicts=True)
    return len(created)


def absolute(link: str) -> str:
    """A console path as a URL a message can carry (``PUBLIC_BASE_URL`` + path)."""
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    return f"{base}{link}" if base else link


def event_link(*, partition: str, queue_path: str, run_id: int | None) -> str:
    """The console page that shows an event: the run, the queue, or the dashboard."""
    if run_id is not None:
        return reverse("run-detail", args=[run_id])
    if queue_path:
        return reverse("queue-detail", args=[partition, queue_path])
    return reverse("dashboard")


def _matching(event: Event) -> Iterable[Subscription]:
    subscriptions = Subscription.objects.filter(partition=event.partition).select_related(
        "user", "group", "channel"
    )
    for subscription in subscriptions:
        if event.kind not in subscription.kinds:
            continue
        if event.kind in PARTITION_WIDE or subscription.covers(event.partition, event.queue_path):
            yield subscription


def _members(subscription: Subscription) -> list[AbstractBaseUser]:
    """The subscription's people who still have an active account."""
    if subscription.user is not None:
        return [subscription.user] if subscription.user.is_active else []
    return list(
        User.objects.filter(Q(groups=subscription.group_id), is_active=True)
        .distinct()
        .order_by("pk")
    )


def _may_read(user: AbstractBaseUser, event: Event) -> bool:
    if event.kind in PARTITION_WIDE:
        return bool(access.can(user, access.READ, event.partition, None))
    if event.audit_event_id is not None:
        found = AuditEvent.objects.filter(pk=event.audit_event_id)
        return visible_audit(user, found).exists()
    return bool(access.can(user, access.READ, event.partition, event.queue_path))


def _row(
    event: Event,
    subscription: Subscription,
    dedupe: str,
    now: datetime,
    *,
    email: str = "",
    channel: object = None,
) -> Notification:
    kind = EventKind(event.kind)
    where = event.queue_path or "the whole partition"
    title = f"{kind.label}: {where} ({event.partition})"[:TITLE_MAX_LENGTH]
    lines = [
        event.summary,
        "",
        f"Queue: {event.queue_path}" if event.queue_path else "Queue: (the whole partition)",
        f"Partition: {event.partition}",
        f"Open: {absolute(event.link)}",
    ]
    return Notification(
        event_kind=event.kind,
        event_key=event.key,
        partition=event.partition,
        queue_path=event.queue_path,
        subscription=subscription,
        email_to=email,
        channel=channel,  # type: ignore[misc]
        dedupe=dedupe,
        title=title,
        body="\n".join(lines),
        next_attempt_at=now,
        created_at=now,
    )
