"""Required-node (DaemonSet) preemption, SPEC 4.3: what the scenario files cannot express well.

Shuffle invariance, the exact size and deviation arithmetic, the scope of the explanations, and
the judgement calls documented in ``preemption.required_node``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest

from preemption.model import (
    Allocation,
    AllocationState,
    Ask,
    AskState,
    ClusterState,
    Node,
    Options,
    Outcome,
    PolicyName,
    Reason,
)
from preemption.required_node import (
    CLASS_OPTED_OUT,
    CLASS_ORIGINATOR,
    CLASS_REGULAR,
    deviation,
    plan_required_node,
    size_on_node,
    victim_class,
)
from tests.unit.builders import GI, config, queue

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CORE = 1000  # vcore is kept in millicores


def at(minutes_before_now: int) -> datetime:
    return NOW - timedelta(minutes=minutes_before_now)


def alloc(allocation_id: str, node: str = "n1", **fields: object) -> Allocation:
    values: dict[str, object] = {"resources": {"vcore": 2 * CORE}, "created_at": at(60)}
    values.update(fields)
    return Allocation(id=allocation_id, app=allocation_id, queue="root.apps", node=node, **values)


def daemonset_ask(**fields: object) -> Ask:
    values: dict[str, object] = {
        "resources": {"vcore": 4 * CORE},
        "priority": 50,
        "required_node": "n1",
        "created_at": at(10),
    }
    values.update(fields)
    return Ask(id="kd", app="fluentd", queue="root.system", **values)


def cluster(
    allocations: list[Allocation],
    ask: Ask | None = None,
    nodes: list[Node] | None = None,
    **settings: object,
) -> ClusterState:
    return ClusterState(
        config=config(queue("root.apps"), queue("root.system"), **settings),
        nodes=tuple(nodes if nodes is not None else [Node("n1", {"vcore": 8 * CORE})]),
        allocations=tuple(allocations),
        asks=(ask or daemonset_ask(),),
    )


def reasons(state: ClusterState, options: Options | None = None) -> dict[str, Reason]:
    plan = plan_required_node(state, "kd", NOW, options or Options())
    return {explanation.candidate: explanation.reason for explanation in plan.explanations}


# --------------------------------------------------------------------------------------------
# Size and deviation arithmetic
# --------------------------------------------------------------------------------------------


def test_size_sums_shares_of_the_asks_types_exactly() -> None:
    capacity = {"vcore": 3 * CORE, "memory": 7 * GI, "pods": 110}
    demand = {"vcore": 1 * CORE, "memory": 1 * GI}
    task = {"vcore": 1 * CORE, "memory": 2 * GI, "pods": 100}
    # 1/3 + 2/7, exactly; pods are not a type of the ask and do not count.
    assert size_on_node(task, demand, capacity) == Fraction(1, 3) + Fraction(2, 7)


def test_size_ignores_a_type_the_node_has_no_capacity_of() -> None:
    demand = {"vcore": 1 * CORE, "nvidia.com/gpu": 1}
    task = {"vcore": 2 * CORE, "nvidia.com/gpu": 1}
    assert size_on_node(task, demand, {"vcore": 8 * CORE}) == Fraction(1, 4)
    assert size_on_node(task, demand, {"vcore": 8 * CORE, "nvidia.com/gpu": 0}) == Fraction(1, 4)


def test_size_of_a_task_without_the_asks_types_is_zero() -> None:
    assert size_on_node({"memory": GI}, {"vcore": CORE}, {"vcore": CORE, "memory": GI}) == 0


def test_deviation_is_the_largest_relative_difference_over_the_asks_types() -> None:
    demand = {"vcore": 4 * CORE, "memory": 8 * GI}
    # vcore: |5 - 4| / 4 = 1/4; memory: |6G - 8G| / 8G = 1/4 ... and 3/8 for 5G.
    assert deviation({"vcore": 5 * CORE, "memory": 6 * GI}, demand) == Fraction(1, 4)
    assert deviation({"vcore": 4 * CORE, "memory": 5 * GI}, demand) == Fraction(3, 8)


def test_deviation_counts_a_type_the_task_lacks_as_a_full_difference() -> None:
    assert deviation({"vcore": 4 * CORE}, {"vcore": 4 * CORE, "memory": GI}) == 1


def test_deviation_ignores_types_the_ask_does_not_request() -> None:
    assert deviation({"vcore": 4 * CORE, "pods": 50}, {"vcore": 4 * CORE}) == 0


def test_deviation_is_exact_at_the_limit() -> None:
    # 4400m against 4000m is exactly 10%, with no floating-point rounding either way.
    assert deviation({"vcore": 4400}, {"vcore": 4000}) == Fraction(10, 100)


def test_a_task_exactly_at_the_deviation_limit_is_taken() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 4400}), alloc("b", resources={"vcore": 3600})],
        nodes=[Node("n1", {"vcore": 8000})],
    )
    plan = plan_required_node(state, "kd", NOW, Options(victim_strategy=("single",)))
    assert plan.victims == ("a",)


def test_a_task_just_over_the_deviation_limit_is_not_taken() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 4401}), alloc("b", resources={"vcore": 3599})],
        nodes=[Node("n1", {"vcore": 8000})],
    )
    plan = plan_required_node(state, "kd", NOW, Options(victim_strategy=("single",)))
    assert plan.outcome == Outcome.DOES_NOT_HELP
    assert reasons(state, Options(victim_strategy=("single",)))["a"] == Reason.DEVIATION_TOO_LARGE


# --------------------------------------------------------------------------------------------
# Classes and order
# --------------------------------------------------------------------------------------------


def test_classes_are_regular_originator_then_opted_out() -> None:
    assert victim_class(alloc("r")) == CLASS_REGULAR
    assert victim_class(alloc("o", originator=True)) == CLASS_ORIGINATOR
    assert victim_class(alloc("x", allow_preemption=False)) == CLASS_OPTED_OUT
    assert victim_class(alloc("ox", originator=True, allow_preemption=False)) == CLASS_OPTED_OUT


def test_multiple_takes_victims_in_class_priority_age_size_id_order() -> None:
    allocations = [
        alloc("z-opted-out", allow_preemption=False, priority=0, created_at=at(1)),
        alloc("y-originator", originator=True, priority=0, created_at=at(1)),
        alloc("c-regular-p1", priority=1, created_at=at(1)),
        alloc("b-regular-old", priority=0, created_at=at(50)),
        alloc("d-regular-big", priority=0, created_at=at(5), resources={"vcore": 3 * CORE}),
        alloc("e-regular-small", priority=0, created_at=at(5), resources={"vcore": 1 * CORE}),
        alloc("a-regular-small", priority=0, created_at=at(5), resources={"vcore": 1 * CORE}),
    ]
    total = sum(a.resources["vcore"] for a in allocations)
    state = cluster(
        allocations,
        ask=daemonset_ask(resources={"vcore": total}),
        nodes=[Node("n1", {"vcore": total})],
    )
    plan = plan_required_node(
        state, "kd", NOW, Options(victim_strategy=("multiple",), max_victims=7)
    )
    assert plan.victims == (
        "a-regular-small",
        "e-regular-small",
        "d-regular-big",
        "b-regular-old",
        "c-regular-p1",
        "y-originator",
        "z-opted-out",
    )


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


def _random_state(rng: random.Random) -> ClusterState:
    nodes = [Node("n1", {"vcore": 64 * CORE, "memory": 256 * GI}), Node("n2", {"vcore": 8 * CORE})]
    allocations = []
    for index in range(40):
        allocations.append(
            alloc(
                f"t{index:02d}",
                node=rng.choice(["n1", "n1", "n1", "n2"]),
                resources={
                    "vcore": rng.choice([1, 2, 4]) * CORE,
                    "memory": rng.choice([0, 2, 4, 8]) * GI,
                },
                priority=rng.choice([0, 0, 10, 60]),
                originator=rng.random() < 0.2,
                allow_preemption=rng.random() > 0.2,
                required_node="n1" if rng.random() < 0.1 else None,
                created_at=at(rng.choice([1, 2, 3])),  # many equal ages: ties go to size and id
                state=AllocationState.PREEMPTING if rng.random() < 0.1 else AllocationState.RUNNING,
            )
        )
    used = sum(a.resources["vcore"] for a in allocations if a.node == "n1" and a.is_running)
    free = 64 * CORE - used
    ask = daemonset_ask(
        resources={"vcore": max(free, 0) + rng.choice([2, 4, 8]) * CORE, "memory": GI}
    )
    return cluster(allocations, ask=ask, nodes=nodes)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(
    "options",
    [
        Options(),
        Options(victim_strategy=("multiple", "single"), max_victims=3),
        Options(victim_strategy=("single",), deviation_percent=100),
    ],
    ids=["single-multiple", "multiple-single", "single"],
)
def test_shuffling_the_inputs_never_changes_the_plan(seed: int, options: Options) -> None:
    rng = random.Random(seed)
    state = _random_state(rng)
    expected = plan_required_node(state, "kd", NOW, options)
    for _ in range(5):
        shuffled = replace(
            state,
            allocations=tuple(rng.sample(state.allocations, len(state.allocations))),
            nodes=tuple(rng.sample(state.nodes, len(state.nodes))),
        )
        assert plan_required_node(shuffled, "kd", NOW, options) == expected


# --------------------------------------------------------------------------------------------
# Trigger and scope
# --------------------------------------------------------------------------------------------


def test_not_triggered_plans_have_no_node_and_no_explanations() -> None:
    state = cluster([alloc("a")])  # 6 of 8 vcores free
    plan = plan_required_node(state, "kd", NOW, Options())
    assert plan.outcome == Outcome.NOT_TRIGGERED
    assert plan.policy == PolicyName.REQUIRED_NODE
    assert (plan.victims, plan.node, plan.explanations) == ((), None, ())


def test_explanations_cover_exactly_the_live_allocations_on_the_required_node() -> None:
    state = cluster(
        [
            alloc("on-n1", resources={"vcore": 4 * CORE}),
            alloc("also-n1", resources={"vcore": 2 * CORE}),
            alloc("gone", state=AllocationState.PREEMPTING),
            alloc("elsewhere", node="n2"),
        ],
        nodes=[Node("n1", {"vcore": 8 * CORE}), Node("n2", {"vcore": 8 * CORE})],
    )
    plan = plan_required_node(state, "kd", NOW, Options())
    assert [e.candidate for e in plan.explanations] == ["also-n1", "on-n1"]
    assert [(e.candidate, e.accepted) for e in plan.explanations if e.accepted] == [("on-n1", True)]


def test_an_allocated_ask_is_not_triggered() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 8 * CORE})], ask=daemonset_ask(state=AskState.ALLOCATED)
    )
    assert plan_required_node(state, "kd", NOW, Options()).outcome == Outcome.NOT_TRIGGERED


def test_a_reserved_ask_is_still_waiting() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 8 * CORE})], ask=daemonset_ask(state=AskState.RESERVED)
    )
    assert plan_required_node(state, "kd", NOW, Options()).outcome == Outcome.COMPLETE


def test_an_ask_without_a_required_node_is_not_triggered() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 8 * CORE})], ask=daemonset_ask(required_node=None)
    )
    assert plan_required_node(state, "kd", NOW, Options()).outcome == Outcome.NOT_TRIGGERED


def test_a_zero_amount_in_the_ask_is_not_a_requested_type() -> None:
    # n1 has no GPU capacity, but "gpu: 0" asks for none: kd fits as it stands.
    state = cluster([alloc("a")], ask=daemonset_ask(resources={"vcore": CORE, "nvidia.com/gpu": 0}))
    assert plan_required_node(state, "kd", NOW, Options()).outcome == Outcome.NOT_TRIGGERED


def test_an_unschedulable_required_node_is_still_used() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 8 * CORE})],
        nodes=[Node("n1", {"vcore": 8 * CORE}, schedulable=False)],
        ask=daemonset_ask(resources={"vcore": 8 * CORE}),
    )
    plan = plan_required_node(state, "kd", NOW, Options())
    assert (plan.outcome, plan.victims, plan.node) == (Outcome.COMPLETE, ("a",), "n1")


def test_a_required_node_missing_from_the_state_does_not_help() -> None:
    state = cluster([], nodes=[])
    plan = plan_required_node(state, "kd", NOW, Options())
    assert (plan.outcome, plan.node, plan.explanations) == (Outcome.DOES_NOT_HELP, None, ())


def test_the_delay_counts_from_the_asks_creation() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 8 * CORE})],
        ask=daemonset_ask(created_at=NOW - timedelta(seconds=30)),
        daemonset_preemption_delay=31,
    )
    assert plan_required_node(state, "kd", NOW, Options()).outcome == Outcome.NOT_TRIGGERED
    later = NOW + timedelta(seconds=1)
    assert plan_required_node(state, "kd", later, Options()).outcome == Outcome.COMPLETE


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def test_an_empty_strategy_list_means_the_default_order() -> None:
    state = cluster(
        [alloc("a", resources={"vcore": 4 * CORE}), alloc("b", resources={"vcore": 4 * CORE})]
    )
    assert plan_required_node(state, "kd", NOW, Options(victim_strategy=())) == plan_required_node(
        state, "kd", NOW, Options()
    )


def test_an_unknown_strategy_is_an_error() -> None:
    state = cluster([alloc("a", resources={"vcore": 8 * CORE})])
    with pytest.raises(ValueError, match="unknown victim strategy"):
        plan_required_node(state, "kd", NOW, Options(victim_strategy=("largest",)))


def test_multiple_that_cannot_make_room_even_with_every_candidate_finds_nothing() -> None:
    state = cluster(
        [
            alloc("a", resources={"vcore": 2 * CORE}),
            alloc("hp", resources={"vcore": 6 * CORE}, priority=99),
        ]
    )
    plan = plan_required_node(state, "kd", NOW, Options(victim_strategy=("multiple",)))
    assert plan.outcome == Outcome.DOES_NOT_HELP
    assert reasons(state, Options(victim_strategy=("multiple",))) == {
        "a": Reason.TOO_MANY_VICTIMS,
        "hp": Reason.LAW6_HIGHER_PRIORITY,
    }


def test_reasons_come_from_the_last_strategy_when_none_finds_victims() -> None:
    state = cluster([alloc("a"), alloc("b"), alloc("c"), alloc("d")])  # kd needs 2 of 4 tasks
    narrow = Options(max_victims=1)
    assert set(reasons(state, narrow).values()) == {Reason.TOO_MANY_VICTIMS}
    flipped = Options(victim_strategy=("multiple", "single"), max_victims=1)
    assert set(reasons(state, flipped).values()) == {Reason.DEVIATION_TOO_LARGE}


def test_a_large_node_is_planned_whole() -> None:
    allocations = [
        alloc(f"t{i:06d}", node=f"n{i % 2000}", resources={"vcore": 100}, created_at=at(i % 600))
        for i in range(100_000)
    ]
    nodes = [Node(f"n{i}", {"vcore": 5000}) for i in range(2000)]
    state = cluster(allocations, ask=daemonset_ask(resources={"vcore": 450}), nodes=nodes)
    plan = plan_required_node(state, "kd", NOW, Options())
    assert plan.outcome == Outcome.COMPLETE
    assert len(plan.victims) == 5  # single finds nothing within 10%; multiple takes 5 x 100m
