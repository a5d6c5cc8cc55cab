"""Rows of packed slots (``models``): writing one slot of many series, reading series back.

Only ``services`` calls the writers, holding the partition's ``UsageSampling`` row lock, so no
two writers ever change the rows of one partition at once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, models

from scheduler_admin.history import packing
from scheduler_admin.history.models import (
    COVERAGE,
    MINUTE_SLOTS,
    QUARTER_SLOTS,
    UsageMinutes,
    UsageQuarters,
)
from scheduler_admin.history.timeaxis import DAY, HOUR, MINUTE, QUARTER, floor_to

#: A series: (queue path, resource); ``(COVERAGE, COVERAGE)`` is the coverage row.
Key = tuple[str, str]
COVERAGE_KEY: Key = (COVERAGE, COVERAGE)


@dataclass(frozen=True)
class Table:
    """One of the two tables: its model, the name of its start column, how long a row spans,
    how long a slot spans, and how many slots a row holds."""

    model: type[models.Model]
    start: str
    span: timedelta
    step: timedelta
    slots: int

    @property
    def db_table(self) -> str:
        return self.model._meta.db_table


MINUTES = Table(UsageMinutes, "hour", HOUR, MINUTE, MINUTE_SLOTS)
QUARTERS = Table(UsageQuarters, "day", DAY, QUARTER, QUARTER_SLOTS)

# PostgreSQL: the slot is written in place, in one statement for every series; a new row is
# zeros with that slot set. The row lock of each upsert is the only one taken.
_SET_SLOT_SQL = """
INSERT INTO {table} (partition_id, queue_path, resource, {start}, slots)
SELECT %s, s.queue_path, s.resource, %s, overlay(%s::bytea placing int8send(s.value) from %s for 8)
FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS s(queue_path, resource, value)
ON CONFLICT (partition_id, queue_path, resource, {start}) DO UPDATE
SET slots = overlay({table}.slots placing substring(EXCLUDED.slots from %s for 8) from %s for 8)
"""
# Anywhere (SQLite): the rows are read, changed here and written back whole.
_UPSERT_SQL = """
INSERT INTO {table} (partition_id, queue_path, resource, {start}, slots) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (partition_id, queue_path, resource, {start}) DO UPDATE SET slots = excluded.slots
"""


def set_slot(
    table: Table,
    partition_id: int,
    start: datetime,
    index: int,
    values: Mapping[Key, int],
    *,
    in_place: bool | None = None,
) -> None:
    """Set slot ``index`` of the rows starting at ``start`` to ``values`` (series -> value),
    creating missing rows as zeros. Other slots and other series are left as they are.

    ``in_place`` picks the writer: PostgreSQL's in-place ``overlay`` (the default there) or the
    read-change-write one any database runs (the default elsewhere; tests run both on
    PostgreSQL and compare).
    """
    if not values:
        return
    if in_place is None:
        in_place = connection.vendor == "postgresql"
    keys = sorted(values)
    at = connection.ops.adapt_datetimefield_value(start)
    if in_place:
        position = packing.byte_position(index)
        sql = _SET_SLOT_SQL.format(table=table.db_table, start=table.start)
        params = [
            partition_id, at, packing.zeros(table.slots), position,
            [queue for queue, _ in keys], [resource for _, resource in keys],
            [packing.clamp(values[key]) for key in keys], position, position,
        ]  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
        return
    stored = {
        (queue, resource): bytes(slots)
        for queue, resource, slots in table.model.objects.filter(
            partition_id=partition_id, **{table.start: start}
        ).values_list("queue_path", "resource", "slots")
    }
    blank = packing.zeros(table.slots)
    rows = [
        (
            partition_id, queue, resource, at,
            packing.with_slot(stored.get((queue, resource), blank), table.slots, index,
                              values[(queue, resource)]),
        )
        for queue, resource in keys
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.executemany(_UPSERT_SQL.format(table=table.db_table, start=table.start), rows)


_REPLACE_SQL = """
INSERT INTO {table} (partition_id, queue_path, resource, {start}, slots)
SELECT %s, s.queue_path, s.resource, %s, s.slots
FROM unnest(%s::text[], %s::text[], %s::bytea[]) AS s(queue_path, resource, slots)
ON CONFLICT (partition_id, queue_path, resource, {start}) DO UPDATE SET slots = EXCLUDED.slots
"""


def close_rows(
    table: Table, partition_id: int, start: datetime, rows: Mapping[Key, tuple[int, ...]]
) -> int:
    """Rewrite the rows starting at ``start`` (an hour or a day that is over: nothing writes
    them again) in their closed form (``packing.close``); how many got shorter."""
    closed = {key: packing.close(values) for key, values in rows.items()}
    shorter = sorted(key for key, data in closed.items() if len(data) < 8 * table.slots)
    if not shorter:
        return 0
    at = connection.ops.adapt_datetimefield_value(start)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                _REPLACE_SQL.format(table=table.db_table, start=table.start),
                [partition_id, at, [queue for queue, _ in shorter],
                 [resource for _, resource in shorter], [closed[key] for key in shorter]],
            )  # fmt: skip
        else:
            cursor.executemany(
                _UPSERT_SQL.format(table=table.db_table, start=table.start),
                [(partition_id, queue, resource, at, closed[(queue, resource)])
                 for queue, resource in shorter],
            )  # fmt: skip
    return len(shorter)


def rows_at(table: Table, partition_id: int, start: datetime) -> dict[Key, tuple[int, ...]]:
    """Every series of one row start (the roll-up reads an hour of every queue)."""
    return {
        (queue, resource): packing.unpack(slots, table.slots)
        for queue, resource, slots in table.model.objects.filter(
            partition_id=partition_id, **{table.start: start}
        ).values_list("queue_path", "resource", "slots")
    }


def rows_between(
    table: Table, partition_id: int, paths: Collection[str], since: datetime, until: datetime
) -> dict[Key, dict[datetime, tuple[int, ...]]]:
    """The rows of the series of ``paths`` (and the coverage rows) that hold slots in
    ``[since, until)``: series -> row start -> slots. One index range per queue."""
    first = floor_to(since, table.span)
    rows = table.model.objects.filter(
        partition_id=partition_id,
        queue_path__in=[*paths, COVERAGE],
        **{f"{table.start}__gte": first, f"{table.start}__lt": until},
    ).values_list("queue_path", "resource", table.start, "slots")
    found: dict[Key, dict[datetime, tuple[int, ...]]] = {}
    for queue, resource, start, slots in rows:
        found.setdefault((queue, resource), {})[start] = packing.unpack(slots, table.slots)
    return found


def delete_before(table: Table, partition_id: int, cut: datetime) -> int:
    """Delete the rows whose every slot is older than ``cut``; how many."""
    sql = f"DELETE FROM {table.db_table} WHERE partition_id = %s AND {table.start} <= %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [partition_id, connection.ops.adapt_datetimefield_value(cut - table.span)]
        )
        return cursor.rowcount


def spread(
    rows: Mapping[datetime, tuple[int, ...]], step: timedelta, since: datetime, count: int
) -> Iterable[tuple[int, int]]:
    """(point index, value) of every slot of ``rows`` inside the ``count`` points from
    ``since``, for series stored at the points' own step."""
    for start, slots in rows.items():
        offset = (start - since) // step
        low = max(0, -offset)
        high = min(len(slots), count - offset)
        for slot in range(low, high):
            yield offset + slot, slots[slot]
