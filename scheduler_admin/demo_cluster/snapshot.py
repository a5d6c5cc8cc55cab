"""A partition's stored cluster state as the demo cluster reads it (``read_snapshot``), and
the summary ``manage.py simulate_cluster`` prints of it (``summary_lines``).

``read_snapshot`` is the demo cluster's one read of the database; every write goes through
``cluster.services.ingest_cluster_state``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from preemption.config import PartitionConfig
from scheduler_admin.cluster.models import Allocation, Ask, AskState
from scheduler_admin.demo_cluster.layout import GI, GPU, MEMORY, PODS, VCORE, Layout
from scheduler_admin.queues.models import Partition


@dataclass(frozen=True)
class Task:
    """A stored allocation, as churn needs it (resources are canonical integers)."""

    id: str
    app: str
    queue: str
    user: str
    node: str
    resources: Mapping[str, int]
    priority: int = 0
    originator: bool = False
    allow_preemption: bool = True
    required_node: str = ""
    job: str = ""
    qos: str = ""
    pdb: str = ""
    state: str = "running"


@dataclass(frozen=True)
class PendingAsk:
    """A stored ask (``pending`` or ``reserved``)."""

    id: str
    app: str
    queue: str
    user: str
    resources: Mapping[str, int]
    priority: int = 0
    allow_preemption: bool = True
    preemption_policy: str = "PreemptLowerPriority"
    job: str = ""
    state: str = "pending"
    required_node: str = ""
    #: The node the product reserved or nominated for it, if any.
    node: str = ""


@dataclass(frozen=True)
class ClusterSnapshot:
    """A partition's stored cluster state: what ``churn_step`` and the summary look at."""

    config: PartitionConfig
    nodes: Mapping[str, Mapping[str, int]]
    allocations: tuple[Task, ...] = ()
    asks: tuple[PendingAsk, ...] = ()
    budgets: Mapping[str, int] = field(default_factory=dict)
    unschedulable: frozenset[str] = frozenset()


#: Snapshot field -> database column, for ``read_snapshot``.
_TASK_COLUMNS = {
    "id": "external_id", "app": "application__external_id", "user": "application__user",
    "queue": "queue_path", "node": "node_name", "resources": "resources", "priority": "priority",
    "originator": "originator", "allow_preemption": "allow_preemption",
    "required_node": "required_node", "job": "job", "qos": "qos", "pdb": "pdb", "state": "state",
}  # fmt: skip
_ASK_COLUMNS = {
    "id": "external_id", "app": "application__external_id", "user": "application__user",
    "queue": "queue_path", "resources": "resources", "priority": "priority",
    "allow_preemption": "allow_preemption", "preemption_policy": "preemption_policy",
    "job": "job", "state": "state", "required_node": "required_node", "node": "node",
}  # fmt: skip


def read_snapshot(partition: Partition) -> ClusterSnapshot:
    """The stored state of ``partition`` (a ``queues.models.Partition``): nodes, allocations,
    pending or reserved asks, budgets and the current queue config."""
    rows = list(partition.nodes.values_list("name", "capacity", "schedulable"))
    nodes = {name: capacity for name, capacity, _ in rows}
    allocations = Allocation.objects.filter(partition=partition).order_by("external_id")
    asks = Ask.objects.filter(
        partition=partition, state__in=[AskState.PENDING, AskState.RESERVED]
    ).order_by("external_id")
    return ClusterSnapshot(
        config=partition.current_config(),
        nodes=nodes,
        allocations=tuple(
            Task(**{key: row[column] for key, column in _TASK_COLUMNS.items()})
            for row in allocations.values(*_TASK_COLUMNS.values())
        ),
        asks=tuple(
            PendingAsk(**{key: row[column] for key, column in _ASK_COLUMNS.items()})
            for row in asks.values(*_ASK_COLUMNS.values())
        ),
        budgets=dict(partition.budgets.values_list("name", "allowed_disruptions")),
        unschedulable=frozenset(name for name, _, schedulable in rows if not schedulable),
    )


def summary_lines(snapshot: ClusterSnapshot) -> list[str]:
    """What the cluster looks like, for the command's output: counts, then one line per leaf
    with its usage against its guarantee and max."""
    layout = Layout(snapshot.config)
    live = [t for t in snapshot.allocations if t.state != "released"]
    gpu_nodes = sum(1 for c in snapshot.nodes.values() if c.get(GPU))
    daemonset = sum(1 for t in live if t.required_node)
    states = defaultdict(int)
    for task in snapshot.allocations:
        states[task.state] += 1
    lines = [
        f"nodes: {len(snapshot.nodes)} ({len(snapshot.nodes) - gpu_nodes} CPU, {gpu_nodes} GPU)",
        f"tasks: {len(live) - daemonset} + {daemonset} DaemonSet pods"
        f" ({', '.join(f'{n} {s}' for s, n in sorted(states.items()))}); "
        f"{sum(1 for t in live if t.originator)} originators, "
        f"{sum(1 for t in live if not t.allow_preemption)} opted out, "
        f"{sum(1 for t in live if t.resources.get(GPU))} on GPUs, "
        f"{sum(1 for t in live if t.pdb)} under {len(snapshot.budgets)} disruption budgets",
        f"asks: {len(snapshot.asks)} pending"
        f" ({sum(1 for a in snapshot.asks if a.job)} in gangs,"
        f" {sum(1 for a in snapshot.asks if a.priority >= 1000)} with priority 1000)",
        "tenants: "
        + ", ".join(f"{t}{' (fenced)' if t in layout.fenced else ''}" for t in layout.tenants),
        f"DaemonSet pods go to {layout.daemonset_leaf}",
    ]
    usage = layout.hierarchy.usage_by_queue(live)
    counts = defaultdict(int)
    for task in live:
        counts[task.queue] += 1
    for leaf in layout.leaves:
        used = usage[leaf]
        guaranteed = layout.guaranteed(leaf)
        above = [n for n, v in sorted(guaranteed.items()) if used.get(n, 0) > v]
        lines.append(
            f"  {leaf}: {counts[leaf]} tasks using {_show(used)}"
            f" | guaranteed {_show(guaranteed)} | max {_show(layout.max(leaf))}"
            f"{' | above guarantee in ' + ', '.join(above) if above else ''}"
        )
    return lines


def _show(amount: Mapping[str, int]) -> str:
    """Rounded for reading: cores and GiB with one decimal, other types as they are."""
    keys = [n for n in (VCORE, MEMORY, GPU) if n in amount]
    keys += sorted(n for n in amount if n not in keys and n != PODS)
    if not keys:
        return "-"
    shown = []
    for name in keys:
        if name == VCORE:
            shown.append(f"{amount[name] / 1000:.1f} cores")
        elif name == MEMORY:
            shown.append(f"{amount[name] / GI:.1f}Gi")
        else:
            shown.append(f"{amount[name]} {name}")
    return ", ".join(shown)
