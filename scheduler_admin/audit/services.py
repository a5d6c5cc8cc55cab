"""Writing audit events. Called by other services inside their own transaction, so an event is
stored exactly when the change it describes is."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
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
    return AuditEvent.objects.create(
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


class SystemEvent(NamedTuple):
    """One event of the system (no user acted), for ``record_system_events``."""

    created_at: datetime
    kind: AuditKind
    partition_name: str
    queue_path: str
    object_type: str
    object_id: str
    summary: str
    data: dict[str, Any]


#: The columns ``record_system_events`` writes, in ``SystemEvent`` order after the actor's two.
_SYSTEM_COLUMNS = (
    "actor_id", "actor_name", "created_at", "kind", "partition_name", "queue_path",
    "object_type", "object_id", "summary", "data",
)  # fmt: skip


def record_system_events(events: Iterable[SystemEvent]) -> None:
    """Append many events of the system at once, inside the caller's transaction (a sweep that
    ends 2,000 timers writes 2,000 events): one ``COPY`` on PostgreSQL, where ``bulk_create``
    spent longer preparing the rows than the database took to store them; ``bulk_create``
    elsewhere. The rows are those ``record_event`` writes with ``actor=None``."""
    if connection.vendor != "postgresql":
        AuditEvent.objects.bulk_create(
            AuditEvent(actor=None, actor_name=SYSTEM_ACTOR, **event._asdict()) for event in events
        )
        return
    statement = f"COPY {AuditEvent._meta.db_table} ({', '.join(_SYSTEM_COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for event in events:
            copy.write_row(
                (
                    None, SYSTEM_ACTOR, event.created_at,
                    str(event.kind),  # the value: psycopg would write an enum's name
                    event.partition_name, event.queue_path, event.object_type, event.object_id,
                    event.summary, json.dumps(event.data, separators=(",", ":")),
                )
            )  # fmt: skip
