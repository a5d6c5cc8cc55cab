"""The cluster app's use case: ``ingest_cluster_state``, a pushed body applied in one transaction.

Bulk and idempotent: the body is parsed (``ingest.parsing``), then, under the partition's locks,
compared with what is stored and only what changed is written (``ingest.writing``), with one
``state.ingested`` audit event when something did. The body's vocabulary and what a push means
are described in ``scheduler_admin.cluster.ingest``. ``IngestErrors`` and ``IngestResult``, what
the service raises and returns, are exported from here for its callers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.ingest.parsing import EMPTY_PUSH, IngestErrors, parse_cluster_state
from scheduler_admin.cluster.ingest.writing import (
    IngestResult,
    list_removals,
    remove_state,
    write_state,
)
from scheduler_admin.cluster.models import Allocation, Application, Ask, Node
from scheduler_admin.queues.models import Partition

if TYPE_CHECKING:
    from scheduler_admin.accounts.permissions import Authorize

__all__ = ["IngestErrors", "IngestResult", "analyse_after", "ingest_cluster_state"]


@retry_on_conflict
def ingest_cluster_state(
    partition: Partition,
    body: object,
    *,
    actor: AbstractBaseUser | None,
    audit: bool = True,
    authorize: Authorize | None = None,
) -> IngestResult:
    """Apply a cluster-state body to ``partition`` atomically, or raise ``IngestErrors``.

    Steps, in one transaction, its locks in the order of ``scheduler_admin.base.lock_order``:

    1. check the whole body (``parse_cluster_state``); nothing is written unless it is valid,
       and a body with nothing to push (``{}``, empty lists) is refused (``EMPTY_PUSH``);
    2. run the caller's in-write authorization (``authorize``: the account checked again, then
       the partition row locked, shared), or lock the partition row alone, shared: the push
       inserts rows that reference it, and a run's writer takes it before the tasks and asks
       this push locks (``lock_order`` level 2);
    3. take the partition's ingest lock (PostgreSQL; SQLite's IMMEDIATE transactions already
       run one writer at a time), so two agents pushing at once apply one after the other and
       each sees exactly what it changed;
    4. compare every item with its stored row and write only new and changed rows
       (``write_state``), then the removals (``remove_state``: the ``remove`` lists and, for a
       ``replace`` push, everything of the partition the body does not list);
    5. record one ``state.ingested`` audit event with the counts, but only when something
       changed: an agent repeating the same state every few seconds writes nothing at all;
    6. once committed, analyse the tables the push changed a large part of (``analyse_after``).

    ``audit=False`` is for the demo simulator's churn only: it stands in for the cluster, and a
    ``state.ingested`` event per step (about 1,200 an hour) would bury the admins' changes and
    the runs in the audit log. Every push through the API or ``ingest_state`` that changes
    something is audited.
    """
    state = parse_cluster_state(partition, body)
    if state.is_empty():
        raise IngestErrors({"body": [EMPTY_PUSH]})
    with transaction.atomic():
        if authorize is not None:
            authorize(partition, exclusive=False)
        else:
            lock_partition(partition.pk, exclusive=False)
        _lock_partition_state(partition)
        removed = list_removals(partition, state)
        result = write_state(partition, state, removed)
        remove_state(partition, state, removed, result)
        if audit and result.anything_changed:
            record_event(
                AuditKind.STATE_INGESTED,
                actor=actor,
                partition_name=partition.name,
                object_type="cluster-state",
                summary=result.summary(partition.name),
                data=result.to_json(),
            )
        transaction.on_commit(lambda: analyse_after(result), robust=True)
    return result


#: A push that writes at least this many rows of a table, and at least ``ANALYSE_FRACTION`` of
#: the rows the table had, has the table analysed once it commits.
ANALYSE_MIN_ROWS = 1000
ANALYSE_FRACTION = 0.1
_ANALYSED = {"nodes": Node, "applications": Application, "allocations": Allocation, "asks": Ask}


def analyse_after(result: IngestResult) -> list[str]:
    """Refresh the planner's statistics of the tables a large push changed (PostgreSQL; returns
    the tables analysed).

    Without them, the first big push into an empty or young table leaves PostgreSQL guessing: it
    chose the ``(partition, state, queue)`` index over the unique id for a run's eviction
    updates, each one reading every running task of the partition (59 evictions/s instead of
    256 at 200,000 tasks), until autovacuum came by. Autovacuum's own rule (rows changed above
    10% of the table) is applied here at once, with a floor so a steady trickle of pushes never
    pays for it. Called after the push commits (``ANALYZE`` reads what is committed and would
    otherwise lengthen the push's transaction).
    """
    if connection.vendor != "postgresql":
        return []
    written = {kind: sum(result.changed[kind].values()) for kind in _ANALYSED}
    large = {kind: count for kind, count in written.items() if count >= ANALYSE_MIN_ROWS}
    if not large:
        return []
    tables = {kind: _ANALYSED[kind]._meta.db_table for kind in large}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)",
            [list(tables.values())],
        )
        rows = dict(cursor.fetchall())
        # reltuples is -1 for a table never analysed (or vacuumed) yet.
        chosen = [
            table
            for kind, table in tables.items()
            if rows.get(table, -1) < 0 or large[kind] >= ANALYSE_FRACTION * rows[table]
        ]
        for table in chosen:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return chosen


def _lock_partition_state(partition: Partition) -> None:
    """Serialise pushes to one partition (a transaction-scoped advisory lock, so config saves,
    which lock the partition row, are not held up by a long push)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"cluster-state:{partition.pk}"],
            )
