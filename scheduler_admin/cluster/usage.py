"""Usage per queue summed in the database: one row per queue (and resource name) comes back,
no task row or JSON document travels to Python.

On PostgreSQL usage is read from the summary ``cluster.QueueUsage`` (a few rows per queue path
with tasks: one per state and resource name), which triggers on the allocation table keep in
step with every write (migration ``cluster.0003``); no read scans the tasks. Elsewhere (the
embedded SQLite default, small clusters) it is summed from the tasks' JSON.
``summed_from_tasks`` is that sum on any database: what the summary must equal
(``check_summary``), and what ``rebuild_summary`` rewrites it from.

Used by the dashboard, the queue page and, through ``cluster.adapters``, the queues API and the
quota previews. Usage counts running and preempting tasks (SPEC 3.3: a victim counts until its
eviction is acknowledged); the engine counts running ones only (``ENGINE_STATES``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple

from django.db import connection, transaction

from preemption.config import PartitionConfig
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    PartitionUsage,
    QueueUsage,
    QueueUsagePath,
)
from scheduler_admin.queues.models import Partition


class LeafUsage(NamedTuple):
    """A queue's own summed usage, shaped for ``Hierarchy.usage_by_queue`` (``queue``,
    ``resources``), so the roll-up is the engine's and not a second copy."""

    queue: str
    resources: dict[str, int]


_WHERE = "a.partition_id = %s AND a.state IN ({states})"
#: Usage as admins see it (SPEC 3.3): running tasks and victims not yet gone.
LIVE_STATES = (AllocationState.RUNNING, AllocationState.PREEMPTING)
#: Usage as the engine counts it (SPEC 4.0): a preempting victim counts as gone already.
ENGINE_STATES = (AllocationState.RUNNING,)
# ``substr`` rather than LIKE: queue names may hold ``_``, a LIKE wildcard, and neither form can
# use the (partition, state, queue_path) index for a prefix under a non-C collation anyway.
_SUBTREE = " AND (a.queue_path = %s OR substr(a.queue_path, 1, %s) = %s)"
# Named queues: the (partition, state, queue_path) index finds exactly their rows.
_PATHS = " AND a.queue_path = ANY(%s)"
_PATHS_ELSEWHERE = " AND a.queue_path IN ({placeholders})"
# Names outside a list (PostgreSQL): each task's JSON object, minus the listed names, is
# exploded into (name, value) pairs and summed. With an empty list this sums every name.
_OTHER_NAMES_SQL = (
    "SELECT {queue}, r.key, SUM(r.value::bigint) "
    "FROM {table} a CROSS JOIN LATERAL jsonb_each_text(a.resources - %s::text[]) r "
    "WHERE {where} GROUP BY {group}r.key"
)
# Listed names (PostgreSQL): one SUM column per name, about twice as fast as exploding the
# objects. The last column says whether some task of the queue uses another name too.
_LISTED_NAMES_SQL = (
    "SELECT {queue}, {sums}, bool_or((a.resources - %s::text[]) <> '{{}}'::jsonb) "
    "FROM {table} a WHERE {where}{group_by}"
)
# Other databases (the embedded SQLite default, small clusters): explode every object.
_ALL_NAMES_SQL = (
    "SELECT {queue}, r.key, SUM(CAST(r.value AS INTEGER)) "
    "FROM {table} a, json_each(a.resources) r "
    "WHERE {where} GROUP BY {group}r.key"
)
#: Resource names met in tasks beyond those of the config and the nodes (``pods``, say),
#: remembered by this process so the next request sums them as columns too. A cluster has a
#: handful; the cap only guards against a flood of junk names.
_SEEN_NAMES: set[str] = set()
_SEEN_NAMES_CAP = 64


