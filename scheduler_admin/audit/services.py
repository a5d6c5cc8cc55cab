"""Writing audit events. Called by other services inside their own transaction, so an event is
stored exactly when the change it describes is."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils import timezone

from scheduler_admin.audit.models import AuditEvent, AuditKind

#: The name recorded when the system itself acts (beat, a worker, a migration).
SYSTEM_ACTOR = "system"


def actor_name(actor: AbstractBaseUser | AnonymousUser | None) -> str:
    if actor is None or not actor.is_authenticated:
        return SYSTEM_ACTOR
    return actor.get_username()


def record_event(
    kind: AuditKind,
    *,
    actor: AbstractBaseUser | None,
    summary: str,
    partition_name: str = "",
    queue_path: str = "",
    object_type: str = "",
    object_id: str = "",
    data: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> AuditEvent:
    """Append one event. ``actor`` None means the system."""
    event = new_event(
        kind, actor=actor, summary=summary, partition_name=partition_name,
        queue_path=queue_path, object_type=object_type, object_id=object_id, data=data, at=at,
    )  # fmt: skip
    event.save(force_insert=True)
    return event


def new_event(
    kind: AuditKind,
    *,
    actor: AbstractBaseUser | None,
    summary: str,
    partition_name: str = "",
    queue_path: str = "",
    object_type: str = "",
    object_id: str = "",
    data: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> AuditEvent:
    """The event ``record_event`` would append, not yet saved: a service that writes many at
    once (a run's chunk of victims, a bulk acknowledgement) builds them with this and stores
    them with one ``record_events``, with the same content as one by one."""
    return AuditEvent(
        created_at=at or timezone.now(),
        kind=kind,
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor_name(actor),
        partition_name=partition_name,
        queue_path=queue_path,
        object_type=object_type,
        object_id=object_id,
        summary=summary,
        data=data or {},
    )


def record_events(events: list[AuditEvent]) -> None:
    """Append events built by ``new_event`` with one insert, in the given order (their ids
    increase in that order, as if they had been recorded one by one)."""
    AuditEvent.objects.bulk_create(events)
