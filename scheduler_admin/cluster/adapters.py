"""Database rows -> the engine's frozen dataclasses.

The engine never sees a model instance: services load a partition's state here, once per
decision, with ``values_list`` queries (no model instances for 100,000 tasks), and pass the result
to ``preemption``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from preemption import model
from preemption.config import PartitionConfig
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, AskState
from scheduler_admin.cluster.services import ClusterStateBody
from scheduler_admin.cluster.usage import leaf_usage, resource_names
from scheduler_admin.queues.models import Partition

_ALLOCATION_FIELDS = (
    "external_id", "application__external_id", "queue_path", "node_name", "resources",
    "priority", "allow_preemption", "originator", "required_node", "job", "qos", "pdb",
    "created_at", "state",
)  # fmt: skip
_ASK_FIELDS = (
    "external_id", "application__external_id", "queue_path", "resources", "priority",
    "allow_preemption", "preemption_policy", "required_node", "job", "created_at", "state",
    "node",
)  # fmt: skip


def load_cluster_state(
    partition: Partition,
    *,
    running_runs: Iterable[str] = (),
    config: PartitionConfig | None = None,
) -> model.ClusterState:
    """The partition as the engine sees it: config, nodes, live and preempting allocations,
    waiting asks, budgets, and the queues with a run in progress."""
    return model.ClusterState(
        config=config or partition.current_config(),
        nodes=tuple(
            model.Node(name=name, capacity=capacity, schedulable=schedulable)
            for name, capacity, schedulable in partition.nodes.values_list(
                "name", "capacity", "schedulable"
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


def with_overrides(state: model.ClusterState, body: ClusterStateBody) -> model.ClusterState:
    """``state`` with a checked cluster-state body applied in memory, as ingesting it would
    (upserts by id, removals by id or name), for the simulator: nothing is written.

    An item without a ``state`` keeps the state of the item it replaces (new ones start
    ``running`` / as the body says); allocations and asks that end up in a state the engine
    does not look at (released, placed) drop out, as ``load_cluster_state`` leaves them out.
    """
    nodes = {node.name: node for node in state.nodes}
    for item in body.nodes:
        nodes[item["name"]] = model.Node(item["name"], item["capacity"], item["schedulable"])
    for name in body.removed_nodes:
        nodes.pop(name, None)

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

    asks = {ask.id: ask for ask in state.asks}
    for item in body.asks:
        before = asks.get(item["id"])
        node = item["node"] or (before.node if before else "")
        asks[item["id"]] = _ask(
            (item["id"], item["app"], item["queue"], item["resources"], item["priority"],
             item["allow_preemption"], item["preemption_policy"], item["required_node"],
             item["job"], item["created_at"], item["state"], node)
        )  # fmt: skip
    for ask_id in body.removed_asks:
        asks.pop(ask_id, None)

    budgets = {budget.name: budget for budget in state.budgets}
    for item in body.budgets:
        budgets[item["name"]] = model.Budget(item["name"], item["allowed_disruptions"])

    live = {AllocationState.RUNNING, AllocationState.PREEMPTING}
    waiting = {AskState.PENDING, AskState.RESERVED}
    return replace(
        state,
        nodes=tuple(nodes.values()),
        allocations=tuple(a for a in allocations.values() if a.state in live),
        asks=tuple(a for a in asks.values() if a.state in waiting),
        budgets=tuple(budgets.values()),
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


def _ask(row: tuple) -> model.Ask:
    (id_, app, queue, resources, priority, allow, policy, required, job, created_at, state,
     node) = row  # fmt: skip
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
    config = config or partition.current_config()
    per_queue = leaf_usage(partition, names=resource_names(partition, config))
    return model.ClusterState(config=config).hierarchy.usage_by_queue(per_queue)
