"""Scheduled changes (SPEC 6 "Scheduled changes"): a queue change or a whole config kept with
the time it is to be saved at.

A row holds what the submitter asked for, not a finished config: for a queue change only the
fields the request named (``guaranteed``, ``max``, ``properties``), so that at its time they are
applied to the config as it is then and every field it does not name keeps whatever was saved
meanwhile; for a whole config the config itself (JSON, as a revision's snapshot). Rows are
written only by ``queues.scheduled``; the beat sweep there applies the due ones.

Kept in a module of its own (imported by ``queues.models``) so the config models stay short.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ScheduledStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPLIED = "applied", "Applied"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ScheduledKind(models.TextChoices):
    QUEUE = "queue", "Queue change"
    CONFIG = "config", "Whole config"
    #: A partition of a ``queues.yaml`` (``import_config --apply-at``): saved as an import, so
    #: it keeps the product's own settings as they are at its time.
    IMPORT = "import", "Whole config (import)"


class ScheduledChange(models.Model):
    """One change to be saved at ``apply_at`` by its author (SPEC 6).

    ``queue_path`` is the queue a queue change concerns ("" for a whole config): what a queue
    grant's holder may see and what a tenant admin may cancel is decided on it. ``change`` is
    the named fields of a queue change (quantities as integers, as ``QueueConfig`` holds them)
    or the whole config's JSON. A change without author (``author_name`` "system": a command
    run without ``--user``) is applied without a rights check; one whose author's account was
    deleted is refused at its time. Once it leaves ``pending`` a row is never changed again:
    ``revision_number`` is the revision it became, ``reason`` why it failed.
    """

    partition = models.ForeignKey(
        "queues.Partition", on_delete=models.CASCADE, related_name="scheduled_changes"
    )
    kind = models.CharField(max_length=10, choices=ScheduledKind.choices)
    queue_path = models.CharField(max_length=1024, blank=True, default="")
    change = models.JSONField()
    apply_at = models.DateTimeField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150)
    comment = models.TextField()
    created_at = models.DateTimeField()
    status = models.CharField(
        max_length=10, choices=ScheduledStatus.choices, default=ScheduledStatus.PENDING
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    #: Who cancelled it (text, so it survives the account), when cancelled.
    cancelled_by = models.CharField(max_length=150, blank=True, default="")
    revision_number = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["apply_at", "id"]
        indexes = [
            # The sweep's query: due pending changes, soonest first.
            models.Index(
                fields=["apply_at", "id"],
                condition=models.Q(status="pending"),
                name="scheduled_pending_due",
            ),
            models.Index(fields=["partition", "status", "apply_at"], name="scheduled_by_partition"),
        ]

    def __str__(self) -> str:
        return f"scheduled change {self.pk} ({self.status})"
