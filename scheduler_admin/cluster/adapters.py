"""Database rows -> the engine's frozen dataclasses.

The engine never sees a model instance: services load a partition's state here, once per
decision, with ``values_list`` queries (no model instances for 100,000 tasks), and pass the result
to ``preemption``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Any

import psycopg
from django.db import connection
from django.db.models import Q, QuerySet
from psycopg import postgres, pq
from psycopg.adapt import Loader

from preemption import model
from preemption.config import ROOT, PartitionConfig
from preemption.eligibility_fields import (
    read_affinity,
    read_labels,
    read_taints,
    read_tolerations,
)
from preemption.hierarchy import Hierarchy
from scheduler_admin.cluster.dynamic import (
    StoredDynamicQueue,
    config_with_dynamic,
    with_dynamic_queues,
)
from scheduler_admin.cluster.ingest.parsing import ClusterStateBody
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
)
from scheduler_admin.cluster.usage import (
    ENGINE_STATES,
    configured_total,
    leaf_usage,
    names_to_sum,
)
from scheduler_admin.queues.models import Partition

_ALLOCATION_FIELDS = (
    "external_id", "application__external_id", "queue_path", "node_name", "resources",
    "priority", "allow_preemption", "originator", "required_node", "job", "qos", "pdb",
    "created_at", "state",
)  # fmt: skip
_ASK_FIELDS = (
    "external_id", "application__external_id", "queue_path", "resources", "priority",
    "allow_preemption", "preemption_policy", "required_node", "job", "created_at", "state",
    "node", "node_selector", "node_affinity", "tolerations",
)  # fmt: skip


def load_cluster_state(
    partition: Partition,
    *,
    running_runs: Iterable[str] = (),
    config: PartitionConfig | None = None,
) -> model.ClusterState:
    """The partition as the engine sees it: config (with the partition's dynamic queues,
    ``cluster.dynamic``), nodes, live and preempting allocations, waiting asks, budgets, and
    the queues with a run in progress."""
    return model.ClusterState(
        config=config_with_dynamic(partition, config or partition.current_config()),
        nodes=tuple(
            _node(row)
            for row in partition.nodes.values_list(
                "name", "capacity", "schedulable", "labels", "taints"
            )
        ),
        allocations=tuple(
            _allocation(row)
            for row in Allocation.objects.filter(
                partition=partition,
                state__in=[AllocationState.RUNNING, AllocationState.PREEMPTING],
            ).values_list(*_ALLOCATION_FIELDS)
        ),
        asks=tuple(
            _ask(row)
            for row in Ask.objects.filter(
                partition=partition, state__in=[AskState.PENDING, AskState.RESERVED]
            ).values_list(*_ASK_FIELDS)
        ),
        budgets=tuple(
            model.Budget(name=name, allowed_disruptions=allowed)
            for name, allowed in partition.budgets.values_list("name", "allowed_disruptions")
        ),
        running_runs=frozenset(running_runs),
    )


def load_quota_state(
    partition: Partition,
    queues: Collection[str],
    *,
    config: PartitionConfig,
    running_runs: Iterable[str] = (),
) -> model.ClusterState:
    """The state the quota plans of ``queues`` read (SPEC 4.1), without the rest of the cluster;
    plans made on it are those made on ``load_cluster_state`` (tests/unit/test_narrowed_state.py
    compares them, explanations included).

    A quota plan reads the allocations of the queue's subtree, the usage of the queues in it,
    and the usage of its ancestors that guarantee something (guarantee protection, checked up to
    root). So the state holds:

    - the live allocations of the queues' subtrees (any queue path below them, configured or
      not, as ``Hierarchy.is_within`` counts them);
    - as ``usage_elsewhere``, the running usage of every other configured queue below the
      highest ancestor that guarantees something, summed per queue in the database; with it
      ``state.usage`` of each of those ancestors is exact. Queues further out (root, other
      tenants) see only part of their usage: no quota plan of ``queues`` reads them;
    - no nodes, asks or budgets: the quota policy reads none.

    ``config`` gets the partition's dynamic queues (``cluster.dynamic``): their tasks are a
    quota plan's candidates like those of any leaf.
    """
    config = config_with_dynamic(partition, config)
    hierarchy = Hierarchy(config)
    roots = _outermost(queues)
    tops = []
    for queue in roots:
        guarded = [step for step in hierarchy.ancestors(queue) if hierarchy.queues[step].guaranteed]
        tops.append(guarded[-1] if guarded else queue)
    in_plans = {path for queue in roots for path in hierarchy.subtree(queue)}
    elsewhere = [
        path for top in _outermost(tops) for path in hierarchy.subtree(top) if path not in in_plans
    ]
    subtrees = Q()
    for queue in roots:
        subtrees |= Q(queue_path=queue) | Q(queue_path__startswith=queue + ".")
    # In no order (``order_by()``): the model's default one joins the partition and sorts
    # 100,000 wide rows on disk, and the quota policy orders its candidates itself.
    allocations = _read_allocations(
        Allocation.objects.filter(
            subtrees,
            partition=partition,
            state__in=[AllocationState.RUNNING, AllocationState.PREEMPTING],
        ).order_by()
    )
    usage = leaf_usage(
        partition, names=_config_names(config), paths=elsewhere, states=ENGINE_STATES
    )
    state = model.ClusterState(
        config=config,
        allocations=allocations,
        running_runs=frozenset(running_runs),
        usage_elsewhere=tuple(model.QueueUsage(row.queue, row.resources) for row in usage),
    )
    state.__dict__["hierarchy"] = hierarchy  # the cached_property's value, built above
    return state


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without those inside the subtree of another one (and without repeats)."""
    ordered = sorted(set(paths))
    kept: list[str] = []
    for path in ordered:  # a parent sorts right before its subtree's paths
        if not kept or not (path == kept[-1] or path.startswith(kept[-1] + ".")):
            kept.append(path)
    return kept


