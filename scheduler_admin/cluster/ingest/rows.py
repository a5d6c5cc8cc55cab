"""Bulk reads and upserts of a partition's rows by their cluster key, as few statements as
the database allows: ``stored_rows`` (the compared columns of the rows a push names) and
``upsert_rows`` (``INSERT .. ON CONFLICT DO UPDATE``; on PostgreSQL one binary array per
column through ``unnest``, and ``COPY`` for the rows known to be new). What to compare and
write is ``writing``'s business.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

import orjson
import psycopg
from django.db import connection, models
from django.db.models.functions import Cast

from scheduler_admin.queues.models import Partition

#: Rows per INSERT statement: under SQLite's 32,766 bound parameters for the widest table.
_BATCH_ROWS = 2000

#: Above this many items of a replace push, reading the partition's whole table beats a
#: huge ``= ANY`` array.
_WHOLE_TABLE_FROM = 1000


def stored_rows(
    model: type[models.Model],
    partition: Partition,
    key: str,
    columns: list[str],
    items: Iterable[Mapping[str, Any]],
    item_key: str,
    *,
    whole: bool = False,
) -> dict[str, tuple[Any, ...]]:
    """The stored values of ``columns`` (attnames) by ``key``, for the rows the items name.

    A large body that is the partition's ``whole`` state (a replace push) reads the
    partition's rows at once rather than sending tens of thousands of ids back to the
    database; any other reads only its own rows (one array of ids). JSON columns are read as
    text and decoded once per distinct text: thousands of tasks share a few resource sets.
    """
    ids = [item[item_key] for item in items]
    if not ids:
        return {}
    rows = model.objects.filter(partition=partition)  # type: ignore[attr-defined]
    # The whole table only for a large replace push (it names every row): a delta of 1,500
    # tasks of a 200,000-task partition once read all 200,000 rows.
    if not whole or len(ids) < _WHOLE_TABLE_FROM:
        rows = _named(model, rows, key, ids)
    fields = {f.attname: f for f in model._meta.concrete_fields}  # type: ignore[attr-defined]
    as_text = [i for i, name in enumerate(columns) if isinstance(fields[name], models.JSONField)]
    rows = rows.annotate(
        **{f"text_{columns[i]}": Cast(columns[i], models.TextField()) for i in as_text}
    )
    names = [f"text_{name}" if i in as_text else name for i, name in enumerate(columns)]
    decoded: dict[str, Any] = {}

    def decode(text: str) -> Any:
        if text not in decoded:
            decoded[text] = json.loads(text)
        return decoded[text]

    stored = {}
    for key_value, *values in _fetch(rows.values_list(key, *names), [key, *columns], fields):
        for i in as_text:
            values[i] = decode(values[i])
        stored[key_value] = tuple(values)
    return stored


def _fetch(
    query: models.QuerySet, attnames: list[str], fields: Mapping[str, models.Field]
) -> Iterable[tuple[Any, ...]]:
    """The rows of a ``values_list`` query. On PostgreSQL, when no column read needs a
    converter (JSON is read as text), fetched at once as the server sends them: the same values
    without Django's per-row iteration (about 3 µs a row: 0.4 s to read back the ids of a first
    replacement's 142,500 applications)."""
    if connection.vendor != "postgresql" or any(
        connection.ops.get_db_converters(fields[name]) or fields[name].get_db_converters(connection)
        for name in attnames
        if not isinstance(fields[name], models.JSONField)
    ):
        return query
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _named(model: type[models.Model], rows: models.QuerySet, key: str, ids: list[str]):
    """``rows`` whose ``key`` is one of ``ids``: on PostgreSQL as one array parameter
    (``= ANY``), not one bound parameter per id (about 20 µs each on the client)."""
    if connection.vendor != "postgresql":
        return rows.filter(**{f"{key}__in": ids})
    column = connection.ops.quote_name(model._meta.get_field(key).column)  # type: ignore[attr-defined]
    table = connection.ops.quote_name(model._meta.db_table)  # type: ignore[attr-defined]
    return rows.extra(where=[f"{table}.{column} = ANY(%s)"], params=[ids])  # noqa: S610


def upsert_rows(
    model: type[models.Model],
    partition: Partition,
    key: str,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    *,
    update: Iterable[str] | None = None,
    update_sql: Mapping[str, str] | None = None,
    stored: Container[str] | None = None,
) -> None:
    """``INSERT (partition, key, *columns) .. ON CONFLICT (partition, key) DO UPDATE``.

    ``rows`` are ``(key, *columns)`` tuples of Python values (attnames: ``application_id``). On
    conflict the ``update`` columns (default: all) take the new values and the ``update_sql``
    columns an SQL expression (``{table}`` names the stored row, ``excluded`` the new one).
    Rows are written in key order, so two writers of overlapping rows lock them in the same
    order.

    On PostgreSQL the rows go as one binary array per column through ``unnest``: a statement
    per table whatever the number of rows, and no per-value quoting (Django's client-side
    parameter binding spends about 20 µs a value: 16 s for 50,000 allocations). Elsewhere
    (SQLite for development) as multi-row ``VALUES`` in batches.

    ``stored``, when given, holds the keys of every stored row among ``rows``, read under the
    partition's ingest lock (every row of these tables is created by a push, under that lock):
    on PostgreSQL the other rows, new for certain, are written with ``COPY`` instead: no
    speculative insertion and no arrays to build, half the time or less (a first replacement
    of 150,000 allocations is all new rows).
    """
    if not rows:
        return
    if stored is not None and connection.vendor == "postgresql":
        new = [row for row in rows if row[0] not in stored]
        if new:
            _copy_rows(model, partition.pk, [key, *columns], new)
            if len(new) == len(rows):
                return
            rows = [row for row in rows if row[0] in stored]
    meta = model._meta  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    by_attname = {f.attname: f for f in meta.concrete_fields}
    fields = [by_attname[name] for name in [key, *columns]]
    names = ", ".join(quote(n) for n in ["partition_id", *(f.column for f in fields)])
    sets = [f"{quote(c)} = excluded.{quote(c)}" for c in (columns if update is None else update)]
    sets += [f"{quote(c)} = {sql.format(table=table)}" for c, sql in (update_sql or {}).items()]
    conflict = (
        f"ON CONFLICT ({quote('partition_id')}, {quote(fields[0].column)}) "
        f"DO UPDATE SET {', '.join(sets)}"
    )
    rows = sorted(rows, key=lambda row: row[0])
    if connection.vendor == "postgresql":
        _insert_arrays(table, names, conflict, partition.pk, fields, rows)
    else:
        _insert_values(table, names, conflict, partition.pk, fields, rows)


