"""The sweep: reads what happened since it last looked and writes the notifications it causes.

Two sources, both read here so that no lower app imports this one:

- **the audit log**, in commit order (``chain_seq``, numbered at commit by ``audit.chain``):
  timers started and cancelled, runs started, finished, failed and stopped. The place read up to
  is kept in ``SweepCursor``; it moves in the same transaction as the notifications it wrote, so
  a crash between the two writes neither loses nor repeats a message (and the outbox's unique
  ``dedupe`` makes a repeat harmless anyway). A fresh install starts at the log's end: it does
  not notify about the past.
- **the agents' heartbeats**: an agent silent for ``STALE_AGENT_SECONDS`` is reported once per
  silence (``StaleAgentReport`` keeps the heartbeat time reported).

Only one sweep works at a time: it takes the cursor row ``FOR UPDATE NOWAIT`` and a second one
that finds it taken does nothing (the first will have read the same events). It runs on the
webhook worker just before the deliveries, so an event reaches its subscribers within one sweep.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Max
from django.urls import reverse

from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.notifications.events import AUDIT_KINDS, Event, EventKind, kind_of_audit
from scheduler_admin.notifications.fanout import event_link, fan_out
from scheduler_admin.notifications.models import StaleAgentReport, SweepCursor

#: Audit events read per sweep at most; the rest wait for the next sweep.
BATCH = 500


def sweep_events(now: datetime) -> int:
    """Read new audit events and stale agents, write their notifications; how many rows."""
    with transaction.atomic():
        cursor = _locked_cursor()
        if cursor is None:
            return 0
        written = _read_audit(cursor, now) + _read_stale_agents(now)
    return written


def _locked_cursor() -> SweepCursor | None:
    """The cursor row, locked; None when another sweep holds it. Created at the log's end."""
    head = AuditEvent.objects.aggregate(seq=Max("chain_seq"))["seq"] or 0
    SweepCursor.objects.get_or_create(pk=1, defaults={"chain_seq": head})
    try:
        with transaction.atomic():  # a savepoint: the lock's error must not end the transaction
            return SweepCursor.objects.select_for_update(nowait=True).get(pk=1)
    except DatabaseError:  # another sweep holds it
        return None


def _read_audit(cursor: SweepCursor, now: datetime) -> int:
    # The head first: events numbered after this read wait for the next sweep, so the cursor
    # never passes an event it did not read.
    head = AuditEvent.objects.aggregate(seq=Max("chain_seq"))["seq"] or 0
    events = list(
        AuditEvent.objects.filter(
            chain_seq__gt=cursor.chain_seq, chain_seq__lte=head, kind__in=AUDIT_KINDS
        ).order_by("chain_seq")[:BATCH]
    )
    written = 0
    for row in events:
        kind = kind_of_audit(row.kind, row.data or {})
        if kind is not None:
            written += fan_out(_from_audit(row, kind), now=now)
    read_up_to = events[-1].chain_seq if len(events) == BATCH else head
    if read_up_to != cursor.chain_seq:
        SweepCursor.objects.filter(pk=cursor.pk).update(chain_seq=read_up_to)
    return written


def _from_audit(row: AuditEvent, kind: EventKind) -> Event:
    run_id = None
    if row.object_type == "run" and row.object_id.isdigit():
        run_id = int(row.object_id)
    link = event_link(partition=row.partition_name, queue_path=row.queue_path, run_id=run_id)
    if row.object_type == "change_request" and row.object_id.isdigit():
        link = reverse("change-request", args=[row.partition_name, int(row.object_id)])
    return Event(
        kind=kind,
        key=f"audit:{row.pk}",
        partition=row.partition_name,
        queue_path=row.queue_path,
        summary=row.summary,
        link=link,
        audit_event_id=row.pk,
    )


def _read_stale_agents(now: datetime) -> int:
    silent_since = now - timedelta(seconds=settings.STALE_AGENT_SECONDS)
    reported = dict(StaleAgentReport.objects.values_list("agent_id", "heartbeat_at"))
    written = 0
    for agent in ClusterAgent.objects.filter(last_heartbeat_at__lte=silent_since).select_related(
        "partition"
    ):
        if reported.get(agent.pk) == agent.last_heartbeat_at:
            continue
        seconds = int((now - agent.last_heartbeat_at).total_seconds())
        event = Event(
            kind=EventKind.AGENT_STALE,
            key=f"agent:{agent.pk}:{agent.last_heartbeat_at.timestamp():.0f}",
            partition=agent.partition.name,
            queue_path="",
            summary=f"Cluster agent {agent.name} ({agent.cluster or 'no cluster name'}) has sent "
            f"no heartbeat for {seconds} s: the product's view of the cluster is getting old.",
            link=event_link(partition=agent.partition.name, queue_path="", run_id=None),
        )
        written += fan_out(event, now=now)
        StaleAgentReport.objects.update_or_create(
            agent=agent, defaults={"heartbeat_at": agent.last_heartbeat_at}
        )
    return written
