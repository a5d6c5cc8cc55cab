"""``python -m preemption.bench``: how long the policies take to plan on large clusters.

For each case it builds a synthetic cluster at sizes n, 2n and 4n, plans once (after one warm-up
run at the smallest size), and prints the wall time and the growth factor between sizes. Growth
no worse than n log n means each doubling costs at most a little over 2x. Goal on a 2-core
machine: every case under 1 s at n. This is a measurement tool, not a test: it asserts nothing.

Cases (issue 3):
- quota: a decrease on a parent with 1,000 leaves and n = 100,000 allocations;
- inter_queue: an ask with n = 50,000 candidates on 2,000 nodes;
- required_node: a DaemonSet ask on a node with n = 1,000 tasks;
- priority: an ask over n = 2,000 nodes with 50 pods each;
- job: a 64-pod gang over n = 500 nodes.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.model import Allocation, Ask, ClusterState, Node, Options, Plan
from preemption.policies import (
    plan_inter_queue,
    plan_job,
    plan_priority,
    plan_quota_change,
    plan_required_node,
    with_new_max,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
GIB = 1024**3


@dataclass(frozen=True)
class Workload:
    """One synthetic cluster and the plan to make on it.

    ``planned_on`` is the state the plan is made on (for a quota change: the state with the new
    max, which ``preemption.explain`` must be given), ``subject`` the plan's subject (the queue,
    ask or job), ``plan`` makes the plan.
    """

    state: ClusterState
    planned_on: ClusterState
    subject: str
    plan: Callable[[], Plan]


@dataclass(frozen=True)
class Case:
    name: str
    base: int
    unit: str
    build: Callable[[int, random.Random], Workload]


def _config(
    leaves: int, *, guaranteed: bool, parent_max: dict[str, int] | None = None
) -> PartitionConfig:
    """root -> tenant (quota delay set) -> ``leaves`` leaf queues, plus an ``other`` tenant."""
    queues = [
        QueueConfig.child_of(None, "root"),
        QueueConfig.child_of(
            "root", "tenant", max=parent_max or {}, properties={"quota.preemption.delay": "60s"}
        ),
    ]
    for index in range(leaves):
        guarantee = {"vcore": 1000, "memory": 2 * GIB} if guaranteed and index % 3 == 0 else {}
        queues.append(QueueConfig.child_of("root.tenant", f"leaf{index:04d}", guaranteed=guarantee))
    queues.append(
        QueueConfig.child_of("root", "other", guaranteed={"vcore": 10_000_000, "memory": 10**15})
    )
    settings = PartitionSettings(name="bench", quota_preemption_enabled=True, miss_percent=5)
    return PartitionConfig(settings=settings, queues=tuple(queues))


def _allocation(
    rng: random.Random, index: int, queue: str, node: str, **extra: object
) -> Allocation:
    return Allocation(
        id=f"a{index:07d}",
        app=f"app{rng.randrange(5000)}",
        queue=queue,
        node=node,
        resources={"vcore": rng.choice([500, 1000, 2000]), "memory": rng.choice([1, 2, 4]) * GIB},
        priority=rng.randrange(10),
        originator=rng.random() < 0.05,
        created_at=NOW - timedelta(seconds=rng.randrange(1, 86_400)),
        **extra,  # type: ignore[arg-type]
    )


def build_quota(n: int, rng: random.Random) -> Workload:
    config = _config(1000, guaranteed=True)
    nodes = tuple(Node(f"n{i:04d}", {"vcore": 64_000, "memory": 512 * GIB}) for i in range(2000))
    leaves = [q.path for q in config.queues if q.path.startswith("root.tenant.")]
    allocations = tuple(
        _allocation(rng, i, rng.choice(leaves), rng.choice(nodes).name) for i in range(n)
    )
    state = ClusterState(config=config, nodes=nodes, allocations=allocations)
    usage = state.usage["root.tenant"]
    new_max = {kind: amount * 6 // 10 for kind, amount in usage.items()}
    return Workload(
        state,
        with_new_max(state, "root.tenant", new_max),
        "root.tenant",
        lambda: plan_quota_change(state, "root.tenant", new_max, NOW),
    )


def build_inter_queue(n: int, rng: random.Random) -> Workload:
    config = _config(50, guaranteed=False)
    names = [f"n{i:04d}" for i in range(2000)]
    other = [q.path for q in config.queues if q.path.startswith("root.tenant.")]
    allocations = tuple(_allocation(rng, i, rng.choice(other), rng.choice(names)) for i in range(n))
    # Every node exactly full, so the ask fits nowhere without preemption.
    used: dict[str, dict[str, int]] = {name: {"vcore": 0, "memory": 0} for name in names}
    for allocation in allocations:
        for kind, amount in allocation.resources.items():
            used[allocation.node][kind] += amount
    nodes = tuple(Node(name, used[name]) for name in names)
    ask = Ask("ask", "newcomer", "root.other", {"vcore": 2000, "memory": 4 * GIB}, priority=5,
              created_at=NOW - timedelta(hours=1))  # fmt: skip
    state = ClusterState(config=config, nodes=nodes, allocations=allocations, asks=(ask,))
    return Workload(state, state, "ask", lambda: plan_inter_queue(state, "ask", NOW, Options()))


def build_required_node(n: int, rng: random.Random) -> Workload:
    config = _config(20, guaranteed=False)
    capacity = {"vcore": n * 1000, "memory": n * 2 * GIB}
    nodes = (Node("target", capacity), Node("spare", capacity))
    leaves = [q.path for q in config.queues if q.path.startswith("root.tenant.")]
    allocations = tuple(
        Allocation(f"a{i:06d}", f"app{i}", rng.choice(leaves), "target",
                   {"vcore": 1000, "memory": 2 * GIB}, priority=rng.randrange(10),
                   allow_preemption=rng.random() > 0.1, originator=rng.random() < 0.05,
                   created_at=NOW - timedelta(seconds=rng.randrange(1, 86_400)))
        for i in range(n)
    )  # fmt: skip
    ask = Ask("ds", "daemonset", "root.other", {"vcore": 3500, "memory": 6 * GIB}, priority=50,
              required_node="target", created_at=NOW - timedelta(minutes=5))  # fmt: skip
    state = ClusterState(config=config, nodes=nodes, allocations=allocations, asks=(ask,))
    return Workload(state, state, "ds", lambda: plan_required_node(state, "ds", NOW, Options()))


def build_priority(n: int, rng: random.Random) -> Workload:
    config = _config(50, guaranteed=False)
    nodes = tuple(Node(f"n{i:05d}", {"vcore": 50_000, "memory": 100 * GIB}) for i in range(n))
    leaves = [q.path for q in config.queues if q.path.startswith("root.tenant.")]
    allocations = tuple(
        Allocation(f"p{i:05d}-{j:02d}", f"app{rng.randrange(5000)}", rng.choice(leaves), node.name,
                   {"vcore": 1000, "memory": 2 * GIB}, priority=rng.randrange(20),
                   created_at=NOW - timedelta(seconds=rng.randrange(1, 86_400)))
        for i, node in enumerate(nodes) for j in range(50)
    )  # fmt: skip
    ask = Ask("urgent", "urgent", "root.other", {"vcore": 3000, "memory": 6 * GIB}, priority=10,
              created_at=NOW - timedelta(minutes=1))  # fmt: skip
    state = ClusterState(config=config, nodes=nodes, allocations=allocations, asks=(ask,))
    return Workload(state, state, "urgent", lambda: plan_priority(state, "urgent", NOW, Options()))


def build_job(n: int, rng: random.Random) -> Workload:
    config = _config(10, guaranteed=False)
    nodes = tuple(Node(f"n{i:04d}", {"nvidia.com/gpu": 8, "vcore": 64_000}) for i in range(n))
    leaves = [q.path for q in config.queues if q.path.startswith("root.tenant.")]
    allocations = tuple(
        Allocation(f"g{i:04d}-{j}", f"app{rng.randrange(2000)}", rng.choice(leaves), node.name,
                   {"nvidia.com/gpu": 2, "vcore": 8000}, priority=rng.randrange(5),
                   created_at=NOW - timedelta(seconds=rng.randrange(1, 86_400)))
        for i, node in enumerate(nodes) for j in range(4)
    )  # fmt: skip
    asks = tuple(
        Ask(f"k{i:02d}", "trainer", "root.other", {"nvidia.com/gpu": 4, "vcore": 16_000},
            priority=10, job="gang", created_at=NOW - timedelta(minutes=2))
        for i in range(64)
    )  # fmt: skip
    state = ClusterState(config=config, nodes=nodes, allocations=allocations, asks=asks)
    return Workload(state, state, "gang", lambda: plan_job(state, "gang", NOW, Options()))


CASES = (
    Case("quota (parent with 1,000 leaves)", 100_000, "allocations", build_quota),
    Case("inter_queue (2,000 nodes)", 50_000, "candidates", build_inter_queue),
    Case("required_node (one node)", 1_000, "tasks", build_required_node),
    Case("priority (50 pods per node)", 2_000, "nodes", build_priority),
    Case("job (64-pod gang)", 500, "nodes", build_job),
)


def measure(case: Case, n: int, seed: int) -> tuple[float, Plan]:
    workload = case.build(n, random.Random(seed))  # noqa: S311 - synthetic data, not secrets
    started = time.perf_counter()
    plan = workload.plan()
    return time.perf_counter() - started, plan


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m preemption.bench", description=__doc__)
    parser.add_argument("--only", help="run only cases whose name contains this text")
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    print(f"{'case':36} {'size':>16} {'seconds':>9} {'growth':>7}  outcome, victims")
    for case in CASES:
        if arguments.only and arguments.only not in case.name:
            continue
        measure(case, max(case.base // 10, 1), arguments.seed)  # warm-up: imports, caches
        previous = None
        for factor in (1, 2, 4):
            n = case.base * factor
            seconds, plan = measure(case, n, arguments.seed)
            growth = f"{seconds / previous:6.2f}x" if previous else "      -"
            previous = seconds
            print(
                f"{case.name:36} {n:>10,} {case.unit:>5} {seconds:9.3f} {growth}  "
                f"{plan.outcome}, {len(plan.victims)}"
            )


if __name__ == "__main__":
    main()