def _config_names(config: PartitionConfig) -> set[str]:
    """Resource names the config's queues guarantee or limit: the names the usage sums expect
    (others found are summed too, only a little slower)."""
    return {name for queue in config.queues for name in (*queue.guaranteed, *queue.max)}


def with_overrides(state: model.ClusterState, body: ClusterStateBody) -> model.ClusterState:
    """``state`` with a checked cluster-state body applied in memory, as ingesting it would
    (upserts by id, removals by id or name; with ``replace``, only what the body lists is
    kept), for the simulator: nothing is written.

    An item without a ``state`` keeps the state of the item it replaces (new ones start
    ``running`` / as the body says); allocations and asks that end up in a state the engine
    does not look at (released, placed) drop out, as ``load_cluster_state`` leaves them out.
    """
    nodes = {node.name: node for node in state.nodes}
    for item in body.nodes:
        nodes[item["name"]] = _node(
            (item["name"], item["capacity"], item["schedulable"], item["labels"], item["taints"])
        )
    for name in body.removed_nodes:
        nodes.pop(name, None)
    if body.replace:
        nodes = _listed(nodes, {item["name"] for item in body.nodes})

    allocations = {allocation.id: allocation for allocation in state.allocations}
    for item in body.allocations:
        before = allocations.get(item["id"])
        status = item["state"] or (before.state if before else AllocationState.RUNNING)
        allocations[item["id"]] = _allocation(
            (item["id"], item["app"], item["queue"], item["node"], item["resources"],
             item["priority"], item["allow_preemption"], item["originator"],
             item["required_node"], item["job"], item["qos"], item["pdb"], item["created_at"],
             status)
        )  # fmt: skip
    for allocation_id in body.removed_allocations:
        allocations.pop(allocation_id, None)
    if body.replace:
        allocations = _listed(allocations, {item["id"] for item in body.allocations})

    asks = {ask.id: ask for ask in state.asks}
    for item in body.asks:
        before = asks.get(item["id"])
        node = item["node"] or (before.node if before else "")
        asks[item["id"]] = _ask(
            (item["id"], item["app"], item["queue"], item["resources"], item["priority"],
             item["allow_preemption"], item["preemption_policy"], item["required_node"],
             item["job"], item["created_at"], item["state"], node, item["node_selector"],
             item["node_affinity"], item["tolerations"])
        )  # fmt: skip
    for ask_id in body.removed_asks:
        asks.pop(ask_id, None)
    if body.replace:
        asks = _listed(asks, {item["id"] for item in body.asks})

    budgets = {budget.name: budget for budget in state.budgets}
    for item in body.budgets:
        budgets[item["name"]] = model.Budget(item["name"], item["allowed_disruptions"])
    for name in body.removed_budgets:
        budgets.pop(name, None)
    if body.replace:
        budgets = _listed(budgets, {item["name"] for item in body.budgets})

    live = {AllocationState.RUNNING, AllocationState.PREEMPTING}
    waiting = {AskState.PENDING, AskState.RESERVED}
    # The body's dynamic queues (SPEC 3.4) join the tree, so its tasks in them count there
    # (a replace body's omissions are not taken out: the simulator only adds).
    config = with_dynamic_queues(
        state.config,
        [
            StoredDynamicQueue(q["path"], q["leaf"], q["guaranteed"], q["max"], q["properties"])
            for q in body.dynamic_queues
        ],
    )
    return replace(
        state,
        config=config,
        nodes=tuple(nodes.values()),
        allocations=tuple(a for a in allocations.values() if a.state in live),
        asks=tuple(a for a in asks.values() if a.state in waiting),
        budgets=tuple(budgets.values()),
    )


