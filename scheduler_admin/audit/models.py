"""Audit events: one typed, indexed row for every change and every preemption decision."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scheduler_admin.audit import kinds
from scheduler_admin.audit.kinds import AuditKind
from scheduler_admin.base.limits import (
    AUDIT_OBJECT_ID_MAX_LENGTH,
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)

# ``AuditKind`` was declared here before it moved to ``kinds``; callers still import it from here.
__all__ = ["AuditChainHead", "AuditEvent", "AuditKind"]

#: A SHA-256 in hex.
HASH_LENGTH = 64


class AuditEvent(models.Model):
    """An append-only record of one event.

    The actor and the objects are stored as text (``actor_name``, ``partition_name``,
    ``queue_path``) next to the optional user link, so the record still reads correctly after the
    user or queue is deleted (STYLE habit 7). Each column is as long as the value it records can
    be (``base.limits``): an event about a 253-character allocation id must not fail.
    ``data`` holds the event's details (revision number, changed fields, ...) for the JSON
    export. Indexes follow the audit page's filters: newest
    first, by kind, by queue and by actor.

    ``kind`` is plain text without database ``choices``: the kinds are a registry in code
    (``scheduler_admin.audit.kinds``), checked by ``services.new_event`` when a row is built,
    so a new kind needs no migration.
    """

    created_at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=kinds.KIND_MAX_LENGTH)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=USERNAME_MAX_LENGTH)
    partition_name = models.CharField(max_length=PARTITION_NAME_MAX_LENGTH, blank=True)
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH, blank=True)
    object_type = models.CharField(max_length=40, blank=True)
    object_id = models.CharField(max_length=AUDIT_OBJECT_ID_MAX_LENGTH, blank=True)
    summary = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    # The hash chain (``scheduler_admin.audit.chain``): the content hash is written with the
    # event, the links at commit.
    content_hash = models.CharField(max_length=HASH_LENGTH, blank=True, default="", db_default="")
    chain_seq = models.BigIntegerField(null=True, blank=True, unique=True)
    prev_hash = models.CharField(max_length=HASH_LENGTH, blank=True, default="", db_default="")
    hash = models.CharField(max_length=HASH_LENGTH, blank=True, default="", db_default="")
    partition_prev_hash = models.CharField(
        max_length=HASH_LENGTH, blank=True, default="", db_default=""
    )
    partition_hash = models.CharField(max_length=HASH_LENGTH, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["kind", "-created_at"], name="audit_kind_time"),
            models.Index(
                fields=["partition_name", "queue_path", "-created_at"], name="audit_queue_time"
            ),
            models.Index(fields=["actor_name", "-created_at"], name="audit_actor_time"),
            # The events the sealing at commit links: only a transaction's own, so few.
            models.Index(
                fields=["id"], name="audit_unsealed", condition=models.Q(chain_seq__isnull=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.kind} {self.summary}"

    @property
    def kind_label(self) -> str:
        """The kind as the console shows it (what ``get_kind_display`` gave with ``choices``)."""
        return kinds.kind_label(self.kind)


class AuditChainHead(models.Model):
    """The last link of one audit chain (``chain.GLOBAL`` or ``partition:<name>``), moved by the
    sealing at commit (``scheduler_admin.audit.chain``); ``seq`` counts the chain's events."""

    chain = models.CharField(max_length=PARTITION_NAME_MAX_LENGTH + 20, primary_key=True)
    seq = models.BigIntegerField(default=0)
    event_id = models.BigIntegerField(null=True, blank=True)
    hash = models.CharField(max_length=HASH_LENGTH)

    def __str__(self) -> str:
        return f"{self.chain} #{self.seq} {self.hash[:12]}"
