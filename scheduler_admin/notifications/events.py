"""What a subscriber can be told about: the notification event kinds, declared once.

Each kind is ``VALUE = "area.what", "Label"``. Most are read from the audit log by the sweep
(``sweep.py``: a run's or a timer's audit event maps to at most one kind, ``kind_of_audit``);
``agent.stale`` comes from the agents' heartbeats; ``change_request.waiting`` from the audit
event of a change held for approval (``change.requested``, written by ``queues.approval_gate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import models

#: The run outcomes a subscriber may ask about by name (``run.short``, ``run.does_not_help``).
ALERT_OUTCOMES = ("short", "does_not_help")


class EventKind(models.TextChoices):
    """What happened. Stored as text in subscriptions (a JSON list) and notifications."""

    TIMER_STARTED = "timer.started", "Quota timer started"
    TIMER_CANCELLED = "timer.cancelled", "Quota timer cancelled"
    RUN_STARTED = "run.started", "Preemption run started"
    RUN_FINISHED_WITH_VICTIMS = "run.victims", "Run finished with victims"
    RUN_SHORT = "run.short", "Run ended short"
    RUN_DOES_NOT_HELP = "run.does_not_help", "Run does not help"
    RUN_FAILED = "run.failed", "Run failed"
    RUN_STOPPED = "run.stopped", "Run stopped (no longer needed)"
    AGENT_STALE = "agent.stale", "Cluster agent stale"
    CHANGE_REQUEST_WAITING = "change_request.waiting", "Change request waiting"


#: Events about a partition as a whole (no queue path): only global roles may read them.
PARTITION_WIDE = frozenset({EventKind.AGENT_STALE})


@dataclass(frozen=True)
class Event:
    """One thing that happened, as the fan-out matches it against subscriptions.

    ``key`` makes it unique (an audit event's id, an agent's heartbeat time): a sweep that
    runs twice writes no notification twice. ``link`` is the console path of the page that
    shows it (made absolute with ``PUBLIC_BASE_URL`` when sent). ``audit_event_id``, when the
    event comes from the audit log, lets the fan-out ask the product's own read rules
    (``enforcement.visibility.visible_audit``) whether a subscriber may see it.
    """

    kind: EventKind
    key: str
    partition: str
    queue_path: str
    summary: str
    link: str
    audit_event_id: int | None = None
    data: dict[str, Any] = field(default_factory=dict)


def kind_of_audit(kind: str, data: dict[str, Any]) -> EventKind | None:
    """The notification kind of an audit event, or None when nobody subscribes to it.

    A finished run counts once: ``short`` and ``does_not_help`` by their outcome, any other
    finished run only when it preempted someone (``run.victims``)."""
    if kind == "timer.started":
        return EventKind.TIMER_STARTED
    if kind == "timer.cancelled":
        return EventKind.TIMER_CANCELLED
    if kind == "run.started":
        return EventKind.RUN_STARTED
    if kind == "run.failed":
        return EventKind.RUN_FAILED
    if kind == "run.stopped":
        return EventKind.RUN_STOPPED
    if kind == "change.requested":
        return EventKind.CHANGE_REQUEST_WAITING
    if kind == "run.finished":
        outcome = data.get("outcome")
        if outcome == "short":
            return EventKind.RUN_SHORT
        if outcome == "does_not_help":
            return EventKind.RUN_DOES_NOT_HELP
        if int(data.get("victims") or 0) > 0:
            return EventKind.RUN_FINISHED_WITH_VICTIMS
    return None


#: The audit kinds the sweep reads (everything ``kind_of_audit`` may map).
AUDIT_KINDS = (
    "timer.started",
    "timer.cancelled",
    "run.started",
    "run.failed",
    "run.stopped",
    "run.finished",
    "change.requested",
)
