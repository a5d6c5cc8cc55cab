"""Audit events: one typed, indexed row for every change and every preemption decision."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scheduler_admin.base.limits import (
    AUDIT_OBJECT_ID_MAX_LENGTH,
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)


class AuditKind(models.TextChoices):
    """What happened. New kinds are added here so the audit filter lists them."""

    CONFIG_CHANGED = "config.changed", "Config changed"
    CONFIG_IMPORTED = "config.imported", "Config imported"
    CONFIG_REVERTED = "config.reverted", "Config reverted"
    STATE_INGESTED = "state.ingested", "Cluster state ingested"
    TIMER_STARTED = "timer.started", "Quota timer started"
    TIMER_RESET = "timer.reset", "Quota timer reset"
    TIMER_CANCELLED = "timer.cancelled", "Quota timer cancelled"
    TIMER_DEFERRED = "timer.deferred", "Quota timer deferred"
    TIMER_NOT_NEEDED = "timer.not_needed", "Quota timer not needed"
    RUN_STARTED = "run.started", "Preemption run started"
    RUN_RESUMED = "run.resumed", "Preemption run resumed"
    RUN_PLANNED = "run.planned", "Preemption run planned"
    RUN_FINISHED = "run.finished", "Preemption run finished"
    RUN_SKIPPED = "run.skipped", "Preemption run skipped"
    RUN_ATTEMPT_FAILED = "run.attempt_failed", "Preemption run attempt failed"
    RUN_FAILED = "run.failed", "Preemption run failed"
    RUN_ABORTED = "run.aborted", "Preemption run aborted"
    RUN_STOPPED = "run.stopped", "Preemption run stopped (no longer needed)"
    VICTIM_PREEMPTED = "victim.preempted", "Victim preempted"
    EVICTION_ACKNOWLEDGED = "eviction.acknowledged", "Eviction acknowledged"
    EVICTION_DELIVERY_FAILED = "eviction.delivery_failed", "Eviction webhook failed"
    EVICTION_REPORTED = "eviction.reported", "Eviction reported by the cluster"
    AGENT_REGISTERED = "agent.registered", "Cluster agent registered"
    AGENT_CONFIG_APPLIED = "agent.config_applied", "Cluster agent applied a config revision"
    USER_CREATED = "user.created", "User created"
    USER_ROLE_CHANGED = "user.role_changed", "User role changed"
    USER_DEACTIVATED = "user.deactivated", "User deactivated"
    USER_REACTIVATED = "user.reactivated", "User reactivated"
    TOKEN_ISSUED = "token.issued", "API token issued"
    TOKEN_REVOKED = "token.revoked", "API token revoked"
    # Sign-in hardening (issue 16, part "auth")
    SIGNIN_LOCKED_OUT = "signin.locked_out", "Sign-in locked after failed attempts"
    SIGNIN_UNLOCKED = "signin.unlocked", "Sign-in unlocked"
    SIGNIN_REFUSED = "signin.refused", "Single sign-on refused"
    # Queue grants (issue 16, tenant admins): ``accounts.grants``.
    GRANT_CREATED = "grant.created", "Queue grant given"
    GRANT_CHANGED = "grant.changed", "Queue grant role changed"
    GRANT_REVOKED = "grant.revoked", "Queue grant revoked"
    USER_GROUPS_CHANGED = "user.groups_changed", "User groups changed"
    # Passwords change in the product, never in the Django admin (issue 23, no back doors).
    USER_PASSWORD_CHANGED = "user.password_changed", "User password changed"


class AuditEvent(models.Model):
    """An append-only record of one event.

    The actor and the objects are stored as text (``actor_name``, ``partition_name``,
    ``queue_path``) next to the optional user link, so the record still reads correctly after the
    user or queue is deleted (STYLE habit 7). Each column is as long as the value it records can
    be (``base.limits``): an event about a 253-character allocation id must not fail.
    ``data`` holds the event's details (revision number, changed fields, ...) for the JSON
    export. Indexes follow the audit page's filters: newest
    first, by kind, by queue and by actor.
    """

    created_at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=40, choices=AuditKind.choices)
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

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["kind", "-created_at"], name="audit_kind_time"),
            models.Index(
                fields=["partition_name", "queue_path", "-created_at"], name="audit_queue_time"
            ),
            models.Index(fields=["actor_name", "-created_at"], name="audit_actor_time"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.kind} {self.summary}"
