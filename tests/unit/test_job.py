"""Job-level (gang) preemption (SPEC 4.5): what the scenario files cannot express well.

The scenarios in tests/scenarios/job pin single decisions; here: invariance under shuffled
inputs, agreement with a naive reading of SPEC 4.5 on many random clusters (the engine's
max-trees and shortcuts must never change a plan), the placement and admission functions on
their own, and the plan's shape (explanations, victim order, nominations).
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from preemption.config import QueueConfig
from preemption.eligibility import may_use
from preemption.job import JobUsage, admits, first_fit, placement_order, plan_job
from preemption.model import (
    Allocation,
    AllocationState,
    Ask,
    AskState,
    ClusterState,
    Node,
    NodeSelectorRequirement,
    Options,
    Outcome,
    Plan,
    PolicyName,
    PreemptionPolicy,
    Reason,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from tests.unit.builders import config, queue

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
GPU = "nvidia.com/gpu"


def alloc(
    id: str,
    node: str,
    gpus: int,
    *,
    queue: str = "root.batch",
    priority: int = 0,
    minutes_ago: int = 60,
    **extra: object,
) -> Allocation:
    return Allocation(
        id=id,
        app=id,
        queue=queue,
        node=node,
        resources={GPU: gpus},
        priority=priority,
        created_at=NOW - timedelta(minutes=minutes_ago),
        **extra,  # type: ignore[arg-type]
    )


def ask(id: str, gpus: int, *, queue: str = "root.ml", priority: int = 5, **extra: object) -> Ask:
    return Ask(
        id=id,
        app="train",
        queue=queue,
        resources={GPU: gpus},
        priority=priority,
        job="j1",
        **extra,  # type: ignore[arg-type]
    )


def state(
    nodes: list[Node],
    allocations: list[Allocation],
    asks: list[Ask],
    *queues: QueueConfig,
) -> ClusterState:
    tree = queues or (queue("root.ml"), queue("root.batch"))
    return ClusterState(
        config=config(*tree), nodes=tuple(nodes), allocations=tuple(allocations), asks=tuple(asks)
    )


def gpu_nodes(*capacities: int) -> list[Node]:
    return [Node(f"n{index + 1}", {GPU: capacity}) for index, capacity in enumerate(capacities)]


def plan(cluster: ClusterState, options: Options | None = None) -> Plan:
    return plan_job(cluster, "j1", NOW, options or Options())


# --------------------------------------------------------------------------------------------
# A naive reading of SPEC 4.5, to compare the engine against
# --------------------------------------------------------------------------------------------


def naive_plan(cluster: ClusterState, job: str) -> tuple[Outcome, tuple[str, ...], dict[str, str]]:
    """SPEC 4.5 read literally: linear first fit, re-run from scratch for every candidate,
    asking ``may_use`` (SPEC 3.3) of every ask and node each time."""
    asks = sorted(
        (
            a
            for a in cluster.asks
            if a.job == job and a.state in (AskState.PENDING, AskState.RESERVED)
        ),
        key=lambda a: a.id,
    )
    if not asks or any(a.preemption_policy == PreemptionPolicy.NEVER for a in asks):
        return Outcome.NOT_TRIGGERED, (), {}
    home = cluster.hierarchy.queues[asks[0].queue]
    priority = max(a.priority for a in asks)
    preemptible = all(a.allow_preemption for a in asks)
    request: dict[str, int] = {}
    for a in asks:
        for name, value in a.resources.items():
            request[name] = request.get(name, 0) + value
    request = {name: value for name, value in request.items() if value > 0}
    running = [a for a in cluster.allocations if a.state == AllocationState.RUNNING]
    ineligible = {n.name for n in cluster.nodes if not any(may_use(a, n) for a in asks)}
    candidates = sorted(
        (
            a
            for a in running
            if a.allow_preemption and a.priority < priority and a.node not in ineligible
        ),
        key=lambda a: (-a.priority, a.created_at, a.id),
    )
    nodes = sorted((n for n in cluster.nodes if n.schedulable), key=lambda n: n.name)
    capacity: dict[str, int] = {}
    for node in nodes:
        for name, value in node.capacity.items():
            capacity[name] = capacity.get(name, 0) + value

    def size(a: Ask) -> Fraction | None:
        total = Fraction(0)
        for name, value in a.resources.items():
            if value > 0:
                if capacity.get(name, 0) == 0:
                    return None
                total += Fraction(value, capacity[name])
        return total

    sizes = [size(a) for a in asks]
    order = (
        None
        if any(s is None for s in sizes)
        else [a for _, a in sorted(zip(sizes, asks, strict=True), key=lambda p: (-p[0], p[1].id))]
    )

    def place(removed: set[str]) -> dict[str, str] | None:
        if order is None:
            return None
        free = {n.name: dict(n.capacity) for n in nodes}
        for a in running:
            if a.id not in removed and a.node in free:
                for name, value in a.resources.items():
                    free[a.node][name] = free[a.node].get(name, 0) - value
        result = {}
        for a in order:
            for node in nodes:
                room = free[node.name]
                fits = all(room.get(t, 0) >= v for t, v in a.resources.items() if v > 0)
                if fits and may_use(a, node):
                    for t, v in a.resources.items():
                        room[t] = room.get(t, 0) - v
                    result[a.id] = node.name
                    break
            else:
                return None
        return result

    def admitted(removed: set[str]) -> bool:
        held: dict[str, int] = {}
        shared: dict[str, int] = {}
        for a in running:
            if a.id in removed or not cluster.hierarchy.is_within(a.queue, home.path):
                continue
            part = shared if a.allow_preemption else held
            for name, value in a.resources.items():
                part[name] = part.get(name, 0) + value
        for name, amount in request.items():
            low, high = home.guaranteed.get(name, 0), home.max.get(name)
            h, s = held.get(name, 0), shared.get(name, 0)
            if preemptible:
                if high is not None and min(low, h) + s + amount > high:
                    return False
            elif h + amount > low or (high is not None and h + s + amount > high):
                return False
        return True

    removed = {a.id for a in candidates}
    if place(set()) is not None or not admitted(removed):
        return Outcome.NOT_TRIGGERED, (), {}
    if place(removed) is None:
        return Outcome.DOES_NOT_HELP, (), {}
    victims = []
    for candidate in candidates:
        removed.discard(candidate.id)
        if place(removed) is None or not admitted(removed):
            removed.add(candidate.id)
            victims.append(candidate.id)
    placement = place(removed)
    assert placement is not None
    return Outcome.COMPLETE, tuple(victims), placement


def random_cluster(rng: random.Random) -> ClusterState:
    """A small random cluster with a job j1 in root.ml or its leaf root.ml.a."""
    home = rng.choice(["root.ml", "root.ml.a"])
    low = {GPU: rng.randrange(0, 8)} if rng.random() < 0.6 else {}
    high = {GPU: low.get(GPU, 0) + rng.randrange(0, 16)} if rng.random() < 0.6 else {}
    limits = {home: {"guaranteed": low, "max": high}}
    queues = [
        queue(path, **limits.get(path, {}))
        for path in ("root.ml", "root.ml.a", "root.ml.b", "root.batch")
    ]
    nodes = [
        Node(
            f"n{index}",
            {GPU: rng.randrange(0, 9), "vcore": rng.choice([4000, 8000])},
            schedulable=rng.random() < 0.85,
        )
        for index in rng.sample(range(20), rng.randrange(1, 6))
    ]
    allocations = [
        Allocation(
            id=f"x{index:02d}",
            app=f"app{index}",
            queue=rng.choice(["root.ml.a", "root.ml.b", "root.batch", "root.batch"]),
            node=rng.choice(nodes).name,
            resources={GPU: rng.randrange(0, 5), "vcore": rng.choice([0, 1000, 2000])},
            priority=rng.randrange(0, 8),
            allow_preemption=rng.random() < 0.8,
            created_at=NOW - timedelta(minutes=rng.randrange(0, 5)),
            state=AllocationState.PREEMPTING if rng.random() < 0.1 else AllocationState.RUNNING,
        )
        for index in range(rng.randrange(0, 16))
    ]
    asks = [
        Ask(
            id=f"k{index}",
            app="train",
            queue=home,
            resources={GPU: rng.randrange(0, 5), "vcore": rng.choice([0, 500, 1000])},
            priority=rng.randrange(3, 7),
            allow_preemption=rng.random() < 0.85,
            preemption_policy=(
                PreemptionPolicy.NEVER
                if rng.random() < 0.05
                else PreemptionPolicy.PREEMPT_LOWER_PRIORITY
            ),
            job="j1",
            state=rng.choice([AskState.PENDING] * 6 + [AskState.RESERVED, AskState.ALLOCATED]),
        )
        for index in range(rng.randrange(1, 5))
    ]
    return ClusterState(
        config=config(*queues),
        nodes=tuple(nodes),
        allocations=tuple(allocations),
        asks=tuple(asks),
    )


# --------------------------------------------------------------------------------------------
# Whole plans
# --------------------------------------------------------------------------------------------


def test_plans_agree_with_a_naive_reading_of_the_spec_on_random_clusters() -> None:
    outcomes: set[Outcome] = set()
    for seed in range(600):
        cluster = random_cluster(random.Random(seed))
        got = plan(cluster)
        want = naive_plan(cluster, "j1")
        assert (got.outcome, got.victims, dict(got.nominations)) == want, f"seed {seed}"
        outcomes.add(got.outcome)
    assert outcomes == {Outcome.NOT_TRIGGERED, Outcome.DOES_NOT_HELP, Outcome.COMPLETE}


def crowded_cluster(rng: random.Random) -> ClusterState:
    """Many equal asks on a crowded cluster, so that putting a task back moves asks around."""
    nodes = [Node(f"n{index:02d}", {GPU: 8, "vcore": 16000}) for index in range(25)]
    allocations = [
        Allocation(
            id=f"x{index:03d}",
            app=f"app{index}",
            queue=rng.choice(["root.ml", "root.batch"]),
            node=rng.choice(nodes).name,
            resources={GPU: rng.randrange(0, 3), "vcore": rng.choice([500, 1000, 2000])},
            priority=rng.randrange(0, 6),
            created_at=NOW - timedelta(minutes=rng.randrange(0, 50)),
        )
        for index in range(200)
    ]
    asks = [
        Ask(
            f"k{index:02d}",
            "train",
            "root.ml",
            {GPU: rng.choice([2, 4]), "vcore": 4000},
            5,
            job="j1",
        )
        for index in range(rng.randrange(8, 20))
    ]
    limits = {"max": {GPU: rng.randrange(40, 120)}} if rng.random() < 0.5 else {}
    return state(nodes, allocations, asks, queue("root.ml", **limits), queue("root.batch"))


def test_plans_agree_with_a_naive_reading_of_the_spec_on_crowded_clusters() -> None:
    moved = 0
    for seed in range(60):
        cluster = crowded_cluster(random.Random(seed))
        got = plan(cluster)
        want = naive_plan(cluster, "j1")
        assert (got.outcome, got.victims, dict(got.nominations)) == want, f"seed {seed}"
        moved += got.outcome == Outcome.COMPLETE
    assert moved > 30


def mixed_gang_cluster(rng: random.Random) -> ClusterState:
    """A crowded cluster and a gang whose asks come in a few shapes on two types, some of them
    repeated many times: placement runs of equal asks, some of which share nodes, so that
    putting a task back moves asks of one run and then of the runs after it."""
    nodes = [
        Node(
            f"n{index:02d}",
            {GPU: rng.choice([4, 8, 8, 16]), "vcore": rng.choice([16000, 32000])},
            schedulable=rng.random() < 0.95,
        )
        for index in range(rng.choice([6, 20, 40]))
    ]
    allocations = []
    for node in nodes:
        used = 0
        while used < node.capacity[GPU] - rng.choice([0, 0, 1]):
            gpus = rng.choice([1, 2, 2, 4])
            allocations.append(
                Allocation(
                    id=f"x{len(allocations):03d}",
                    app=f"app{len(allocations)}",
                    queue=rng.choice(["root.ml", "root.batch", "root.batch"]),
                    node=node.name,
                    resources={GPU: gpus, "vcore": rng.choice([0, 1000, 4000])},
                    priority=rng.randrange(0, 6),
                    allow_preemption=rng.random() < 0.95,
                    created_at=NOW - timedelta(minutes=rng.randrange(0, 50)),
                )
            )
            used += gpus
    shapes = [
        {GPU: rng.choice([0, 1, 2, 4]), "vcore": rng.choice([0, 1000, 8000])}
        for _ in range(rng.choice([1, 2, 3]))
    ]
    asks = [
        Ask(f"k{index:02d}", "train", "root.ml", rng.choice(shapes), 6, job="j1")
        for index in range(rng.randrange(2, 30))
    ]
    limits = {"max": {GPU: rng.randrange(60, 200)}} if rng.random() < 0.3 else {}
    return state(nodes, allocations, asks, queue("root.ml", **limits), queue("root.batch"))


def test_plans_agree_with_a_naive_reading_of_the_spec_for_gangs_of_mixed_shapes() -> None:
    complete = 0
    for seed in range(150):
        cluster = mixed_gang_cluster(random.Random(seed))
        got = plan(cluster)
        want = naive_plan(cluster, "j1")
        assert (got.outcome, got.victims, dict(got.nominations)) == want, f"seed {seed}"
        complete += got.outcome == Outcome.COMPLETE and len(got.victims) > 3
    assert complete > 40


def constrained_gang_cluster(rng: random.Random) -> ClusterState:
    """A mixed gang on nodes with a few labels and taints, its asks with selectors, affinity
    and tolerations drawn from a few templates: many nodes share a shape and many asks a
    template (what ``usable_nodes`` answers once), some asks may not use every node."""
    cluster = mixed_gang_cluster(rng)
    zones, taint = ["a", "b"], Taint("gpu", TaintEffect.NO_SCHEDULE, "true")
    nodes = tuple(
        replace(
            node,
            labels={
                "zone": rng.choice(zones),
                **({"rank": str(rng.randrange(-2, 9))} if rng.random() < 0.7 else {}),
            },
            taints=(taint,) if rng.random() < 0.3 else (),
        )
        for node in cluster.nodes
    )
    templates: list[dict[str, object]] = [
        {},
        {"node_selector": {"zone": rng.choice(zones)}},
        {"tolerations": (Toleration("gpu", TolerationOperator.EXISTS),)},
        {
            "node_affinity": (
                (NodeSelectorRequirement("rank", SelectorOperator.GT, (str(rng.randrange(5)),)),),
                (NodeSelectorRequirement("zone", SelectorOperator.NOT_IN, ("a",)),),
            ),
            "tolerations": (Toleration(operator=TolerationOperator.EXISTS),),
        },
    ]
    chosen = rng.sample(templates, rng.choice([1, 2]))
    asks = tuple(replace(a, **rng.choice(chosen)) for a in cluster.asks)  # type: ignore[arg-type]
    return replace(cluster, nodes=nodes, asks=asks)


def test_plans_agree_with_a_naive_reading_when_asks_may_not_use_every_node() -> None:
    constrained = ineligible = 0
    for seed in range(150):
        cluster = constrained_gang_cluster(random.Random(seed))
        got = plan(cluster)
        want = naive_plan(cluster, "j1")
        assert (got.outcome, got.victims, dict(got.nominations)) == want, f"seed {seed}"
        limited = any(not may_use(a, n) for a in cluster.asks for n in cluster.nodes)
        constrained += got.outcome == Outcome.COMPLETE and bool(got.victims) and limited
        ineligible += any(e.reason == Reason.NODE_INELIGIBLE for e in got.explanations)
    assert constrained > 20 and ineligible > 5, (constrained, ineligible)


def test_shuffling_the_inputs_never_changes_the_plan() -> None:
    for seed in range(60):
        rng = random.Random(seed)
        cluster = random_cluster(rng)
        expected = plan(cluster).to_json()
        for _ in range(5):
            shuffled = replace(
                cluster,
                nodes=tuple(rng.sample(cluster.nodes, len(cluster.nodes))),
                allocations=tuple(rng.sample(cluster.allocations, len(cluster.allocations))),
                asks=tuple(rng.sample(cluster.asks, len(cluster.asks))),
            )
            assert plan(shuffled).to_json() == expected, f"seed {seed}"


def test_explanations_cover_every_running_allocation_in_the_cluster() -> None:
    cluster = state(
        gpu_nodes(4, 4),
        [
            alloc("low", "n1", 4),
            alloc("elsewhere", "n2", 2),
            alloc("mine", "n2", 2, queue="root.ml", priority=9),
            alloc("gone", "n2", 2, state=AllocationState.PREEMPTING),
        ],
        [ask("k1", 4)],
    )
    result = plan(cluster)
    assert result.outcome == Outcome.COMPLETE
    assert [(e.candidate, e.accepted, e.reason) for e in result.explanations] == [
        ("elsewhere", False, Reason.NOT_NEEDED_AFTER_REPRIEVE),
        ("low", True, Reason.VICTIM),
        ("mine", False, Reason.LAW6_HIGHER_PRIORITY),
    ]


def test_a_plan_that_does_not_help_accepts_nobody() -> None:
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 4)], [ask("k1", 8), ask("k2", 8)])
    result = plan(cluster)
    assert result.outcome == Outcome.DOES_NOT_HELP
    assert result.victims == ()
    assert result.nominations == {}
    assert [(e.candidate, e.accepted, e.reason) for e in result.explanations] == [
        ("low", False, Reason.VICTIM)
    ]


def test_a_plan_that_is_not_triggered_has_no_explanations() -> None:
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 4)], [ask("k1", 4)])
    result = plan(cluster)
    assert result.outcome == Outcome.NOT_TRIGGERED
    assert result.explanations == ()


def test_a_never_ask_keeps_the_whole_job_from_preempting() -> None:
    # Removing low would place both asks; k2 may not preempt, so nobody is preempted for the
    # gang, and the plan is a bare not_triggered (no explanations, SPEC 4.5 changed 2026-11-24).
    job = [ask("k1", 4), ask("k2", 4, preemption_policy=PreemptionPolicy.NEVER)]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], job)
    assert plan(cluster) == Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)


def test_a_never_ask_no_longer_waiting_is_not_part_of_the_job() -> None:
    # k0 (Never) is already allocated: J is k1 alone, which may preempt.
    job = [
        ask("k0", 4, preemption_policy=PreemptionPolicy.NEVER, state=AskState.ALLOCATED),
        ask("k1", 4, preemption_policy=PreemptionPolicy.PREEMPT_LOWER_PRIORITY),
    ]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], job)
    result = plan(cluster)
    assert (result.outcome, result.victims) == (Outcome.COMPLETE, ("low",))


def test_the_random_clusters_include_jobs_with_a_never_ask() -> None:
    # The agreement test above covers the Never rule only if some random jobs have one.
    never = 0
    for seed in range(600):
        cluster = random_cluster(random.Random(seed))
        waiting = [a for a in cluster.asks if a.state in (AskState.PENDING, AskState.RESERVED)]
        never += any(a.preemption_policy == PreemptionPolicy.NEVER for a in waiting)
    assert never > 20


def test_victims_are_listed_most_important_first() -> None:
    cluster = state(
        gpu_nodes(8),
        [
            alloc("old", "n1", 2, minutes_ago=90),
            alloc("young", "n1", 2, minutes_ago=10),
            alloc("important", "n1", 2, priority=3),
            alloc("b-same", "n1", 2, minutes_ago=60),
        ],
        [ask("k1", 8)],
    )
    assert plan(cluster).victims == ("important", "old", "b-same", "young")


def test_soft_eviction_does_not_change_the_plan() -> None:
    cluster = state(gpu_nodes(8, 8), [alloc("a", "n1", 8), alloc("b", "n2", 4)], [ask("k1", 8)])
    assert plan(cluster, Options(soft_eviction=True)) == plan(cluster)


def test_the_job_priority_is_the_highest_of_its_asks() -> None:
    job = [ask("k1", 4, priority=3), ask("k2", 4, priority=6)]
    cluster = state(gpu_nodes(8), [alloc("mid", "n1", 8, priority=5)], job)
    result = plan(cluster)
    assert result.victims == ("mid",)


def test_only_waiting_asks_belong_to_the_job() -> None:
    job = [
        ask("k1", 4),
        ask("done", 8, state=AskState.ALLOCATED),
        ask("gone", 8, state=AskState.REMOVED),
    ]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 4)], job)
    assert plan(cluster).outcome == Outcome.NOT_TRIGGERED


def test_a_reserved_ask_still_waits_for_its_node() -> None:
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], [ask("k1", 4, state=AskState.RESERVED)])
    assert plan(cluster).victims == ("low",)


def test_a_job_with_nothing_left_to_place_is_not_triggered() -> None:
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], [ask("k1", 4, state=AskState.ALLOCATED)])
    assert plan(cluster) == Plan(plan(cluster).policy, Outcome.NOT_TRIGGERED)


def test_a_job_spanning_queues_is_admitted_in_its_first_asks_queue() -> None:
    queues = (
        queue("root.ml", max={GPU: 4}),
        queue("root.other", max={GPU: 100}),
        queue("root.batch"),
    )
    # k1 (first by id) is in root.ml, whose max 4 refuses the job's 8 GPUs ...
    spanning = [ask("k1", 4, queue="root.ml"), ask("k2", 4, queue="root.other")]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], spanning, *queues)
    assert plan(cluster).outcome == Outcome.NOT_TRIGGERED
    # ... and with the queues swapped, root.other admits it.
    swapped = [ask("k1", 4, queue="root.other"), ask("k2", 4, queue="root.ml")]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], swapped, *queues)
    assert plan(cluster).victims == ("low",)


def test_a_zero_amount_in_an_ask_requests_nothing() -> None:
    # No node has vcore and the queue guarantees none: "vcore: 0" must not make the job
    # unplaceable nor fail the non-preemptible min check.
    queues = (queue("root.ml", guaranteed={GPU: 8}), queue("root.batch"))
    job = [replace(ask("k1", 8, allow_preemption=False), resources={GPU: 8, "vcore": 0})]
    cluster = state(gpu_nodes(8), [alloc("low", "n1", 8)], job, *queues)
    assert plan(cluster).victims == ("low",)


def test_a_candidate_on_an_unschedulable_node_is_never_needed_for_room() -> None:
    nodes = [Node("n1", {GPU: 8}), Node("n2", {GPU: 8}, schedulable=False)]
    cluster = state(nodes, [alloc("low", "n1", 8), alloc("cordoned", "n2", 8)], [ask("k1", 8)])
    result = plan(cluster)
    assert result.victims == ("low",)
    assert result.explanation_for("cordoned") is not None
    assert result.explanation_for("cordoned").reason == Reason.NOT_NEEDED_AFTER_REPRIEVE  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------------------------


def test_placement_order_is_largest_sum_of_shares_first_then_id() -> None:
    nodes = [Node("n1", {"vcore": 8000, "memory": 16})]
    asks = [
        Ask("c", "app", "root.ml", {"vcore": 2000, "memory": 4}),  # 1/4 + 1/4 = 1/2
        Ask("a", "app", "root.ml", {"vcore": 4000}),  # 1/2
        Ask("b", "app", "root.ml", {"memory": 12}),  # 3/4
        Ask("d", "app", "root.ml", {}),  # 0
    ]
    order = placement_order(asks, nodes)
    assert order is not None
    assert [a.id for a in order] == ["b", "a", "c", "d"]


def test_placement_order_counts_only_schedulable_capacity() -> None:
    nodes = [
        Node("n1", {"vcore": 8000, "memory": 16}),
        Node("n2", {"memory": 1000}, schedulable=False),
    ]
    asks = [Ask("a", "app", "root.ml", {"vcore": 2000}), Ask("b", "app", "root.ml", {"memory": 8})]
    order = placement_order(asks, nodes)
    assert order is not None
    assert [a.id for a in order] == ["b", "a"]


def test_a_type_without_capacity_makes_the_job_unplaceable() -> None:
    nodes = [Node("n1", {"vcore": 8000}), Node("n2", {GPU: 8}, schedulable=False)]
    assert placement_order([Ask("a", "app", "root.ml", {GPU: 1})], nodes) is None
    assert placement_order([Ask("a", "app", "root.ml", {GPU: 0, "vcore": 1})], nodes) is not None


def test_first_fit_takes_the_first_node_by_name_with_room() -> None:
    nodes = [Node("n9", {GPU: 8}), Node("n10", {GPU: 4}), Node("n2", {GPU: 8})]
    running = [alloc("x", "n2", 6)]
    asks = [ask("k1", 4), ask("k2", 4), ask("k3", 4)]
    # String order: n10, n2, n9. n10 holds one ask, n2 has 2 free, n9 holds two.
    assert first_fit(asks, nodes, running) == {"k1": "n10", "k2": "n9", "k3": "n9"}


def test_first_fit_is_all_or_nothing() -> None:
    nodes = gpu_nodes(8, 4)
    assert first_fit([ask("k1", 8), ask("k2", 4)], nodes, []) == {"k1": "n1", "k2": "n2"}
    assert first_fit([ask("k1", 8), ask("k2", 8)], nodes, []) is None


def test_first_fit_checks_every_requested_type() -> None:
    nodes = [Node("n1", {GPU: 8, "vcore": 1000}), Node("n2", {GPU: 8, "vcore": 8000})]
    big_cpu = Ask("k1", "app", "root.ml", {GPU: 1, "vcore": 2000})
    assert first_fit([big_cpu], nodes, []) == {"k1": "n2"}


def test_first_fit_skips_unschedulable_nodes() -> None:
    nodes = [Node("a", {GPU: 8}, schedulable=False), Node("b", {GPU: 8})]
    assert first_fit([ask("k1", 8)], nodes, []) == {"k1": "b"}


def test_first_fit_on_many_nodes_matches_a_linear_scan() -> None:
    rng = random.Random(7)
    nodes = [Node(f"n{i:03d}", {GPU: rng.randrange(0, 9), "vcore": 8000}) for i in range(300)]
    running = [alloc(f"x{i}", rng.choice(nodes).name, rng.randrange(1, 4)) for i in range(400)]
    asks = [ask(f"k{i:02d}", rng.randrange(1, 6)) for i in range(40)]
    order = placement_order(asks, nodes)
    assert order is not None
    free = {n.name: n.capacity[GPU] for n in nodes}
    for a in running:
        free[a.node] -= a.resources[GPU]
    expected = {}
    for a in order:
        name = next(n for n in sorted(free) if free[n] >= a.resources[GPU])
        free[name] -= a.resources[GPU]
        expected[a.id] = name
    assert first_fit(order, nodes, running) == expected


# --------------------------------------------------------------------------------------------
# Admission
# --------------------------------------------------------------------------------------------


def usage(nonpreemptible: int, preemptible: int) -> JobUsage:
    return JobUsage({GPU: nonpreemptible}, {GPU: preemptible})


def test_preemptible_admission_holds_only_the_nonpreemptible_usage_within_min() -> None:
    # min(4, 6) + 2 + 4 = 10
    assert admits({GPU: 4}, {GPU: 4}, {GPU: 10}, True, usage(6, 2))
    assert not admits({GPU: 4}, {GPU: 4}, {GPU: 9}, True, usage(6, 2))
    # min(8, 1) + 2 + 4 = 7
    assert admits({GPU: 4}, {GPU: 8}, {GPU: 7}, True, usage(1, 2))
    assert not admits({GPU: 4}, {GPU: 8}, {GPU: 6}, True, usage(1, 2))


def test_nonpreemptible_admission_needs_room_in_min_and_in_max() -> None:
    assert admits({GPU: 4}, {GPU: 8}, {GPU: 10}, False, usage(4, 2))  # 8 <= 8, 10 <= 10
    assert not admits({GPU: 4}, {GPU: 7}, {GPU: 12}, False, usage(4, 2))  # 8 > 7
    assert not admits({GPU: 4}, {GPU: 8}, {GPU: 9}, False, usage(4, 2))  # 10 > 9


def test_admission_treats_a_missing_min_as_zero_and_a_missing_max_as_unlimited() -> None:
    assert admits({GPU: 100}, {}, {}, True, usage(50, 50))
    assert not admits({GPU: 1}, {}, {}, False, usage(0, 0))
    assert admits({GPU: 4}, {GPU: 4}, {}, False, usage(0, 100))
    # Only the request's types are checked: a limit on another type does not matter.
    assert admits({GPU: 4}, {}, {"vcore": 0}, True, usage(0, 0))


def test_admission_checks_every_requested_type() -> None:
    request = {GPU: 2, "vcore": 2000}
    within = JobUsage({}, {GPU: 0, "vcore": 7000})
    assert admits(request, {}, {GPU: 8, "vcore": 9000}, True, within)
    assert not admits(request, {}, {GPU: 8, "vcore": 8000}, True, within)
