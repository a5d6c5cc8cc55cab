"""Row locks on a partition's allocations and asks, always taken in one order.

Several writers change the same allocation rows at once: a cluster-state push (upserts, and the
removals of a ``replace`` push), a run marking its victims ``preempting``, acknowledgements
releasing them. Each is one transaction that writes many rows, and a statement locks rows in
whatever order its plan reads them; a push that also removes rows writes them in two
statements. Two such transactions that lock the same rows in different orders deadlock (a run
holding a victim the push removes, waiting for a victim the push updates, while the push waits
for the first). So every multi-row writer first locks the rows it will write with one
statement that locks them in the key's order (``ORDER BY`` the id: PostgreSQL locks the rows
as the sort hands them out), and only then writes: two writers then meet in the same order and
the later one simply waits.

PostgreSQL only: SQLite (``make run``) runs one writing transaction at a time.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from django.db import connection, models

from scheduler_admin.cluster.models import Allocation, Ask
from scheduler_admin.queues.models import Partition


def lock_allocations(partition: Partition, ids: Iterable[str]) -> None:
    """Lock the partition's allocations with these ids, in id order, until the transaction
    ends (rows that do not exist are skipped)."""
    _lock(Allocation, partition, ids)


def lock_asks(partition: Partition, ids: Iterable[str]) -> None:
    """Lock the partition's asks with these ids, in id order, until the transaction ends."""
    _lock(Ask, partition, ids)


def _lock(model: type[models.Model], partition: Partition, ids: Iterable[str]) -> None:
    wanted = sorted(set(ids))
    if not wanted or connection.vendor != "postgresql":
        return
    meta = model._meta  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    column = quote(meta.get_field("external_id").column)
    sql = (
        f"SELECT 1 FROM {quote(meta.db_table)} "  # noqa: S608 - names from the model, quoted
        f"WHERE {quote('partition_id')} = %b AND {column} = ANY(%b::text[]) "
        f"ORDER BY {column} FOR UPDATE"
    )
    # The ids go as one binary array (a push may lock tens of thousands), on Django's
    # connection and so inside its transaction, as the ingest's upserts do.
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, [partition.pk, wanted])