def _listed(items: dict[str, Any], listed: set[str]) -> dict[str, Any]:
    """``items`` without those whose key a ``replace`` body does not list."""
    return {key: item for key, item in items.items() if key in listed}


def _node(row: tuple) -> model.Node:
    """A node; its labels and taints (SPEC 3.3) are stored as the ingest checked them."""
    name, capacity, schedulable, labels, taints = row
    return model.Node(
        name=name,
        capacity=capacity,
        schedulable=schedulable,
        labels=read_labels(labels, "labels"),
        taints=read_taints(taints, "taints"),
    )


def _allocation(row: tuple) -> model.Allocation:
    (id_, app, queue, node, resources, priority, allow, originator, required, job, qos, pdb,
     created_at, state) = row  # fmt: skip
    return model.Allocation(
        id=id_,
        app=app,
        queue=queue,
        node=node,
        resources=resources,
        priority=priority,
        allow_preemption=allow,
        originator=originator,
        required_node=required or None,
        job=job or None,
        qos=model.QoS(qos) if qos else None,
        pdb=pdb or None,
        created_at=created_at,
        state=model.AllocationState(state),
    )


_STATES = {state.value: state for state in model.AllocationState}
#: What ``_read_allocations`` fills in itself: ``model.Allocation``'s fields (checked on import,
#: so a field added to the engine's dataclass is not silently left out), and no ``__post_init__``.
_ENGINE_FIELDS = (
    "id", "app", "queue", "node", "resources", "priority", "allow_preemption", "originator",
    "required_node", "job", "qos", "pdb", "created_at", "state",
)  # fmt: skip
assert tuple(field.name for field in dataclasses.fields(model.Allocation)) == _ENGINE_FIELDS
assert not hasattr(model.Allocation, "__post_init__")
_QOS = {qos.value: qos for qos in model.QoS}


def _timestamptz_loader() -> type[Loader]:
    """psycopg's own loader of ``timestamptz`` text (its C one with ``psycopg[binary]``), in
    place of Django's, a pure-Python subclass: 95,000 times a few microseconds."""
    return psycopg.adapters.get_loader(postgres.types["timestamptz"].oid, pq.Format.TEXT)


