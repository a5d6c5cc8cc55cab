"""Building a demo cluster: ``initial_cluster``, one ingest body for a whole cluster.

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

The same inputs (queue config, seed, ``now``) always give the same body. Ids embed a token
derived from ``now`` so that a rebuild never reuses the id of an allocation that already has an
eviction order (orders are unique per allocation id and outlive the allocation).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from preemption import resources as res
from preemption.config import ROOT, PartitionConfig
from scheduler_admin.demo_cluster.items import (
    NEW_ASK_MARK,
    PRIORITIES_FENCED,
    PRIORITIES_OTHER,
    QOS_FENCED,
    QOS_OTHER,
    USERS,
    allocation_item,
    ask_item,
    base36,
    draw_priority,
    draw_weighted,
)
from scheduler_admin.demo_cluster.layout import (
    GI,
    GPU,
    MEMORY,
    MI,
    PODS,
    VCORE,
    Layout,
    Placer,
    SimulatorError,
)

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
#: How far back tasks were created.
MAX_AGE = timedelta(hours=12)


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
    token = base36(int(now.timestamp()) % 36**6)

    node_list, capacity = _nodes(layout, nodes, rng)
    cpu_nodes = [n for n in node_list if not capacity[n].get(GPU)]
    gpu_nodes = [n for n in node_list if capacity[n].get(GPU)]
    placer = Placer(layout, capacity)
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
                allocation_item(
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
                allocation_item(
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
        priority=draw_priority(rng, PRIORITIES_FENCED if fenced else PRIORITIES_OTHER),
        qos=draw_weighted(rng, QOS_FENCED if fenced else QOS_OTHER),
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
            ask_item(
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
            priority, user = draw_priority(rng, PRIORITIES_OTHER), rng.choice(USERS)
        if rng.random() < 0.3:
            priority = 1000
        amount[PODS] = 1
        asks.append(
            ask_item(
                f"{app_id}{NEW_ASK_MARK}{index}", app_id, leaf, user, amount, priority=priority,
                created_at=now - timedelta(seconds=rng.randint(10, 900)),
                preemption_policy="Never" if rng.random() < 0.1 else None,
            )
        )  # fmt: skip
    return asks


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
