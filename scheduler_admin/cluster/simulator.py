"""The built-in cluster simulator (SPEC 3.3): a realistic demo cluster, kept alive by churn.

No real cluster is connected to the demo, so ``manage.py simulate_cluster`` plays one. This module
only *produces* cluster-state bodies in the vocabulary of
``scheduler_admin.cluster.services.ingest_cluster_state``, which does every write; its one read of
the database is ``read_snapshot``. The same inputs (queue config, seed or ``random.Random``,
``now``) always give the same body.

``initial_cluster`` builds, for a partition's queue tree:

1. **Nodes**: CPU nodes of three sizes and, when some queue's guaranteed or max names
   ``nvidia.com/gpu``, a few GPU nodes (8 GPUs each, about enough for the GPU queues' max).
2. **DaemonSet pods**: one per node for each of ``DAEMONSETS``, ``required_node`` = the node, in
   a system-ish leaf (``SYSTEM_LEAF_NAMES``) or, when the tree has none (``demo/queues.yaml``),
   in the first leaf of the last tenant (the demo's ``root.batch.nightly``).
3. **Applications** in every leaf: a driver (the app's ``originator``) and its executors, all of
   one priority (clustered at 0, 100 and 1000, some in between; the fenced tenant runs higher),
   about 5 % of tasks opted out of preemption, a QoS class, created over the past 12 hours. Leaves
   that may use GPUs also run training apps: a launcher and GPU workers, a gang (``job``) when
   there are several workers. Two apps of the first (preferably fenced) tenant get a disruption
   budget (``pdb``).
4. **Sizes** come from targets, not from the task count: the first leaf of every tenant is "hot"
   (usage well above its guarantee, below its max), the others "cool" (below their guarantee), so
   preemption has work as soon as an admin lowers a quota. Every placement respects both the
   node's free room and the max of the leaf and of each of its ancestors; a task that fits
   nowhere is halved twice, then left out (``--tasks`` is an upper bound on a small cluster).
5. **Pending asks**: a gang (4 asks sharing a ``job``, on GPUs where there are some) and single
   asks, some with priority 1000, a few with ``preemption_policy: Never``, mostly in cool leaves.

``churn_step`` then turns a snapshot of the stored state into the next body (``_Churn`` lists the
phases): a few tasks finish and are replaced by work of the same shape in the same queue, asks
are scheduled where they fit, and pods released by an acknowledged eviction disappear and come
back as pending asks. So the cluster keeps its built shape for hours while preemption visibly
moves it.

Ids embed a token derived from ``now`` so that a rebuild never reuses the id of an allocation that
already has an eviction order (orders are unique per allocation id and outlive the allocation).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from preemption import resources as res
from preemption.config import ROOT, PartitionConfig
from preemption.hierarchy import Hierarchy

VCORE = "vcore"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"
MI = 1024**2
GI = 1024**3

#: CPU node shapes (cores, GiB of memory) and how often each is drawn.
CPU_NODE_SHAPES = ((16, 64), (32, 128), (64, 256))
CPU_NODE_WEIGHTS = (2, 5, 3)
GPUS_PER_NODE = 8
GPU_NODE = {VCORE: 64_000, MEMORY: 512 * GI, GPU: GPUS_PER_NODE}
#: Raised from Kubernetes' default of 110 so thousands of small tasks fit on 20 nodes.
PODS_PER_NODE = 250

#: The DaemonSets running on every node: name, millicores, bytes.
DAEMONSETS = (("node-exporter", 100, 128 * MI), ("log-shipper", 200, 256 * MI))
DAEMONSET_PRIORITY = 1000
#: Leaf names that look like a home for cluster-wide system pods.
SYSTEM_LEAF_NAMES = frozenset(
    {"system", "kube-system", "infra", "infrastructure", "platform", "daemonset", "daemonsets"}
)

#: Smallest task, and the largest mean CPU task (bigger work comes as more tasks).
MIN_TASK = {VCORE: 10, MEMORY: 32 * MI}
MAX_MEAN_TASK = {VCORE: 4_000, MEMORY: 16 * GI}
#: Size multipliers of an application's executors around the leaf's mean, and their weights
#: (mean about 0.9, so usage lands a little under the target).
SIZE_FACTORS = (0.25, 0.5, 1.0, 1.5, 2.5)
SIZE_WEIGHTS = (2, 3, 3, 1, 1)
#: Executors per CPU application, driver included (mean 20: about 5 % originators).
APP_SIZE = (5, 35)
OPTED_OUT_SHARE = 0.05
#: Priority clusters (value, weight); ``None`` draws a value in between.
PRIORITIES_FENCED = ((1000, 4), (100, 4), (0, 1), (None, 1))
PRIORITIES_OTHER = ((0, 9), (100, 6), (1000, 2), (None, 3))
QOS_FENCED = (("Guaranteed", 7), ("Burstable", 3))
QOS_OTHER = (("Guaranteed", 2), ("Burstable", 6), ("BestEffort", 2))
USERS = ("ana", "bo", "chen", "dara", "eli", "fatima", "gus", "hiro", "ines", "jon", "kai", "lea")
#: In the id of an ask for new work (not a requeued pod or a resubmitted gang).
NEW_ASK_MARK = "-ask-"
#: How far back tasks were created.
MAX_AGE = timedelta(hours=12)

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class SimulatorError(ValueError):
    """The partition cannot be simulated (e.g. it has no queue under root)."""


# ------------------------------------------------------------------------------------------------
# The queue tree as the simulator sees it
# ------------------------------------------------------------------------------------------------


class Layout:
    """Leaves, tenants (root's children), the fenced tenants, the leaves that may use GPUs, the
    DaemonSet leaf, and the chain of limits above every leaf."""

    def __init__(self, config: PartitionConfig) -> None:
        self.config = config
        self.hierarchy = h = Hierarchy(config)
        if ROOT not in h.queues or not h.children(ROOT):
            raise SimulatorError(f"partition {config.name!r} has no queue under root")
        self.tenants: list[str] = list(h.children(ROOT))
        self.leaves: list[str] = h.leaves_under(ROOT)
        self.tenant_of = {
            leaf: next(t for t in self.tenants if h.is_within(leaf, t)) for leaf in self.leaves
        }
        self.fenced = [t for t in self.tenants if h.effective_policy(t).value == "fence"]
        self.gpu_leaves = [
            leaf
            for leaf in self.leaves
            if any(
                GPU in h.queues[q].guaranteed or GPU in h.queues[q].max
                for q in h.path_from_root(leaf)
            )
        ]
        self.chain = {path: h.path_from_root(path) for path in h.queues}
        #: Per leaf: (queue path, max) for every queue on its path that sets a max.
        self.limits = {
            leaf: [(q, dict(h.queues[q].max)) for q in self.chain[leaf] if h.queues[q].max]
            for leaf in self.leaves
        }
        system = [
            leaf
            for leaf in self.leaves
            if h.queues[leaf].name.lower() in SYSTEM_LEAF_NAMES or "system" in leaf.lower()
        ]
        self.daemonset_leaf = system[0] if system else h.leaves_under(self.tenants[-1])[0]
        first_leaves = {h.leaves_under(t)[0] for t in self.tenants}
        self.hot = [leaf for leaf in self.leaves if leaf in first_leaves]

    def slug(self, path: str) -> str:
        """The path without ``root.``, dots as dashes (``prod-web``): the start of the ids of
        the queue's applications, unique where leaf names repeat under different parents."""
        return path.removeprefix(ROOT + ".").replace(".", "-")

    def guaranteed(self, path: str) -> Mapping[str, int]:
        return self.hierarchy.queues[path].guaranteed

    def max(self, path: str) -> Mapping[str, int]:
        return self.hierarchy.queues[path].max


class _Placer:
    """Free room per node and usage per queue, so a task is placed only where it fits both."""

    def __init__(self, layout: Layout, capacity: Mapping[str, Mapping[str, int]]) -> None:
        self.layout = layout
        self.free = {name: dict(cap) for name, cap in capacity.items()}
        self.usage: dict[str, dict[str, int]] = {path: {} for path in layout.hierarchy.queues}

    def fits_queue(self, queue: str, amount: Mapping[str, int]) -> bool:
        for path, limit in self.layout.limits.get(queue, ()):
            used = self.usage[path]
            for name, cap in limit.items():
                if used.get(name, 0) + amount.get(name, 0) > cap:
                    return False
        return queue in self.layout.limits

    def fits_node(self, node: str, amount: Mapping[str, int]) -> bool:
        free = self.free.get(node)
        return free is not None and all(
            value <= free.get(name, 0) for name, value in amount.items() if value
        )

    def take(self, queue: str, node: str, amount: Mapping[str, int], sign: int = 1) -> None:
        """Count ``amount`` on the node and on the queue's path (``sign=-1`` gives it back)."""
        for path in self.layout.chain.get(queue, ()):
            used = self.usage[path]
            for name, value in amount.items():
                used[name] = used.get(name, 0) + sign * value
        free = self.free.get(node)
        if free is not None:
            for name, value in amount.items():
                free[name] = free.get(name, 0) - sign * value

    def place(
        self, queue: str, amount: Mapping[str, int], nodes: Sequence[str], rng: random.Random
    ) -> str | None:
        """First node that fits, scanning from a random one (spreads the load); None if the
        queue's limits or every node refuse."""
        if not nodes or not self.fits_queue(queue, amount):
            return None
        start = rng.randrange(len(nodes))
        for offset in range(len(nodes)):
            node = nodes[(start + offset) % len(nodes)]
            if self.fits_node(node, amount):
                self.take(queue, node, amount)
                return node
        return None


# ------------------------------------------------------------------------------------------------
# Building a cluster
# ------------------------------------------------------------------------------------------------


@dataclass
class _App:
    id: str
    queue: str
    user: str
    priority: int
    qos: str
    start: datetime
    job: str = ""
    pdb: str = ""
    #: (task id, resources, originator, on GPU nodes)
    tasks: list[tuple[str, dict[str, int], bool, bool]] = field(default_factory=list)


def initial_cluster(
    partition_config: PartitionConfig, *, nodes: int, tasks: int, seed: int, now: datetime
) -> dict[str, Any]:
    """An ingest body for a whole demo cluster: ``nodes`` nodes, up to ``tasks`` ordinary tasks
    (plus the DaemonSet pods and some pending asks). Deterministic for (config, seed, now)."""
    if nodes < 1 or tasks < 0:
        raise SimulatorError("nodes must be at least 1 and tasks at least 0")
    rng = random.Random(seed)  # noqa: S311 - a simulation, not cryptography
    layout = Layout(partition_config)
    token = _base36(int(now.timestamp()) % 36**6)

    node_list, capacity = _nodes(layout, nodes, rng)
    cpu_nodes = [n for n in node_list if not capacity[n].get(GPU)]
    gpu_nodes = [n for n in node_list if capacity[n].get(GPU)]
    placer = _Placer(layout, capacity)
    allocations: list[dict[str, Any]] = []

    for ds_name, millicores, memory in DAEMONSETS:
        amount = {VCORE: millicores, MEMORY: memory, PODS: 1}
        for node in node_list:
            if not (
                placer.fits_queue(layout.daemonset_leaf, amount) and placer.fits_node(node, amount)
            ):
                continue
            placer.take(layout.daemonset_leaf, node, amount)
            allocations.append(
                _allocation(
                    f"{ds_name}-{token}-{node}", f"ds-{ds_name}", layout.daemonset_leaf, "system",
                    node, amount, priority=DAEMONSET_PRIORITY, originator=False,
                    allow_preemption=True, created_at=now - MAX_AGE - timedelta(hours=1),
                    qos="Burstable", required_node=node,
                )
            )  # fmt: skip

    apps = _applications(layout, capacity, tasks, rng, now, token)
    rng.shuffle(apps)  # interleave the leaves, so none is starved of room by the others
    for app in apps:
        placed_any = False
        for task_id, amount, originator, on_gpu in app.tasks:
            node = None
            for _attempt in range(3):
                node = placer.place(app.queue, amount, gpu_nodes if on_gpu else cpu_nodes, rng)
                if node is not None or on_gpu:
                    break
                amount = _halved(amount)
            if node is None:
                if originator:
                    break  # no driver, no application
                continue
            placed_any = True
            age = 0 if originator else rng.randint(5, 600)
            allocations.append(
                _allocation(
                    task_id, app.id, app.queue, app.user, node, amount,
                    priority=app.priority, originator=originator,
                    allow_preemption=originator or rng.random() >= OPTED_OUT_SHARE,
                    created_at=min(app.start + timedelta(seconds=age), now - timedelta(seconds=1)),
                    qos=app.qos, job=app.job, pdb=app.pdb,
                )
            )  # fmt: skip
        if not placed_any:
            app.pdb = ""

    budgets = [
        {"name": app.pdb, "allowed_disruptions": allowed}
        for app, allowed in zip([a for a in apps if a.pdb], (1, 2), strict=False)
    ]
    asks = _asks(layout, apps, tasks, rng, now, token) if tasks else []
    return {
        "nodes": [
            {"name": n, "capacity": res.format_resources(capacity[n]), "schedulable": True}
            for n in node_list
        ],
        "allocations": allocations,
        "asks": asks,
        "budgets": budgets,
    }


def _nodes(
    layout: Layout, count: int, rng: random.Random
) -> tuple[list[str], dict[str, dict[str, int]]]:
    gpu_count = 0
    if layout.gpu_leaves:
        wanted = math.ceil(_gpu_cap(layout, ROOT) / GPUS_PER_NODE)
        gpu_count = max(1, min(wanted, count // 5))
    capacity: dict[str, dict[str, int]] = {}
    for index in range(1, count - gpu_count + 1):
        cores, gib = rng.choices(CPU_NODE_SHAPES, CPU_NODE_WEIGHTS)[0]
        capacity[f"cpu-node-{index:03d}"] = {VCORE: cores * 1000, MEMORY: gib * GI}
    for index in range(1, gpu_count + 1):
        capacity[f"gpu-node-{index:03d}"] = dict(GPU_NODE)
    for cap in capacity.values():
        cap[PODS] = PODS_PER_NODE
    return list(capacity), capacity


def _gpu_cap(layout: Layout, path: str) -> int:
    """GPUs the subtree could use: its max, else the sum of its children (16 per unlimited
    GPU leaf)."""
    h = layout.hierarchy
    if h.is_leaf(path):
        return layout.max(path).get(GPU, 16) if path in layout.gpu_leaves else 0
    below = sum(_gpu_cap(layout, child) for child in h.children(path))
    own = layout.max(path).get(GPU)
    return below if own is None else min(own, below)


def _available(layout: Layout, capacity: Mapping[str, Mapping[str, int]]) -> dict[str, dict]:
    """What each queue may use at most: its share of its parent's room (by the number of leaves
    using the type beneath it), capped by its own max. Room at root is 85 % of the nodes."""
    h = layout.hierarchy
    cpu = [c for c in capacity.values() if not c.get(GPU)]
    total = {
        VCORE: sum(c[VCORE] for c in cpu) * 0.85,
        MEMORY: sum(c[MEMORY] for c in cpu) * 0.85,
        GPU: sum(c.get(GPU, 0) for c in capacity.values()),
    }
    users = {
        VCORE: set(layout.leaves),
        MEMORY: set(layout.leaves),
        GPU: set(layout.gpu_leaves),
    }
    weight = {
        (path, name): sum(1 for leaf in h.leaves_under(path) if leaf in users[name])
        for path in h.queues
        for name in total
    }
    available: dict[str, dict[str, float]] = {ROOT: total}
    for queue in layout.config.queues:
        if queue.parent is None:
            continue
        parent = available[queue.parent]
        room: dict[str, float] = {}
        for name, value in parent.items():
            siblings = sum(weight[(s, name)] for s in h.children(queue.parent))
            share = weight[(queue.path, name)] / siblings if siblings else 0.0
            room[name] = min(value * share, queue.max.get(name, math.inf))
        available[queue.path] = room
    return available


def _targets(
    layout: Layout, capacity: Mapping[str, Mapping[str, int]], rng: random.Random
) -> dict[str, dict[str, float]]:
    """Usage to aim for per leaf: hot leaves well above their guarantee, cool ones below."""
    available = _available(layout, capacity)
    targets: dict[str, dict[str, float]] = {}
    for leaf in layout.leaves:
        room = available[leaf]
        guaranteed = layout.guaranteed(leaf)
        target: dict[str, float] = {}
        for name, value in room.items():
            if leaf in layout.hot:
                wanted = value * rng.uniform(0.75, 0.92)
                if name in guaranteed:
                    wanted = max(wanted, min(guaranteed[name] * 1.3, value * 0.95))
            elif name in guaranteed:
                wanted = min(guaranteed[name] * rng.uniform(0.5, 0.85), value * 0.9)
            else:
                wanted = value * rng.uniform(0.3, 0.5)
            target[name] = wanted
        targets[leaf] = target
    return targets


def _split(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainder: the parts add up)."""
    whole = sum(weights)
    if not whole:
        return [0] * len(weights)
    raw = [total * w / whole for w in weights]
    parts = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (parts[i] - raw[i], i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _applications(
    layout: Layout,
    capacity: Mapping[str, Mapping[str, int]],
    tasks: int,
    rng: random.Random,
    now: datetime,
    token: str,
) -> list[_App]:
    """Every leaf's applications with their tasks' sizes, before placement."""
    targets = _targets(layout, capacity, rng)
    counts = _split(tasks, [1.5 if leaf in layout.hot else 1.0 for leaf in layout.leaves])
    fenced = layout.fenced[0] if layout.fenced else layout.tenants[0]
    pdb_leaves = [leaf for leaf in layout.leaves if layout.tenant_of[leaf] == fenced][:2]
    apps: list[_App] = []
    for leaf, count in zip(layout.leaves, counts, strict=True):
        target = dict(targets[leaf])
        leaf_apps: list[_App] = []
        gpu_tasks = 0
        if leaf in layout.gpu_leaves and target.get(GPU, 0) >= 1:
            gpu_tasks = _gpu_apps(layout, leaf, target, count, leaf_apps, rng, now, token)
        cpu_tasks = count - gpu_tasks
        if cpu_tasks > 0:
            mean = {
                name: min(
                    max(target.get(name, 0.0), targets[leaf].get(name, 0.0) * 0.15) / cpu_tasks,
                    MAX_MEAN_TASK[name],
                )
                for name in (VCORE, MEMORY)
            }
            _cpu_apps(layout, leaf, cpu_tasks, mean, leaf_apps, rng, now, token)
        if leaf in pdb_leaves:
            first_cpu = next((a for a in leaf_apps if not a.job and len(a.tasks) > 2), None)
            if first_cpu is not None:
                first_cpu.pdb = f"{layout.slug(leaf)}-pdb"
        apps.extend(leaf_apps)
    return apps


def _app(
    layout: Layout, leaf: str, app_id: str, rng: random.Random, now: datetime, job: bool = False
) -> _App:
    fenced = layout.tenant_of[leaf] in layout.fenced
    return _App(
        id=app_id,
        queue=leaf,
        user=rng.choice(USERS),
        priority=_priority(rng, PRIORITIES_FENCED if fenced else PRIORITIES_OTHER),
        qos=_weighted(rng, QOS_FENCED if fenced else QOS_OTHER),
        start=now - timedelta(seconds=rng.randint(300, int(MAX_AGE.total_seconds()))),
        job=app_id if job else "",
    )


def _gpu_apps(
    layout: Layout,
    leaf: str,
    target: dict[str, float],
    count: int,
    out: list[_App],
    rng: random.Random,
    now: datetime,
    token: str,
) -> int:
    """Training apps (a CPU launcher, the originator, and GPU workers) until the leaf's GPU
    target is met or 40 % of its tasks are used; takes their CPU and memory off ``target``."""
    limit = max(2, int(count * 0.4)) if count >= 2 else 0
    # CPU and memory per GPU from the leaf's targets, so a cool leaf stays cool in every type.
    per_gpu = {
        VCORE: min(max(target.get(VCORE, math.inf) * 0.6 / target[GPU], 1000), 7000),
        MEMORY: min(max(target.get(MEMORY, math.inf) * 0.6 / target[GPU], 4 * GI), 40 * GI),
    }
    used_tasks = 0
    gpus = 0.0
    number = 0
    while gpus + 1 <= target[GPU] and used_tasks + 2 <= limit:
        number += 1
        workers = min(rng.choice((1, 2, 2, 4)), limit - used_tasks - 1)
        per_worker = rng.choice((1, 1, 2, 2, 4, 8))
        per_worker = max(1, min(per_worker, GPUS_PER_NODE, int((target[GPU] - gpus) // workers)))
        app_id = f"{layout.slug(leaf)}-train{number:03d}-{token}"
        app = _app(layout, leaf, app_id, rng, now, job=workers > 1)
        launcher = {VCORE: 1000, MEMORY: 2 * GI, PODS: 1}
        app.tasks.append((f"{app_id}-launcher", launcher, True, False))
        worker = {
            VCORE: per_worker * round(per_gpu[VCORE] * rng.uniform(0.8, 1.2) / 1000) * 1000,
            MEMORY: per_worker * round(per_gpu[MEMORY] * rng.uniform(0.8, 1.2) / GI) * GI,
            GPU: per_worker,
            PODS: 1,
        }
        for index in range(workers):
            app.tasks.append((f"{app_id}-worker-{index}", dict(worker), False, True))
        gpus += workers * per_worker
        used_tasks += 1 + workers
        for name in (VCORE, MEMORY):
            if name in target:
                target[name] -= launcher[name] + workers * worker[name]
        out.append(app)
    return used_tasks


def _cpu_apps(
    layout: Layout,
    leaf: str,
    count: int,
    mean: Mapping[str, float],
    out: list[_App],
    rng: random.Random,
    now: datetime,
    token: str,
) -> None:
    """Driver + executors apps with ``count`` tasks in all, executors sized around ``mean``."""
    remaining = count
    number = 0
    while remaining > 0:
        number += 1
        size = min(rng.randint(*APP_SIZE), remaining)
        if remaining - size < APP_SIZE[0]:
            size = remaining
        remaining -= size
        app_id = f"{layout.slug(leaf)}-app{number:04d}-{token}"
        app = _app(layout, leaf, app_id, rng, now)
        factor = rng.choices(SIZE_FACTORS, SIZE_WEIGHTS)[0]
        executor = _rounded(
            {
                VCORE: mean[VCORE] * factor,
                MEMORY: mean[MEMORY] * factor * rng.uniform(0.7, 1.3),
            }
        )
        driver = _rounded({VCORE: executor[VCORE] / 2, MEMORY: executor[MEMORY] / 2})
        app.tasks.append((f"{app_id}-driver", driver, True, False))
        for index in range(1, size):
            app.tasks.append((f"{app_id}-exec-{index}", dict(executor), False, False))
        out.append(app)


def _asks(
    layout: Layout, apps: Sequence[_App], tasks: int, rng: random.Random, now: datetime, token: str
) -> list[dict[str, Any]]:
    """A gang in the first GPU leaf (a CPU one without GPU leaves) and single asks, mostly in
    cool leaves."""
    asks: list[dict[str, Any]] = []
    gang_leaf = layout.gpu_leaves[0] if layout.gpu_leaves else layout.hot[0]
    gang = f"{layout.slug(gang_leaf)}-gang-{token}"
    member = {VCORE: 4000, MEMORY: 16 * GI, PODS: 1}
    if gang_leaf in layout.gpu_leaves:
        member[GPU] = 2
    for index in range(4):
        asks.append(
            _ask(
                f"{gang}-{index}", gang, gang_leaf, rng.choice(USERS), member, priority=100,
                created_at=now - timedelta(seconds=rng.randint(30, 600)), job=gang,
            )
        )  # fmt: skip
    cool = [leaf for leaf in layout.leaves if leaf not in layout.hot] or layout.leaves
    by_leaf: dict[str, list[_App]] = defaultdict(list)
    for app in apps:
        if app.tasks and not app.job:
            by_leaf[app.queue].append(app)
    for index in range(max(3, tasks // 150)):
        leaf = rng.choice(cool if rng.random() < 0.75 else layout.leaves)
        existing = by_leaf.get(leaf)
        if existing and rng.random() < 0.5:
            app = rng.choice(existing)
            amount, priority, user = dict(app.tasks[-1][1]), app.priority, app.user
            app_id = app.id
        else:
            app_id = f"{layout.slug(leaf)}-pending{index:03d}-{token}"
            amount = {VCORE: rng.choice((500, 1000, 2000, 4000)), MEMORY: rng.choice((1, 2, 4, 8))}
            amount[MEMORY] *= GI
            priority, user = _priority(rng, PRIORITIES_OTHER), rng.choice(USERS)
        if rng.random() < 0.3:
            priority = 1000
        amount[PODS] = 1
        asks.append(
            _ask(
                f"{app_id}{NEW_ASK_MARK}{index}", app_id, leaf, user, amount, priority=priority,
                created_at=now - timedelta(seconds=rng.randint(10, 900)),
                preemption_policy="Never" if rng.random() < 0.1 else None,
            )
        )  # fmt: skip
    return asks


# ------------------------------------------------------------------------------------------------
# Churn
# ------------------------------------------------------------------------------------------------


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


def read_snapshot(partition: Any) -> ClusterSnapshot:
    """The stored state of ``partition`` (a ``queues.models.Partition``): nodes, allocations,
    pending or reserved asks, budgets and the current queue config."""
    from scheduler_admin.cluster.models import Allocation, Ask, AskState

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


def churn_step(
    state_snapshot: ClusterSnapshot, *, now: datetime, rng: random.Random
) -> dict[str, Any]:
    """The next ingest body (see ``_Churn``): evicted pods are gone and come back as asks, a
    few running tasks finish and are replaced, some asks get scheduled, now and then a new ask.
    """
    churn = _Churn(state_snapshot, now, rng)
    churn.finish()
    churn.schedule_asks()
    churn.resubmit()
    churn.replace_tasks()
    churn.requeue_evicted()
    churn.add_ask()
    return {
        "allocations": churn.new_allocations,
        "asks": churn.new_asks,
        "remove": {"allocations": churn.removed_allocations, "asks": churn.removed_asks},
    }


class _Churn:
    """One churn step. Work is replaced by work of the same shape in the same queue, so the
    cluster keeps the shape it was built with (hot and cool queues, GPU runs) for hours,
    while preemption visibly moves it: an evicted pod comes back as a pending ask of its
    queue, scheduled only once its queue and some node have room again.

    1. ``finish``: a few running tasks finish; an originator, a gang member or a GPU task ends
       its whole application (training runs end as a whole).
    2. ``schedule_asks``: an allocation with the ask's id replaces the ask; a gang places all
       its members or none. An ask the product reserved or nominated a node for goes there as
       soon as it fits (its victims are gone); any other, by chance, where it fits. One that
       fits nowhere stays pending until the product preempts for it.
    3. ``resubmit``: every finished application comes back as a new one of the same shape; a
       gang that cannot be placed whole waits as a pending gang instead.
    4. ``replace_tasks``: the other finished tasks are replaced by copies in their application,
       less one of the same queue per new ask just scheduled (so usage only wanders).
    5. ``requeue_evicted``: pods released by an acknowledged eviction are removed (the cluster
       deleted them) and come back as asks (a DaemonSet pod with its ``required_node``).
    6. ``add_ask``: when few asks are pending, or by chance, a new one: a copy of a running task.
    """

    SCHEDULE_CHANCE = 0.25
    #: Above this many pending asks no new ask is created (requeued pods and gangs included).
    MAX_PENDING_ASKS = 40

    def __init__(self, snapshot: ClusterSnapshot, now: datetime, rng: random.Random) -> None:
        self.snapshot = snapshot
        self.now = now
        self.rng = rng
        self.layout = Layout(snapshot.config)
        self.nodes = {n: c for n, c in snapshot.nodes.items() if n not in snapshot.unschedulable}
        self.cpu_nodes = [n for n, c in self.nodes.items() if not c.get(GPU)]
        self.gpu_nodes = [n for n, c in self.nodes.items() if c.get(GPU)]
        self.placer = _Placer(self.layout, self.nodes)
        for task in snapshot.allocations:
            if task.state != "released":
                self.placer.take(task.queue, task.node, task.resources)
        self.token = _base36(int(now.timestamp() * 1000) % 36**8) + _base36(rng.randrange(36**3))
        self.serial = 0
        self.running = [t for t in snapshot.allocations if t.state == "running"]
        self.ordinary = [t for t in self.running if not t.required_node]
        self.new_allocations: list[dict[str, Any]] = []
        self.new_asks: list[dict[str, Any]] = []
        self.removed_allocations: list[str] = []
        self.removed_asks: list[str] = []
        self.finished: dict[str, Task] = {}
        self.ended_apps: dict[str, list[Task]] = {}
        self.scheduled: list[PendingAsk] = []
        self.pending = len(snapshot.asks)

    def finish(self) -> None:
        if not self.ordinary:
            return
        by_app: dict[str, list[Task]] = defaultdict(list)
        for task in self.running:
            by_app[task.app].append(task)
        count = self.rng.randint(1, max(2, len(self.ordinary) // 150))
        for task in self.rng.sample(self.ordinary, min(count, len(self.ordinary))):
            whole = task.originator or task.job or task.resources.get(GPU)
            if whole:
                self.ended_apps[task.app] = by_app[task.app]
            for done in by_app[task.app] if whole else [task]:
                self.finished[done.id] = done
        for task in self.finished.values():
            self.placer.take(task.queue, task.node, task.resources, sign=-1)
            self.removed_allocations.append(task.id)
        for ask in self.snapshot.asks:
            if ask.app in self.ended_apps:
                self.removed_asks.append(ask.id)
                self.pending -= 1

    def schedule_asks(self) -> None:
        groups: dict[str, list[PendingAsk]] = defaultdict(list)
        for ask in self.snapshot.asks:
            if ask.app not in self.ended_apps and ask.queue in self.layout.limits:
                groups[ask.job or ask.id].append(ask)
        for key in sorted(groups):
            lucky = self.rng.random() < self.SCHEDULE_CHANCE
            if not lucky and not any(ask.node for ask in groups[key]):
                continue
            placed: list[tuple[PendingAsk, str]] = []
            for ask in groups[key]:
                if ask.node and self.placer.fits_node(ask.node, ask.resources):
                    pool = [ask.node]
                elif lucky and not ask.required_node:
                    pool = self._pool(ask.resources)
                else:
                    break
                node = self.placer.place(ask.queue, ask.resources, pool, self.rng)
                if node is None:
                    break
                placed.append((ask, node))
            if len(placed) < len(groups[key]):
                for ask, node in placed:
                    self.placer.take(ask.queue, node, ask.resources, sign=-1)
                continue
            for ask, node in placed:
                self.new_allocations.append(
                    _allocation(
                        ask.id, ask.app, ask.queue, ask.user, node, ask.resources,
                        priority=ask.priority, originator=False,
                        allow_preemption=ask.allow_preemption, created_at=self.now, job=ask.job,
                        required_node=ask.required_node,
                    )
                )  # fmt: skip
                self.removed_asks.append(ask.id)
                self.scheduled.append(ask)
                self.pending -= 1

    def resubmit(self) -> None:
        for old_app in sorted(self.ended_apps):
            tasks = sorted(self.ended_apps[old_app], key=lambda t: (not t.originator, t.id))
            queue = tasks[0].queue
            if queue not in self.layout.limits:
                continue
            gang = any(t.job or t.resources.get(GPU) for t in tasks) and len(tasks) > 1
            app = f"{self.layout.slug(queue)}-{'train' if gang else 'app'}-{self._id()}"
            placed: list[tuple[Task, str]] = []
            for task in tasks:
                node = self.placer.place(
                    queue, task.resources, self._pool(task.resources), self.rng
                )
                if node is None and (gang or task.originator):
                    break
                if node is not None:
                    placed.append((task, node))
            if gang and len(placed) < len(tasks):
                for task, node in placed:
                    self.placer.take(queue, node, task.resources, sign=-1)
                if self.pending + len(tasks) <= self.MAX_PENDING_ASKS:
                    for index, task in enumerate(tasks):
                        self.new_asks.append(
                            _ask(
                                f"{app}-{index}", app, queue, task.user, task.resources,
                                priority=task.priority, created_at=self.now, job=app,
                            )
                        )  # fmt: skip
                    self.pending += len(tasks)
                continue
            for index, (task, node) in enumerate(placed):
                self.new_allocations.append(
                    _allocation(
                        f"{app}-driver" if task.originator else f"{app}-{index}", app, queue,
                        task.user, node, task.resources, priority=task.priority,
                        originator=task.originator, allow_preemption=task.allow_preemption,
                        created_at=self.now, qos=task.qos, job=app if gang else "",
                        pdb=task.pdb,
                    )
                )  # fmt: skip

    def replace_tasks(self) -> None:
        singles = [t for t in self.finished.values() if t.app not in self.ended_apps]
        self.rng.shuffle(singles)
        for ask in self.scheduled:
            # New work (not a requeued pod or a resubmitted gang) takes the place of a task of
            # its own queue.
            if singles and NEW_ASK_MARK in ask.id:
                same = [i for i, t in enumerate(singles) if t.queue == ask.queue]
                singles.pop(same[0] if same else -1)
        for task in singles:
            if task.queue not in self.layout.limits:
                continue
            pool = self._pool(task.resources)
            node = self.placer.place(task.queue, task.resources, pool, self.rng)
            if node is None:
                continue
            self.new_allocations.append(
                _allocation(
                    f"{task.app}-{self._id()}", task.app, task.queue, task.user, node,
                    task.resources, priority=task.priority, originator=False,
                    allow_preemption=task.allow_preemption, created_at=self.now, qos=task.qos,
                    pdb=task.pdb,
                )
            )  # fmt: skip
        if not self.ordinary:  # an empty cluster: start small applications from nothing
            for _ in range(self.rng.randint(1, 3)):
                self._new_app(self.rng.choice(self.layout.leaves))

    def requeue_evicted(self) -> None:
        for task in self.snapshot.allocations:
            if task.state != "released":
                continue
            self.removed_allocations.append(task.id)
            if (
                task.app in self.ended_apps
                or task.queue not in self.layout.limits
                or self.pending >= self.MAX_PENDING_ASKS
            ):
                continue
            self.new_asks.append(
                _ask(
                    f"{task.app}-{self._id()}", task.app, task.queue, task.user, task.resources,
                    priority=task.priority, created_at=self.now,
                    required_node=task.required_node if task.required_node in self.nodes else "",
                )
            )  # fmt: skip
            self.pending += 1

    def add_ask(self) -> None:
        templates = [t for t in self.ordinary if t.queue in self.layout.limits and not t.job]
        if not templates or self.pending >= self.MAX_PENDING_ASKS:
            return
        if self.pending >= 6 and self.rng.random() >= 0.3:
            return
        template = self.rng.choice(templates)
        self.new_asks.append(
            _ask(
                f"{template.app}{NEW_ASK_MARK}{self._id()}", template.app, template.queue,
                template.user, template.resources,
                priority=1000 if self.rng.random() < 0.3 else template.priority,
                created_at=self.now,
            )
        )  # fmt: skip
        self.pending += 1

    def _new_app(self, queue: str) -> None:
        fenced = self.layout.tenant_of[queue] in self.layout.fenced
        app = f"{self.layout.slug(queue)}-app-{self._id()}"
        user = self.rng.choice(USERS)
        priority = _priority(self.rng, PRIORITIES_FENCED if fenced else PRIORITIES_OTHER)
        qos = _weighted(self.rng, QOS_FENCED if fenced else QOS_OTHER)
        amount = {VCORE: 500, MEMORY: GI, PODS: 1}
        for index in range(self.rng.randint(2, 4)):
            node = self.placer.place(queue, amount, self.cpu_nodes, self.rng)
            if node is None:
                return
            self.new_allocations.append(
                _allocation(
                    f"{app}-driver" if index == 0 else f"{app}-{index}", app, queue, user, node,
                    amount, priority=priority, originator=index == 0, allow_preemption=True,
                    created_at=self.now, qos=qos,
                )
            )  # fmt: skip

    def _pool(self, amount: Mapping[str, int]) -> list[str]:
        return self.gpu_nodes if amount.get(GPU) else self.cpu_nodes

    def _id(self) -> str:
        """A fresh id part: the step's token (from ``now`` and the rng) and a serial number."""
        self.serial += 1
        return f"{self.token}{self.serial}"


# ------------------------------------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def _allocation(
    task_id: str,
    app: str,
    queue: str,
    user: str,
    node: str,
    amount: Mapping[str, int],
    *,
    priority: int,
    originator: bool,
    allow_preemption: bool,
    created_at: datetime,
    qos: str = "",
    job: str = "",
    pdb: str = "",
    required_node: str = "",
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": task_id,
        "app": app,
        "queue": queue,
        "user": user,
        "node": node,
        "resources": res.format_resources(amount),
        "priority": priority,
        "allow_preemption": allow_preemption,
        "originator": originator,
        "created_at": _iso(created_at),
    }
    optional = {"qos": qos, "job": job, "pdb": pdb, "required_node": required_node}
    item.update({key: value for key, value in optional.items() if value})
    return item


def _ask(
    ask_id: str,
    app: str,
    queue: str,
    user: str,
    amount: Mapping[str, int],
    *,
    priority: int,
    created_at: datetime,
    job: str = "",
    preemption_policy: str | None = None,
    required_node: str = "",
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": ask_id,
        "app": app,
        "queue": queue,
        "user": user,
        "resources": res.format_resources(amount),
        "priority": priority,
        "created_at": _iso(created_at),
    }
    if job:
        item["job"] = job
    if preemption_policy:
        item["preemption_policy"] = preemption_policy
    if required_node:
        item["required_node"] = required_node
    return item


def _rounded(amount: Mapping[str, float]) -> dict[str, int]:
    """Rounded to, and never below, ``MIN_TASK`` (10m, 32Mi); one pod."""
    result = {}
    for name, value in amount.items():
        step = MIN_TASK[name]
        result[name] = max(step, round(value / step) * step)
    result[PODS] = 1
    return result


def _halved(amount: Mapping[str, int]) -> dict[str, int]:
    """Half the CPU and memory of a task (a smaller retry when it fits nowhere)."""
    return {
        name: max(MIN_TASK[name], value // 2 // MIN_TASK[name] * MIN_TASK[name])
        if name in MIN_TASK
        else value
        for name, value in amount.items()
    }


def _priority(rng: random.Random, clusters: Sequence[tuple[int | None, int]]) -> int:
    value = _weighted(rng, clusters)
    return rng.randint(1, 999) if value is None else value


def _weighted(rng: random.Random, choices: Sequence[tuple[Any, int]]) -> Any:
    return rng.choices([c for c, _ in choices], [w for _, w in choices])[0]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _base36(number: int) -> str:
    digits = []
    while True:
        number, digit = divmod(number, 36)
        digits.append(_BASE36[digit])
        if not number:
            return "".join(reversed(digits))