def _read_allocations(queryset: QuerySet) -> tuple[model.Allocation, ...]:
    """The engine's allocations of ``queryset`` (allocations), as ``_allocation`` makes them
    from ``_ALLOCATION_FIELDS``, for 100,000 rows at a time (a quota plan of a big tenant).

    The query runs on a plain cursor, without Django's per-value converters: ``resources`` come
    as JSON text (Django's loader for ``jsonb``), decoded once per distinct text (tasks mostly
    ask the same few amounts; the engine only reads them), and times by psycopg's own loader
    (``_timestamptz_loader``). Half the time of loading a big tenant was the converters and
    Django's pure-Python time loader. The applications' ids are read afterwards for the
    application keys found (``_application_ids``), not joined to every row: the join was a
    third of PostgreSQL's time for 95,000 rows. Elsewhere (SQLite) the rows are read through
    Django, as ``load_cluster_state`` reads them."""
    if connection.vendor != "postgresql":  # the embedded SQLite default: the plain way
        return tuple(_allocation(row) for row in queryset.values_list(*_ALLOCATION_FIELDS))
    fields = [
        "application_id" if f == "application__external_id" else f for f in _ALLOCATION_FIELDS
    ]
    sql, params = queryset.values_list(*fields).query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.cursor.adapters.register_loader("timestamptz", _timestamptz_loader())
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    apps = _application_ids({row[1] for row in fetched})
    decoded: dict[Any, Any] = {}
    make, new, set_dict = model.Allocation, object.__new__, object.__setattr__
    allocations = []
    append = allocations.append
    for (id_, app, queue, node, resources, priority, allow, originator, required, job, qos, pdb,
         created_at, state) in fetched:  # fmt: skip
        amounts = decoded.get(resources)
        if amounts is None:
            amounts = decoded[resources] = (
                json.loads(resources) if isinstance(resources, str | bytes) else resources
            )
        # The dataclass's own ``__init__`` sets each field through ``object.__setattr__`` (it is
        # frozen): 40% of this loop. The instance gets its dict whole instead, the same values
        # under the field names (``_allocation`` makes equal objects).
        allocation = new(make)
        set_dict(allocation, "__dict__", {
            "id": id_, "app": apps[app], "queue": queue, "node": node, "resources": amounts,
            "priority": priority, "allow_preemption": allow, "originator": originator,
            "required_node": required or None, "job": job or None,
            "qos": _QOS[qos] if qos else None, "pdb": pdb or None, "created_at": created_at,
            "state": _STATES[state],
        })  # fmt: skip
        append(allocation)
    return tuple(allocations)


def _application_ids(keys: Collection[int]) -> dict[int, str]:
    """Application key -> its id (``external_id``), for ``keys``."""
    return dict(
        Application.objects.filter(pk__in=list(keys)).order_by().values_list("pk", "external_id")
    )


def _ask(row: tuple) -> model.Ask:
    (id_, app, queue, resources, priority, allow, policy, required, job, created_at, state,
     node, selector, affinity, tolerations) = row  # fmt: skip
    return model.Ask(
        id=id_,
        app=app,
        queue=queue,
        resources=resources,
        priority=priority,
        allow_preemption=allow,
        preemption_policy=model.PreemptionPolicy(policy),
        required_node=required or None,
        job=job or None,
        created_at=created_at,
        state=model.AskState(state),
        node=node or None,
        node_selector=read_labels(selector, "node_selector"),
        node_affinity=read_affinity(affinity, "node_affinity"),
        tolerations=read_tolerations(tolerations, "tolerations"),
    )


def queue_usage(
    partition: Partition, config: PartitionConfig | None = None
) -> dict[str, dict[str, int]]:
    """Usage of every queue as admins see it (SPEC 3.3): running and preempting allocations of
    its subtree. A victim stops counting once its eviction is acknowledged (``released``); the
    engine, by contrast, counts preempting allocations as gone already (SPEC 4.0).

    Summed per queue in the database (``cluster.usage.leaf_usage``), then rolled up the tree by
    the engine's hierarchy.
    """
    config = config_with_dynamic(partition, config or partition.current_config())
    per_queue = leaf_usage(partition, names=names_to_sum(partition, config))
    return model.ClusterState(config=config).hierarchy.usage_by_queue(per_queue)


def usage_of_queues(
    partition: Partition, hierarchy: Hierarchy, paths: Iterable[str]
) -> dict[str, dict[str, int]]:
    """``queue_usage`` of just ``paths`` (configured queues), reading only their subtrees' tasks.

    Read per queue from the usage summary (``cluster.usage``) for the configured queues of
    the subtrees (the same roll-up: usage counts configured queues only), then added up the
    tree in Python. Root's usage comes from the partition's totals (``configured_total``), not
    from every queue's rows.
    """
    wanted = set(paths)
    usage: dict[str, dict[str, int]] = {path: {} for path in wanted}
    names = _config_names(hierarchy.config)
    rest = wanted - {ROOT}
    if ROOT in wanted:
        usage[ROOT] = configured_total(partition, hierarchy.queues, names=names)
    covered = [path for top in _outermost(rest) for path in hierarchy.subtree(top)]
    for row in leaf_usage(partition, names=names, paths=covered):
        for step in (row.queue, *hierarchy.ancestors(row.queue)):
            if step in rest:
                total = usage[step]
                for name, value in row.resources.items():
                    total[name] = total.get(name, 0) + value
    return usage
