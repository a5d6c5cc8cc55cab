"""Notifications to people: where they go (channels), who asks for what (subscriptions), and
the outbox of messages the webhook worker delivers (notifications).

Rows are written only by ``services`` (channels and subscriptions, audited), ``fanout`` (the
outbox) and ``delivery`` (an attempt's result). The sweep keeps its place in the audit log in
``SweepCursor`` and remembers which stale agents it reported in ``StaleAgentReport``.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q

from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.base.limits import PARTITION_NAME_MAX_LENGTH, QUEUE_PATH_MAX_LENGTH

#: A channel's Apprise URL (it holds the webhook's secret) and a notification's address.
CHANNEL_URL_MAX_LENGTH = 2000
CHANNEL_NAME_MAX_LENGTH = 100
ADDRESS_MAX_LENGTH = 254
#: A notification's title and body as sent.
TITLE_MAX_LENGTH = 250
EVENT_KEY_MAX_LENGTH = 100


class ChannelKind(models.TextChoices):
    """Derived from the URL's scheme (``channels.kind_of``)."""

    EMAIL = "email", "E-mail"
    SLACK = "slack", "Slack"
    TEAMS = "msteams", "Microsoft Teams"
    MATTERMOST = "mattermost", "Mattermost"
    JSON = "json", "Generic JSON webhook"


class Channel(models.Model):
    """A shared destination set up by an admin: a chat webhook or a mailing list, as an Apprise
    URL. The URL is a secret (a webhook's token is in it): the API and the console show only
    ``masked_url``; it is never logged."""

    name = models.CharField(max_length=CHANNEL_NAME_MAX_LENGTH, unique=True)
    kind = models.CharField(max_length=20, choices=ChannelKind.choices)
    url = models.CharField(max_length=CHANNEL_URL_MAX_LENGTH)
    created_at = models.DateTimeField()
    created_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Subscription(models.Model):
    """Who wants to hear about what: events of ``kinds`` about ``queue_path`` in ``partition``
    (and every queue below it when ``subtree``), for ``user`` or every member of ``group``
    (exactly one), by e-mail to each of them (``email``) and/or to an admin's ``channel``.

    A member only ever hears about what they may read (``fanout``): a subscription on a queue
    outside someone's grants sends them nothing.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_subscriptions",
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    partition = models.CharField(max_length=PARTITION_NAME_MAX_LENGTH)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    subtree = models.BooleanField(default=True)
    kinds = models.JSONField(default=list)
    email = models.BooleanField(default=True)
    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="subscriptions"
    )
    created_at = models.DateTimeField()
    created_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["partition", "queue_path", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, group__isnull=True)
                | Q(user__isnull=True, group__isnull=False),
                name="subscription_user_or_group",
            ),
        ]
        indexes = [models.Index(fields=["partition", "queue_path"], name="subscription_queue")]

    def __str__(self) -> str:
        holder = self.user or self.group
        return f"{holder}: {self.partition} {self.queue_path}{'/*' if self.subtree else ''}"

    def covers(self, partition: str, queue_path: str) -> bool:
        """Is the queue this subscription's queue, or below it when ``subtree``?"""
        if partition != self.partition:
            return False
        if queue_path == self.queue_path:
            return True
        return self.subtree and queue_path.startswith(self.queue_path + ".")


class NotificationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed (gave up)"


class Notification(models.Model):
    """One message to one address (an e-mail address or a channel), waiting in the outbox
    until the webhook worker sends it.

    ``dedupe`` (the event's key and the address) is unique, so a sweep run twice over the same
    events writes each message once. ``claimed_until`` is the claim of the delivery that is
    sending it (``delivery``); a worker that dies leaves a claim that passes.
    """

    event_kind = models.CharField(max_length=40)
    event_key = models.CharField(max_length=EVENT_KEY_MAX_LENGTH)
    partition = models.CharField(max_length=PARTITION_NAME_MAX_LENGTH, blank=True)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH, blank=True)
    subscription = models.ForeignKey(
        Subscription, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    email_to = models.CharField(max_length=ADDRESS_MAX_LENGTH, blank=True)
    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    dedupe = models.CharField(max_length=EVENT_KEY_MAX_LENGTH + ADDRESS_MAX_LENGTH + 20)
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    body = models.TextField()
    status = models.CharField(
        max_length=20, choices=NotificationStatus.choices, default=NotificationStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dedupe"], name="notification_unique_dedupe"),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="notification_due",
                condition=Q(status="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_kind} to {self.email_to or self.channel_id}: {self.status}"


class SweepCursor(models.Model):
    """The sweep's place in the audit log: the last ``chain_seq`` it has read. One row.

    ``chain_seq`` numbers audit events in commit order (``audit.chain``), so every event with a
    higher number committed after the ones read: none is skipped."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    chain_seq = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"audit #{self.chain_seq}"


class StaleAgentReport(models.Model):
    """The last silence of an agent that was reported: its heartbeat time then. A new silence
    (a later heartbeat, then silence again) is reported again."""

    agent = models.OneToOneField(ClusterAgent, on_delete=models.CASCADE, primary_key=True)
    heartbeat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.agent_id} silent since {self.heartbeat_at}"
