"""The audit kinds: what an audit event says happened, declared once, in code.

This enum is the registry. The audit column stores the kind as plain text (no database
``choices``), so a new kind is one line here and one row on the reference page
(``docs/reference/runs-and-reasons.md``, checked by a test), never a migration. Everything that
lists kinds reads them from here: ``record_event`` refuses a kind not declared here, the audit
filter (HTML page, API, exports) offers exactly these values, the API schema's enum is built from
them and the PDF report's summary prints their labels.

Each member is ``VALUE = "area.verb", "Label"``: the value is what is stored and filtered on (at
most ``KIND_MAX_LENGTH`` characters), the label is what the console and the PDF show.
"""

from __future__ import annotations

from django.db import models

#: The audit column's length; a test checks every kind fits.
KIND_MAX_LENGTH = 40


class AuditKind(models.TextChoices):
    """What happened. A new kind is added here (and documented); it needs no migration."""

    CONFIG_CHANGED = "config.changed", "Config changed"
    CONFIG_IMPORTED = "config.imported", "Config imported"
    CONFIG_REVERTED = "config.reverted", "Config reverted"
    # Approvals of changes: ``queues.approval_gate``, ``queues.change_requests``.
    CHANGE_REQUESTED = "change.requested", "Change requested (awaiting approval)"
    CHANGE_APPROVED = "change.approved", "Change request approved"
    CHANGE_REJECTED = "change.rejected", "Change request rejected"
    CHANGE_WITHDRAWN = "change.withdrawn", "Change request withdrawn"
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
    RUN_OBSERVED = "run.observed", "Preemption run observed (nothing evicted)"
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
    # Sign-in hardening: lock-outs and single sign-on.
    SIGNIN_LOCKED_OUT = "signin.locked_out", "Sign-in locked after failed attempts"
    SIGNIN_UNLOCKED = "signin.unlocked", "Sign-in unlocked"
    SIGNIN_REFUSED = "signin.refused", "Single sign-on refused"
    # Queue grants for tenant admins: ``accounts.grants``.
    GRANT_CREATED = "grant.created", "Queue grant given"
    GRANT_CHANGED = "grant.changed", "Queue grant role changed"
    GRANT_REVOKED = "grant.revoked", "Queue grant revoked"
    USER_GROUPS_CHANGED = "user.groups_changed", "User groups changed"
    # Passwords change in the product, never in the Django admin (no back doors).
    USER_PASSWORD_CHANGED = "user.password_changed", "User password changed"
    # Where a user's e-mail notifications go: set by the user or an admin.
    USER_EMAIL_CHANGED = "user.email_changed", "User e-mail address changed"
    # Scheduled changes (queues.scheduled): kept for a time, then applied, failed or cancelled.
    SCHEDULED_CREATED = "scheduled.created", "Change scheduled"
    SCHEDULED_APPLIED = "scheduled.applied", "Scheduled change applied"
    SCHEDULED_FAILED = "scheduled.failed", "Scheduled change failed"
    SCHEDULED_CANCELLED = "scheduled.cancelled", "Scheduled change cancelled"
    # Notifications to people: ``notifications.services``.
    NOTIFY_CHANNEL_SAVED = "notify.channel_saved", "Notification channel saved"
    NOTIFY_CHANNEL_DELETED = "notify.channel_deleted", "Notification channel deleted"
    NOTIFY_SUBSCRIPTION_SAVED = "notify.subscription_saved", "Notification subscription saved"
    NOTIFY_SUBSCRIPTION_DELETED = "notify.subscription_deleted", "Notification subscription deleted"


class UnknownAuditKind(ValueError):
    """A kind that is not declared in ``AuditKind``: a programming error, never user input."""


def checked_kind(kind: str) -> AuditKind:
    """``kind`` as a registered ``AuditKind``, or ``UnknownAuditKind`` naming it.

    The column no longer refuses unknown values, so the one function that builds audit rows
    (``services.new_event``) checks here instead; no database is needed to check."""
    try:
        return AuditKind(kind)
    except ValueError:
        raise UnknownAuditKind(
            f"{kind!r} is not an audit kind; declare it in scheduler_admin.audit.kinds.AuditKind"
        ) from None


def kind_label(kind: str) -> str:
    """The label of a stored kind; a value no longer declared (an old row) reads as itself."""
    try:
        return AuditKind(kind).label
    except ValueError:
        return kind