def _copy_rows(
    model: type[models.Model], partition_id: int, attnames: list[str], rows: list[tuple[Any, ...]]
) -> None:
    """PostgreSQL: ``COPY`` the rows (``(key, *columns)`` tuples of ``attnames``) into the
    model's table for ``partition_id``, in key order, as text rows (JSON as text:
    ``json_text``)."""
    meta = model._meta  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    by_attname = {f.attname: f for f in meta.concrete_fields}
    fields = [by_attname[name] for name in attnames]
    names = ", ".join(quote(n) for n in ["partition_id", *(f.column for f in fields)])
    encoders = {
        index: f.encoder for index, f in enumerate(fields) if isinstance(f, models.JSONField)
    }
    rows = sorted(rows, key=lambda row: row[0])
    connection.ensure_connection()
    # JSON is encoded row by row as the rows go: the server, busy with the rows already sent
    # (indexes, constraints), is the slower side of a large COPY, and this overlaps with it.
    with (
        psycopg.Cursor(connection.connection) as cursor,
        cursor.copy(f"COPY {quote(meta.db_table)} ({names}) FROM STDIN") as copy,
    ):
        if encoders:
            for row in rows:
                copy.write_row((partition_id, *_json_columns(row, encoders)))
        else:
            for row in rows:
                copy.write_row((partition_id, *row))


def _json_columns(row: tuple[Any, ...], encoders: Mapping[int, Any]) -> tuple[Any, ...]:
    values = list(row)
    for index, encoder in encoders.items():
        values[index] = json_text(values[index], encoder)
    return tuple(values)


def json_text(value: Any, encoder: type[json.JSONEncoder] | None = None) -> str:
    """A JSON column's value as text for jsonb (which keeps no formatting): ``orjson`` for a
    field without an encoder of its own, else (or for what ``orjson`` refuses, an integer
    beyond 64 bits) ``json.dumps`` with the field's encoder, as the ORM writes it."""
    if encoder is None:
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value, cls=encoder)


def _insert_arrays(
    table: str,
    names: str,
    conflict: str,
    partition_id: int,
    fields: list[models.Field],
    rows: list[tuple[Any, ...]],
) -> None:
    """PostgreSQL: ``INSERT .. SELECT FROM unnest(%b::type[], ..)``, parameters in binary.

    JSON goes as text (``json.dumps`` with the field's encoder, as the ORM writes it) and is
    cast per value; a psycopg cursor of its own binds on the server, on Django's connection
    and so inside its transaction.
    """
    quote = connection.ops.quote_name
    columns = list(zip(*rows, strict=True))
    arrays, selects, aliases = [], [], []
    for index, (f, values) in enumerate(zip(fields, columns, strict=True)):
        alias = quote(f"c{index}")
        aliases.append(alias)
        if isinstance(f, models.JSONField):
            arrays.append(("text", [json_text(v, f.encoder) for v in values]))
            selects.append(f"{alias}::jsonb")
        else:
            arrays.append((f.db_type(connection), list(values)))
            selects.append(alias)
    unnest = ", ".join(f"%b::{db_type}[]" for db_type, _ in arrays)
    sql = (
        f"INSERT INTO {table} ({names}) SELECT %b::bigint, {', '.join(selects)} "  # noqa: S608
        f"FROM unnest({unnest}) AS s({', '.join(aliases)}) {conflict}"
    )  # every name comes from the model's metadata, quoted; every value is a parameter
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, [partition_id, *(values for _, values in arrays)])


def _insert_values(
    table: str,
    names: str,
    conflict: str,
    partition_id: int,
    fields: list[models.Field],
    rows: list[tuple[Any, ...]],
) -> None:
    """Any other database: multi-row ``VALUES`` in batches of ``_BATCH_ROWS``, values adapted
    by their model field as the ORM would."""
    adapters: list[Callable[[Any], Any] | None] = [
        (lambda value, f=f: f.get_db_prep_save(value, connection))
        if isinstance(f, models.JSONField | models.DateTimeField)
        else None
        for f in fields
    ]
    one = "(" + ", ".join(["%s"] * (len(fields) + 1)) + ")"
    head = f"INSERT INTO {table} ({names}) VALUES "  # noqa: S608 - names from the model, quoted
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _BATCH_ROWS):
            batch = rows[start : start + _BATCH_ROWS]
            params: list[Any] = []
            for row in batch:
                params.append(partition_id)
                params.extend(
                    value if adapt is None else adapt(value)
                    for value, adapt in zip(row, adapters, strict=True)
                )
            cursor.execute(f"{head}{', '.join([one] * len(batch))} {conflict}", params)
