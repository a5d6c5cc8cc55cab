"""Usage per queue summed in the database: one row per queue (and resource name) comes back,
no task row or JSON document travels to Python.

Used by the dashboard (5,000 queues, 200,000 tasks in well under a second) and, through
``cluster.adapters.queue_usage``, by the queue page and the queues API. Usage counts running
and preempting tasks (SPEC 3.3: a victim counts until its eviction is acknowledged).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple

from django.db import connection, transaction

from preemption.config import PartitionConfig
from scheduler_admin.cluster.models import Allocation, AllocationState
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

    ``paths`` keeps only tasks of exactly those queues (an index lookup, where ``under`` reads
    the whole partition to compare prefixes): callers that know the configured queues of a
    subtree pass them, which gives the same roll-up (``usage_by_queue`` ignores queues that are
    not configured). ``states`` are the allocation states counted (``LIVE_STATES`` as admins
    see usage, ``ENGINE_STATES`` as the engine does). ``grouped=False`` sums everything into
    one ``LeafUsage`` with queue ``""`` (nothing when no task matches): one total without the
    cost of grouping 200,000 rows by queue.

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