# The summary (PostgreSQL): per queue path, state and resource, at most a few rows per queue.
# Its rows are summed in Python, not by ``SUM`` (a ``numeric`` aggregate per queue and resource:
# 21-25 ms for the 14,000 rows of 5,000 queues, 9-10 ms read and added here); the amount comes
# as text, so an amount beyond 64 bits is still read exactly.
_SUMMARY_SQL = (
    "SELECT s.queue_path, s.resource, s.amount::text FROM {table} s "
    "WHERE s.partition_id = %s AND s.state = ANY(%s){where}"
)
_SUMMARY_SUBTREE = " AND (s.queue_path = %s OR substr(s.queue_path, 1, %s) = %s)"
_SUMMARY_PATHS = " AND s.queue_path = ANY(%s)"


def summary_in_use() -> bool:
    """Whether usage is read from the summary (PostgreSQL, where the triggers keep it)."""
    return connection.vendor == "postgresql"


def leaf_usage(
    partition: Partition,
    under: str | None = None,
    *,
    names: Iterable[str] = (),
    paths: Collection[str] | None = None,
    states: Iterable[str] = LIVE_STATES,
    grouped: bool = True,
) -> list[LeafUsage]:
    """Summed usage of every queue that has tasks, optionally only in ``under``'s subtree.

    ``paths`` keeps only tasks of exactly those queues: callers that know the configured queues
    of a subtree pass them, which gives the same roll-up (``usage_by_queue`` ignores queues
    that are not configured). ``states`` are the allocation states counted (``LIVE_STATES`` as
    admins see usage, ``ENGINE_STATES`` as the engine does). ``grouped=False`` sums everything
    into one ``LeafUsage`` with queue ``""`` (nothing when no task matches).

    On PostgreSQL this reads the summary: a few rows per queue path with tasks, whatever the
    number of tasks (root's usage at 5,000 queues is some 14,000 small rows, summed here).
    Inside a transaction that wrote allocations, its own not yet applied deltas are applied
    first (``cluster_queueusage_flush``), so a read sees the transaction's writes as a ``SUM``
    over the tasks would. ``names`` only matters for ``summed_from_tasks`` (SQLite).
    """
    if not summary_in_use():
        return summed_from_tasks(
            partition, under, names=names, paths=paths, states=states, grouped=grouped
        )
    if paths is not None and not paths:
        return []
    where = ""
    params: list[object] = [partition.pk, [str(state) for state in states]]
    if under is not None:
        prefix = under + "."
        where += _SUMMARY_SUBTREE
        params += [under, len(prefix), prefix]
    if paths is not None:
        where += _SUMMARY_PATHS
        params.append(list(paths))
    sql = _SUMMARY_SQL.format(table=QueueUsage._meta.db_table, where=where)
    per_queue: dict[str, dict[str, int]] = {}
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            cursor.execute("SELECT cluster_queueusage_flush()")
        cursor.execute(sql, params)
        for queue_path, name, amount in cursor.fetchall():
            amounts = per_queue.setdefault(queue_path if grouped else "", {})
            amounts[name] = amounts.get(name, 0) + int(amount)
    return [LeafUsage(queue, amounts) for queue, amounts in per_queue.items()]


