"""The part of the dashboard that is the same for every viewer, computed once per change of the
partition and not once per request: the tree (config plus dynamic queues), every queue's usage
rolled up from the usage summary, and the queues over their max.

At 5,000 queues and 200,000 tasks the roll-up costs some 60-120 ms of CPU (it was 0.3-0.5 s
with the cards around it); the dashboard and its live poll (every open tab, every few seconds)
would pay it on each request. Instead each process keeps the newest roll-up of each partition,
with the key it was computed for, and computes it again when a request reads another key; the
key is what the roll-up is computed from:

- ``cluster.UsageGeneration``: a number the database changes in the transaction that changes the
  partition's usage summary or dynamic queues (statement triggers, migration ``cluster.0007``),
  whoever writes them: a cluster-state push, acknowledged evictions, a summary rebuild;
- the newest config revision (number and time, as ``queues.saved.current_tree`` keys its parsed
  config) and the partition's version and settings: a saved change, a revert, a settings edit;
- the database's name (a test process may use several).

The newest revisions (the "Recent revisions" card, the same for every viewer who reads the
whole partition) come with it: revisions are only ever added, and the newest is in the key.

Why a per-process memo and not Django's cache: the roll-up is a dict of 5,000 entries plus the
engine's ``Hierarchy``; the configured cache is per process in development anyway, and with Redis
each read would unpickle a few megabytes, a good part of what it saves. Each gunicorn worker
computes a change once (three workers: three times per change), every viewer after that reads
it; the key is read from the database on every request (two indexed one-row queries), so a
worker never serves a state older than the one its request reads.

What stays per request, because it is small, indexed and depends on the viewer or the clock:
pending timers, runs, alerts, revisions and the other cards, and the rows a viewer sees (a
tenant's subtrees only: ``QueueTree`` filters the shared roll-up by the viewer's scope, nothing
viewer-specific is ever stored here).

Order matters for correctness: the generation is read *before* the usage it keys. A push that
commits in between leaves newer usage under the older number (the next request sees a newer
number and recomputes); the reverse order could keep older usage under the newer number until
the next change (both are read by one statement). Inside a transaction that wrote allocations
(a test, a service reading its own writes) the transaction's pending summary deltas are
applied first, so the number covers them.

On other databases than PostgreSQL (the embedded SQLite default) no generation is kept: the
roll-up is computed on each request, as before.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from django.db import connection

from preemption import resources
from preemption.config import PartitionConfig
from preemption.hierarchy import Hierarchy
from scheduler_admin.cluster.dynamic import cluster_tree
from scheduler_admin.cluster.models import UsageGeneration
from scheduler_admin.cluster.usage import leaf_usage, names_to_sum, summary_in_use
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.web.dashboard.memo import Memo

#: Partitions whose roll-up a process keeps (the newest state of each: a change replaces it).
CACHE_SIZE = 16
#: Revisions the dashboard lists.
RECENT_REVISIONS = 10


@dataclass(frozen=True)
class OverMaxQueue:
    """A queue whose usage is above its own max, as every viewer would see it (no timer, no
    run: those are read per request)."""

    path: str
    used: dict[str, int]
    limit: dict[str, int]
    excess: dict[str, int]


@dataclass(frozen=True)
class Rollup:
    """The partition's tree with usage, shared by every viewer: never modify it.

    ``usage``: per queue path, its usage (running and preempting tasks, SPEC 3.3) rolled up from
    its subtree. ``over``: every queue above its own max, in configured order.
    """

    config: PartitionConfig
    hierarchy: Hierarchy
    dynamic: frozenset[str]
    usage: dict[str, dict[str, int]]
    over: tuple[OverMaxQueue, ...]
    #: The newest ``RECENT_REVISIONS`` revisions (without their snapshot), newest first: the
    #: "Recent revisions" card. Revisions are only ever added, and the newest one is in the key.
    revisions: tuple[ConfigRevision, ...] = ()


#: Per (database, partition): the key the roll-up was computed for, and the roll-up.
_cache: Memo[tuple[Hashable, Rollup]] = Memo(CACHE_SIZE)


def usage_generation(partition: Partition) -> int:
    """The partition's usage generation (0 before its first usage); PostgreSQL only."""
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            cursor.execute("SELECT cluster_queueusage_flush()")
    number = (
        UsageGeneration.objects.filter(partition_id=partition.pk)
        .values_list("number", flat=True)
        .first()
    )
    return number or 0


def cache_key(partition: Partition) -> Hashable | None:
    """What the partition's roll-up is computed from (see the module's docstring); ``None``
    where no generation is kept. Read before the roll-up's own queries."""
    if not summary_in_use():
        return None
    # One statement, one snapshot: the generation and the newest revision (both indexed reads).
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            cursor.execute("SELECT cluster_queueusage_flush()")
        cursor.execute(_KEY_SQL, [partition.pk, partition.pk])
        generation, number, created_at = cursor.fetchone()
    return (
        connection.settings_dict["NAME"],
        partition.pk,
        generation or 0,
        None if number is None else (number, created_at),
        partition.version,
        repr(partition.settings_config()),
    )


_GENERATIONS = UsageGeneration._meta.db_table
_REVISIONS = ConfigRevision._meta.db_table
_KEY_SQL = (
    f"SELECT (SELECT number FROM {_GENERATIONS} WHERE partition_id = %s), "  # noqa: S608 - model names
    "newest.number, newest.created_at FROM (SELECT 1) AS one LEFT JOIN LATERAL "
    f"(SELECT number, created_at FROM {_REVISIONS} WHERE partition_id = %s "
    "ORDER BY number DESC LIMIT 1) AS newest ON TRUE"
)


def rollup(partition: Partition) -> Rollup:
    """The partition's roll-up: from the memo when nothing changed since it was computed."""
    key = cache_key(partition)
    if key is None:
        return compute(partition)
    slot = (connection.settings_dict["NAME"], partition.pk)
    cached = _cache.get(slot)
    if cached is not None and cached[0] == key:
        return cached[1]
    # Computed outside the lock: two threads after a change may both compute it (the same
    # result); holding the lock would queue every other partition's readers behind this one.
    fresh = compute(partition)
    _cache.put(slot, (key, fresh))
    return fresh


def compute(partition: Partition) -> Rollup:
    """Usage summed per queue in the database (one query on the summary), rolled up the tree by
    the engine's ``Hierarchy.usage_by_queue``, and the queues over their max."""
    config, hierarchy, dynamic = cluster_tree(partition)
    names = names_to_sum(partition, hierarchy.config)
    usage = hierarchy.usage_by_queue(leaf_usage(partition, names=names))
    over = []
    for queue in hierarchy.config.queues:
        if not queue.max:
            continue  # unlimited: never over
        used = usage.get(queue.path, {})
        excess = resources.over(used, queue.max)
        if excess:
            over.append(OverMaxQueue(queue.path, used, dict(queue.max), excess))
    # The snapshot (the whole config, a megabyte at 5,000 queues) is never shown.
    revisions = ConfigRevision.objects.filter(partition=partition).order_by("-number")
    recent = tuple(revisions.defer("snapshot")[:RECENT_REVISIONS])
    return Rollup(config, hierarchy, dynamic, usage, tuple(over), recent)


def clear() -> None:
    """Forget every roll-up (tests that rewrite a partition behind the triggers' back)."""
    _cache.clear()
