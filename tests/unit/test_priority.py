"""Priority preemption, Kubernetes style (SPEC 4.4): properties scenarios cannot express well.

Random clusters check that shuffling the input never changes the plan and that the reprieve is
minimal (no victim could be put back); small hand-built states pin the order of victims, the
node-choice sum with its 2^31 offset, per-node budget counting and the explanations' scope.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from preemption.model import (
    Allocation,
    AllocationState,
    Ask,
    AskState,
    Budget,
    ClusterState,
    Node,
    Options,
    Outcome,
    Plan,
    PolicyName,
    QoS,
    Reason,
)
from preemption.priority import PRIORITY_OFFSET, plan_priority
from tests.unit.builders import config, queue

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
START = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = config(queue("root.default"))
QOS_CHOICES: tuple[QoS | None, ...] = (None, QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT)


def alloc(
    id: str,
    node: str,
    vcore: int,
    priority: int = 0,
    *,
    pdb: str | None = None,
    qos: QoS | None = None,
    minute: int = 0,
    state: AllocationState = AllocationState.RUNNING,
) -> Allocation:
    return Allocation(
        id=id,
        app=id,
        queue="root.default",
        node=node,
        resources={"vcore": vcore},
        priority=priority,
        pdb=pdb,
        qos=qos,
        created_at=START + timedelta(minutes=minute),
        state=state,
    )


def ask(
    id: str,
    vcore: int,
    priority: int,
    node: str | None = None,
    state: AskState = AskState.PENDING,
) -> Ask:
    return Ask(
        id=id,
        app=id,
        queue="root.default",
        resources={"vcore": vcore},
        priority=priority,
        node=node,
        state=state,
    )


def cluster(
    nodes: Sequence[Node],
    allocations: Sequence[Allocation],
    asks: Sequence[Ask],
    budgets: Sequence[Budget] = (),
) -> ClusterState:
    return ClusterState(
        config=CONFIG,
        nodes=tuple(nodes),
        allocations=tuple(allocations),
        asks=tuple(asks),
        budgets=tuple(budgets),
    )


def plan(state: ClusterState, ask_id: str = "k") -> Plan:
    return plan_priority(state, ask_id, NOW, Options())


def explained(result: Plan, candidate: str) -> tuple[bool, Reason]:
    explanation = result.explanation_for(candidate)
    assert explanation is not None, candidate
    return explanation.accepted, explanation.reason


def random_cluster(rng: random.Random) -> ClusterState:
    """A small, usually full cluster with a mix of priorities, QoS classes, budgets, start times,
    a preempting pod or two and some nominated asks."""
    nodes = [
        Node(f"n{i}", {"vcore": rng.choice((8, 10, 12))}, schedulable=rng.random() > 0.1)
        for i in range(rng.randint(1, 4))
    ]
    budgets = [Budget(f"pdb{i}", rng.randint(0, 2)) for i in range(2)]
    allocations: list[Allocation] = []
    for node in nodes:
        free = node.capacity["vcore"]
        while free > 0:
            size = rng.randint(1, min(free, 5))
            free -= size
            allocations.append(
                alloc(
                    f"a{len(allocations):03d}",
                    node.name,
                    size,
                    rng.randint(0, 12),
                    pdb=rng.choice((None, "pdb0", "pdb1", "unknown")),
                    qos=rng.choice(QOS_CHOICES),
                    minute=rng.randint(0, 3),
                    state=(
                        AllocationState.PREEMPTING
                        if rng.random() < 0.05
                        else AllocationState.RUNNING
                    ),
                )
            )
    asks = [ask("k", rng.randint(1, 10), rng.randint(1, 12))]
    for i in range(rng.randint(0, 2)):
        state = rng.choice(
            (AskState.PENDING, AskState.PENDING, AskState.RESERVED, AskState.ALLOCATED)
        )
        asks.append(
            ask(f"o{i}", rng.randint(1, 4), rng.randint(0, 12), rng.choice(nodes).name, state)
        )
    return cluster(nodes, allocations, asks, budgets)


T = TypeVar("T")


def shuffled(state: ClusterState, rng: random.Random) -> ClusterState:
    def mix(items: tuple[T, ...]) -> tuple[T, ...]:
        mixed = list(items)
        rng.shuffle(mixed)
        return tuple(mixed)

    return replace(
        state,
        nodes=mix(state.nodes),
        allocations=mix(state.allocations),
        asks=mix(state.asks),
        budgets=mix(state.budgets),
    )


def room_without(
    state: ClusterState, node: str, gone: set[str], ask_id: str = "k"
) -> dict[str, int]:
    """Room on ``node`` for the ask, computed independently of the module: capacity minus live
    allocations not in ``gone`` minus other waiting (pending or reserved) asks of at least its
    priority nominated there."""
    pending = state.ask(ask_id)
    room = dict(state.nodes_by_name[node].capacity)
    for allocation in state.running:
        if allocation.node == node and allocation.id not in gone:
            room["vcore"] = room.get("vcore", 0) - allocation.resources.get("vcore", 0)
    waiting = (AskState.PENDING, AskState.RESERVED)
    for other in state.asks:
        if (
            other.id != ask_id
            and other.node == node
            and other.state in waiting
            and other.priority >= pending.priority
        ):
            room["vcore"] = room.get("vcore", 0) - other.resources.get("vcore", 0)
    return room


def fits(demand: Mapping[str, int], room: Mapping[str, int]) -> bool:
    return all(room.get(name, 0) >= value for name, value in demand.items())


# --------------------------------------------------------------------------------------------
# Properties over random clusters
# --------------------------------------------------------------------------------------------


def test_shuffling_the_input_never_changes_the_plan() -> None:
    rng = random.Random(4404)
    outcomes = set()
    for _ in range(300):
        state = random_cluster(rng)
        expected = plan(state)
        outcomes.add(expected.outcome)
        for _ in range(3):
            assert plan(shuffled(state, rng)) == expected
    # The generator exercises every outcome of the policy.
    assert outcomes == {Outcome.NOT_TRIGGERED, Outcome.COMPLETE, Outcome.DOES_NOT_HELP}


def test_reprieve_is_minimal_no_victim_could_be_put_back() -> None:
    rng = random.Random(4405)
    complete = 0
    for _ in range(400):
        state = random_cluster(rng)
        result = plan(state)
        if result.outcome != Outcome.COMPLETE:
            continue
        complete += 1
        pending = state.ask("k")
        victims = set(result.victims)
        assert result.node is not None
        by_id = {allocation.id: allocation for allocation in state.running}
        # Victims are running, on the nominated node, of strictly lower priority.
        for victim in victims:
            assert by_id[victim].node == result.node
            assert by_id[victim].priority < pending.priority
        # Without the victims the ask fits; with any single one of them back it does not.
        assert fits(pending.resources, room_without(state, result.node, victims))
        for victim in victims:
            assert not fits(pending.resources, room_without(state, result.node, victims - {victim}))
    assert complete > 50


def test_explanations_cover_every_running_allocation_and_accept_exactly_the_victims() -> None:
    rng = random.Random(4406)
    for _ in range(200):
        state = random_cluster(rng)
        result = plan(state)
        if result.outcome == Outcome.NOT_TRIGGERED:
            assert result.explanations == ()
            continue
        ids = [explanation.candidate for explanation in result.explanations]
        assert ids == sorted(allocation.id for allocation in state.running)
        accepted = {e.candidate for e in result.explanations if e.accepted}
        assert accepted == set(result.victims)


# --------------------------------------------------------------------------------------------
# Hand-built states
# --------------------------------------------------------------------------------------------


def test_victims_are_listed_budget_violating_first_then_in_importance_order() -> None:
    # Capacity 12, the ask needs all of it: everybody goes. Budget web allows one disruption:
    # w-high (priority 3) uses it, w-low (priority 1) is budget-violating and taken first.
    state = cluster(
        [Node("n1", {"vcore": 12})],
        [
            alloc("w-low", "n1", 3, 1, pdb="web"),
            alloc("w-high", "n1", 3, 3, pdb="web"),
            alloc("plain-2", "n1", 3, 2),
            alloc("plain-0", "n1", 3, 0),
        ],
        [ask("k", 12, 10)],
        [Budget("web", 1)],
    )
    result = plan(state)
    assert result.victims == ("w-low", "w-high", "plain-2", "plain-0")
    assert explained(result, "w-low") == (True, Reason.BUDGET_VIOLATION)
    assert explained(result, "w-high") == (True, Reason.VICTIM)
    assert explained(result, "plain-0") == (True, Reason.VICTIM)


def test_budgets_are_counted_afresh_on_each_node() -> None:
    # Budget web allows one disruption. Each node has one web pod: on its own node's pass neither
    # is budget-violating, so step 1 ties and the lower victim priority (n2) decides.
    state = cluster(
        [Node("n1", {"vcore": 10}), Node("n2", {"vcore": 10})],
        [alloc("w1", "n1", 10, 2, pdb="web"), alloc("w2", "n2", 10, 1, pdb="web")],
        [ask("k", 10, 10)],
        [Budget("web", 1)],
    )
    result = plan(state)
    assert (result.node, result.victims) == ("n2", ("w2",))
    assert explained(result, "w2") == (True, Reason.VICTIM)
    assert explained(result, "w1") == (False, Reason.NOT_ON_NODE)


def test_the_offset_is_kubernetes_max_int32_plus_one() -> None:
    # kube-scheduler: sumPriorities += int64(p) + int64(math.MaxInt32) + 1.
    assert PRIORITY_OFFSET == (2**31 - 1) + 1


def test_the_lowest_highest_victim_priority_decides_before_the_offset_sum() -> None:
    # Three priority-0 victims on n1, one priority-1 victim on n2: step 2 (lowest highest-victim
    # priority, 0 < 1) picks n1 before any sum is compared, in SPEC 4.4 and in kube-scheduler.
    state = cluster(
        [Node("n1", {"vcore": 9}), Node("n2", {"vcore": 9})],
        [
            alloc("z1", "n1", 3, 0),
            alloc("z2", "n1", 3, 0),
            alloc("z3", "n1", 3, 0),
            alloc("one", "n2", 9, 1),
        ],
        [ask("k", 9, 10)],
    )
    result = plan(state)
    assert (result.node, set(result.victims)) == ("n1", {"z1", "z2", "z3"})


def test_with_the_highest_victim_priority_tied_the_offset_sum_prefers_fewer_victims() -> None:
    # The same three priority-0 and one priority-1 victims, each node also losing a priority-5
    # pod: step 2 ties at 5, and the offset sums 4 * 2^31 + 5 (n1) > 2 * 2^31 + 6 (n2) pick n2.
    # The raw sums (5 < 6) picked n1.
    state = cluster(
        [Node("n1", {"vcore": 12}), Node("n2", {"vcore": 12})],
        [
            alloc("a-hi", "n1", 3, 5),
            alloc("z1", "n1", 3, 0),
            alloc("z2", "n1", 3, 0),
            alloc("z3", "n1", 3, 0),
            alloc("b-hi", "n2", 6, 5),
            alloc("one", "n2", 6, 1),
        ],
        [ask("k", 12, 10)],
    )
    result = plan(state)
    assert (result.node, set(result.victims)) == ("n2", {"b-hi", "one"})
    assert explained(result, "z1") == (False, Reason.NOT_ON_NODE)


def test_offset_sums_are_exact_at_the_ends_of_int32() -> None:
    # The ask has the highest int32 priority. n1 must lose a victim just below it and one at the
    # lowest int32 priority, n2 only the one just below: the lowest adds 0 once offset, so the
    # sums tie (2^32 - 2 each) and the fewest victims (step 4) pick n2. The raw sums picked n1.
    high, lowest = 2**31 - 2, -(2**31)
    state = cluster(
        [Node("n1", {"vcore": 10}), Node("n2", {"vcore": 10})],
        [
            alloc("a-high", "n1", 5, high),
            alloc("a-lowest", "n1", 5, lowest),
            alloc("b-high", "n2", 10, high),
        ],
        [ask("k", 10, 2**31 - 1)],
    )
    result = plan(state)
    assert (result.node, result.victims) == ("n2", ("b-high",))


def test_only_a_waiting_ask_triggers() -> None:
    # Pending and reserved asks still wait and may preempt; allocated and removed ones do not.
    nodes, running = [Node("n1", {"vcore": 10})], [alloc("low", "n1", 10, 0)]
    for state, outcome in (
        (AskState.PENDING, Outcome.COMPLETE),
        (AskState.RESERVED, Outcome.COMPLETE),
        (AskState.ALLOCATED, Outcome.NOT_TRIGGERED),
        (AskState.REMOVED, Outcome.NOT_TRIGGERED),
    ):
        result = plan(cluster(nodes, running, [ask("k", 5, 10, state=state)]))
        assert result.outcome == outcome, state


def test_a_zero_quantity_in_the_ask_never_blocks_a_fit() -> None:
    # The node is overcommitted on memory (a pod was admitted before a capacity change); the ask
    # lists memory 0, which means the same as not asking for memory (SPEC 3.1).
    state = cluster(
        [Node("n1", {"vcore": 10, "memory": 1})],
        [Allocation("big", "big", "root.default", "n1", {"vcore": 5, "memory": 2}, priority=0)],
        [Ask("k", "k", "root.default", {"vcore": 5, "memory": 0}, priority=10)],
    )
    assert plan(state).outcome == Outcome.NOT_TRIGGERED


def test_the_plan_names_the_policy_and_nominates_no_node_unless_complete() -> None:
    state = cluster([Node("n1", {"vcore": 10})], [alloc("h", "n1", 10, 50)], [ask("k", 5, 10)])
    result = plan(state)
    assert result.policy == PolicyName.PRIORITY
    assert (result.outcome, result.node, result.victims) == (Outcome.DOES_NOT_HELP, None, ())


def test_a_large_cluster_is_planned_whole() -> None:
    # 2,000 nodes x 50 allocations = 100,000 allocations, all full: every one is explained.
    # (Speed is measured by `python -m preemption.bench`, not asserted here.)
    rng = random.Random(4407)
    nodes = [Node(f"n{i:04d}", {"vcore": 100}) for i in range(2000)]
    allocations = [
        alloc(f"a{i:04d}-{j:02d}", node.name, 2, rng.randint(0, 20), minute=rng.randint(0, 60))
        for i, node in enumerate(nodes)
        for j in range(50)
    ]
    state = cluster(nodes, allocations, [ask("k", 30, 10)])
    result = plan(state)
    assert result.outcome == Outcome.COMPLETE
    assert len(result.explanations) == 100_000