def configured_total(
    partition: Partition,
    configured: Collection[str],
    *,
    names: Iterable[str] = (),
    states: Iterable[str] = LIVE_STATES,
) -> dict[str, int]:
    """The summed usage of the tasks of the ``configured`` queues: root's usage (SPEC 3.3; a
    task of a queue that is no longer configured counts nowhere).

    On PostgreSQL: the partition's totals (``PartitionUsage``, a few rows), minus the usage of
    the queue paths with tasks that are not in ``configured``, found in the list of paths with
    usage rows (``QueueUsagePath``, one short row per path: some 5,000 at 5,000 queues) and
    usually none. Elsewhere: ``leaf_usage`` of ``configured``, ungrouped.
    """
    if not summary_in_use():
        rows = leaf_usage(partition, names=names, paths=list(configured), grouped=False)
        return dict(rows[0].resources) if rows else {}
    counted = [str(state) for state in states]
    sums = "SELECT resource, SUM(amount), SUM(tasks) FROM {table} WHERE partition_id = %s AND "
    sums += "state = ANY(%s){where} GROUP BY resource"
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            cursor.execute("SELECT cluster_queueusage_flush()")
        cursor.execute(
            sums.format(table=PartitionUsage._meta.db_table, where=""), [partition.pk, counted]
        )
        totals = {name: (int(amount), int(tasks)) for name, amount, tasks in cursor.fetchall()}
        paths = QueueUsagePath.objects.filter(partition_id=partition.pk)
        others = [
            path for path in paths.values_list("queue_path", flat=True) if path not in configured
        ]
        if others:
            cursor.execute(
                sums.format(table=QueueUsage._meta.db_table, where=" AND queue_path = ANY(%s)"),
                [partition.pk, counted, others],
            )
            for name, amount, tasks in cursor.fetchall():
                total, count = totals[name]
                totals[name] = (total - int(amount), count - int(tasks))
    # A name stays when some task of a configured queue names it, as in a SUM over them.
    return {name: amount for name, (amount, tasks) in totals.items() if tasks}


def summed_from_tasks(
    partition: Partition,
    under: str | None = None,
    *,
    names: Iterable[str] = (),
    paths: Collection[str] | None = None,
    states: Iterable[str] = LIVE_STATES,
    grouped: bool = True,
) -> list[LeafUsage]:
    """``leaf_usage`` summed from the tasks themselves, on any database: how SQLite reads
    usage, and what the PostgreSQL summary is checked against (``check_summary``).

    ``paths`` is an index lookup, where ``under`` reads the whole partition to compare
    prefixes. ``grouped=False`` is one total without the cost of grouping 200,000 rows by
    queue.

    ``names`` are the resource names the caller expects (those of the config and the nodes).
    On PostgreSQL:
    1. one pass sums each expected name (plus names seen before) as a column, and flags the
       queues whose tasks use any other name;
    2. only if a queue is flagged, a second pass sums the other names (exploding just those).

    Reading every task's JSON into Python instead takes seconds at 200,000 tasks; here the
    database returns one row per queue (and name).
    """
    counted = [str(state) for state in states]
    where = _WHERE.format(states=", ".join(["%s"] * len(counted)))
    params: list[object] = [partition.pk, *counted]
    if under is not None:
        prefix = under + "."
        where += _SUBTREE
        params += [under, len(prefix), prefix]
    if paths is not None:
        if not paths:
            return []
        if connection.vendor == "postgresql":
            where += _PATHS
            params.append(list(paths))
        else:
            where += _PATHS_ELSEWHERE.format(placeholders=", ".join(["%s"] * len(paths)))
            params += list(paths)
    table = Allocation._meta.db_table
    shape = {
        "table": table,
        "where": where,
        "queue": "a.queue_path" if grouped else "''",
        "group": "a.queue_path, " if grouped else "",
        "group_by": " GROUP BY a.queue_path" if grouped else "",
    }
    per_queue: dict[str, dict[str, int]] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(_ALL_NAMES_SQL.format(**shape), params)
            others = cursor.fetchall()
        else:
            # The planner's cost estimate for 200,000 rows crosses jit_above_cost, and compiling
            # this small aggregate with LLVM costs seconds of CPU (measured: 3.7 s of JIT for a
            # 0.3 s query). Off for this transaction only.
            cursor.execute("SET LOCAL jit = off")
            listed = sorted(set(names) | _SEEN_NAMES)
            flagged = not listed
            if listed:
                sums = ", ".join(["SUM((a.resources->>%s)::bigint)"] * len(listed))
                sql = _LISTED_NAMES_SQL.format(sums=sums, **shape)
                cursor.execute(sql, [*listed, listed, *params])
                for queue_path, *totals, other in cursor.fetchall():
                    if other is None:  # ungrouped, and no task matched
                        continue
                    amounts = per_queue.setdefault(queue_path, {})
                    for name, total in zip(listed, totals, strict=True):
                        if total is not None:
                            amounts[name] = int(total)
                    flagged = flagged or bool(other)
            others = []
            if flagged:
                cursor.execute(_OTHER_NAMES_SQL.format(**shape), [listed, *params])
                others = cursor.fetchall()
                if len(_SEEN_NAMES) < _SEEN_NAMES_CAP:
                    _SEEN_NAMES.update(name for _, name, _ in others)
        for queue_path, name, total in others:
            per_queue.setdefault(queue_path, {})[name] = int(total)
    return [LeafUsage(queue, amounts) for queue, amounts in per_queue.items()]


