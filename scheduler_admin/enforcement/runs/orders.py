"""Writing a chunk's eviction orders (step 2 of ``execution._preempt_chunk``).

A run of 5,000 victims writes 5,000 orders. Django's ``bulk_create`` binds each of their 17
values one by one (a third of the time of a run's evictions); on PostgreSQL the orders go in
as one ``INSERT ... SELECT`` instead: the values that differ between the orders (the victim,
its task and its node) as three arrays through ``unnest``, the others, the same for the whole
chunk, once each. Ids are given in the victims' order, as ``bulk_create`` gives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg
from django.db import connection

from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunVictim

#: Orders from which a chunk is written with ``unnest`` (PostgreSQL).
_ARRAYS_FROM = 50
#: The columns that differ from one order of a chunk to the next, with their array types.
_PER_ORDER = (("victim_id", "bigint"), ("allocation_id", "text"), ("node_name", "text"))


def insert_orders(run: PreemptionRun, victims: Sequence[RunVictim], now: datetime) -> None:
    """An eviction order for each of ``victims`` (in order), created ``now``, skipping those
    whose task already has one (``eviction_once_per_allocation``: ``ON CONFLICT DO NOTHING``,
    as ``bulk_create(ignore_conflicts=True)``)."""
    template = EvictionOrder(
        partition=run.partition,
        run=run,
        soft=run.soft_eviction,
        created_at=now,
        next_attempt_at=now,
    )
    if connection.vendor != "postgresql" or len(victims) < _ARRAYS_FROM:
        EvictionOrder.objects.bulk_create(
            [_order_of(template, victim) for victim in victims], ignore_conflicts=True
        )
        return
    per_order = dict(_PER_ORDER)
    columns, selects, constants = [], [], []
    for field in EvictionOrder._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(connection.ops.quote_name(field.column))
        if field.attname in per_order:
            selects.append(f"s.{field.attname}")
            continue
        # The value ``bulk_create`` would write for the template (its defaults included).
        value = field.get_db_prep_save(field.pre_save(template, add=True), connection)
        selects.append(f"%s::{field.cast_db_type(connection)}")
        constants.append(value)
    arrays = [
        [victim.pk for victim in victims],
        [victim.allocation_id for victim in victims],
        [victim.node_name for victim in victims],
    ]
    unnest = ", ".join(f"%b::{db_type}[]" for _, db_type in _PER_ORDER)
    aliases = ", ".join(name for name, _ in _PER_ORDER)
    sql = (
        f"INSERT INTO {connection.ops.quote_name(EvictionOrder._meta.db_table)} "  # noqa: S608 - model names
        f"({', '.join(columns)}) SELECT {', '.join(selects)} "
        f"FROM unnest({unnest}) WITH ORDINALITY AS s({aliases}, n) ORDER BY s.n "
        "ON CONFLICT DO NOTHING"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, [*constants, *arrays])


def _order_of(template: EvictionOrder, victim: RunVictim) -> EvictionOrder:
    """``template``'s values, for ``victim``."""
    return EvictionOrder(
        partition_id=template.partition_id,
        run_id=template.run_id,
        victim_id=victim.pk,
        allocation_id=victim.allocation_id,
        node_name=victim.node_name,
        soft=template.soft,
        created_at=template.created_at,
        next_attempt_at=template.next_attempt_at,
    )
