"""Writing audit events. Called by other services inside their own transaction, so an event is
stored exactly when the change it describes is."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import psycopg
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.utils import timezone

from scheduler_admin.audit import chain
from scheduler_admin.audit.kinds import AuditKind, checked_kind
from scheduler_admin.audit.models import AuditEvent

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
    """Append one event. ``actor`` None means the system. It joins the hash chain when the
    transaction commits (``chain``: one insert here, the link at commit)."""
    event = new_event(
        kind, actor=actor, summary=summary, partition_name=partition_name,
        queue_path=queue_path, object_type=object_type, object_id=object_id, data=data, at=at,
    )  # fmt: skip
    event.save(force_insert=True)
    _seal_without_trigger()
    return event


def _seal_without_trigger() -> None:
    """Where no trigger links events at commit (SQLite), link them now (``chain``)."""
    if connection.vendor != "postgresql":
        chain.seal_pending()


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
    them with one ``record_events``, with the same content as one by one.

    ``kind`` must be declared in ``AuditKind`` (``UnknownAuditKind`` otherwise): the column
    stores any text, so this is where an undeclared kind is caught, before any row is written.

    The event's ``content_hash`` (``chain.content_hash``) is computed here, over ``data`` as
    the database will give it back (JSON types only: a date becomes its text), so a later
    ``verify`` recomputes the same hash from the stored row."""
    encoder = AuditEvent._meta.get_field("data").encoder
    event = AuditEvent(
        created_at=at or timezone.now(),
        kind=checked_kind(kind),
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor_name(actor),
        partition_name=partition_name,
        queue_path=queue_path,
        object_type=object_type,
        object_id=object_id,
        summary=summary,
        data=json.loads(json.dumps(data or {}, cls=encoder)),
    )
    event.content_hash = chain.content_hash(vars(event))
    return event


#: Events from which ``record_events`` sends columns as arrays (PostgreSQL).
_ARRAYS_FROM = 50
_COLUMNS = (
    ("created_at", "timestamptz"), ("kind", "text"), ("actor_id", "bigint"),
    ("actor_name", "text"), ("partition_name", "text"), ("queue_path", "text"),
    ("object_type", "text"), ("object_id", "text"), ("summary", "text"), ("data", "text"),
    ("content_hash", "text"),
)  # fmt: skip


def record_events(events: Iterable[AuditEvent]) -> None:
    """Append events built by ``new_event`` with one insert, in the given order (their ids
    increase in that order, as if they had been recorded one by one).

    On PostgreSQL a large batch goes as one binary array per column through ``unnest`` (a run's
    chunk or a bulk acknowledgement writes thousands: Django's per-value parameter binding
    would cost more than the insert); elsewhere, and for a few events, ``bulk_create``. The
    whole batch joins the hash chain in one pass at commit (``chain``)."""
    events = list(events)
    for event in events:  # built without ``new_event``? Refuse an undeclared kind all the same.
        checked_kind(event.kind)
        if not event.content_hash:
            event.content_hash = chain.content_hash(vars(event))
    if connection.vendor != "postgresql" or len(events) < _ARRAYS_FROM:
        AuditEvent.objects.bulk_create(events)
        _seal_without_trigger()
        return
    encoder = AuditEvent._meta.get_field("data").encoder
    arrays = [
        [getattr(event, name) for event in events]
        if name != "data"
        else [json.dumps(event.data, cls=encoder) for event in events]
        for name, _ in _COLUMNS
    ]
    quote = connection.ops.quote_name
    names = ", ".join(quote(name) for name, _ in _COLUMNS)
    aliases = ", ".join(f"c{i}" for i in range(len(_COLUMNS)))
    selects = ", ".join(
        f"c{i}::jsonb" if name == "data" else f"c{i}" for i, (name, _) in enumerate(_COLUMNS)
    )
    unnest = ", ".join(f"%b::{db_type}[]" for _, db_type in _COLUMNS)
    sql = (
        f"INSERT INTO {quote(AuditEvent._meta.db_table)} ({names}) "  # noqa: S608 - model names
        f"SELECT {selects} FROM unnest({unnest}) WITH ORDINALITY AS s({aliases}, n) ORDER BY n"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, arrays)