def resource_names(partition: Partition, config: PartitionConfig) -> set[str]:
    """Resource names a partition's tasks are expected to use: those its queues guarantee or
    limit, and those its nodes offer (a few thousand small rows)."""
    names = {name for queue in config.queues for name in (*queue.guaranteed, *queue.max)}
    for capacity in partition.nodes.values_list("capacity", flat=True):
        names.update(capacity)
    return names


def names_to_sum(partition: Partition, config: PartitionConfig) -> Collection[str]:
    """The ``names`` argument ``leaf_usage`` needs: none where the summary is read (it holds
    every name), else ``resource_names`` (reading every node's capacity, which the summary
    spares: 6-7 ms at 2,000 nodes)."""
    return () if summary_in_use() else resource_names(partition, config)


def rebuild_summary(partition: Partition | None = None) -> int:
    """Recompute the usage summaries (``QueueUsage``, ``QueueUsagePath``, ``PartitionUsage``)
    from the allocations, of one partition or of all (and drop rows of partitions that no
    longer exist); returns the number of ``QueueUsage`` rows written.

    Safe while the cluster is live: writers of allocations wait for it (a ``SHARE`` lock on the
    allocation table, for the length of the transaction: about a second at 200,000 tasks), and
    every write after it is applied on top as usual. On SQLite there is no summary (0).
    """
    if not summary_in_use():
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT cluster_queueusage_rebuild(%s)", [None if partition is None else partition.pk]
        )
        return int(cursor.fetchone()[0])


def check_summary(partition: Partition) -> dict[tuple[str, str, str], tuple[int, int]]:
    """Where the summaries of ``partition`` differ from a ``SUM`` over its tasks: (queue path,
    state, resource) -> (summary amount, summed amount), empty when they agree (and always on
    SQLite, which has no summary). The partition's totals are checked under queue path ``*``,
    the list of paths under resource ``*`` (its key count against the rows found)."""
    if not summary_in_use():
        return {}
    expected: dict[tuple[str, str, str], int] = {}
    for state in LIVE_STATES:
        for row in summed_from_tasks(partition, states=[state]):
            for name, amount in row.resources.items():
                expected[(row.queue, str(state), name)] = amount
    keys: dict[str, int] = {}
    for path, _, _ in expected:
        keys[path] = keys.get(path, 0) + 1
    for (_, state, name), amount in list(expected.items()):
        total = ("*", state, name)
        expected[total] = expected.get(total, 0) + amount
    for path, count in keys.items():
        expected[(path, "*", "*")] = count
    stored: dict[tuple[str, str, str], int] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT cluster_queueusage_flush()")
        rows = QueueUsage.objects.filter(partition_id=partition.pk)
        for path, state, name, amount in rows.values_list(
            "queue_path", "state", "resource", "amount"
        ):
            stored[(path, state, name)] = int(amount)
        totals = PartitionUsage.objects.filter(partition_id=partition.pk)
        for state, name, amount in totals.values_list("state", "resource", "amount"):
            stored[("*", state, name)] = int(amount)
        paths = QueueUsagePath.objects.filter(partition_id=partition.pk)
        for path, count in paths.values_list("queue_path", "keys"):
            stored[(path, "*", "*")] = count
    return {
        key: (stored.get(key, 0), expected.get(key, 0))
        for key in stored.keys() | expected.keys()
        if stored.get(key) != expected.get(key)
    }
