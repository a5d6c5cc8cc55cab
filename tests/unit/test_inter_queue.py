"""Inter-queue preemption (SPEC 4.2): what the scenario files cannot express well.

Shuffle invariance, the laws checked on many generated clusters, the scope of explanations
(nothing outside the fence, nothing preempting), plain-string tie-breaks, which asks hold
reservations, and the cost on a large cluster.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.inter_queue import plan_inter_queue
from preemption.model import (
    Allocation,
    AllocationState,
    Ask,
    AskState,
    ClusterState,
    Explanation,
    Node,
    Options,
    Outcome,
    Plan,
    PolicyName,
    Reason,
)
from preemption.scenario import load_scenario

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=1)
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios" / "inter_queue"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "scenarios"


def config(*queues: QueueConfig, **settings: object) -> PartitionConfig:
    return PartitionConfig(
        settings=PartitionSettings(name="default", **settings),  # type: ignore[arg-type]
        queues=(QueueConfig.child_of(None, "root"), *queues),
    )


def task(
    id_: str,
    queue: str,
    node: str,
    vcore: int,
    *,
    minute: int = 0,
    **fields: object,
) -> Allocation:
    """A running task of ``vcore`` cores (millicores in the model), started ``minute`` past 8."""
    return Allocation(
        id=id_,
        app=str(fields.pop("app", f"app-{id_}")),
        queue=queue,
        node=node,
        resources={"vcore": vcore * 1000},
        created_at=datetime(2026, 1, 1, 8, tzinfo=UTC) + timedelta(minutes=minute),
        **fields,  # type: ignore[arg-type]
    )


def ask(id_: str, queue: str, vcore: int, **fields: object) -> Ask:
    return Ask(
        id=id_,
        app=str(fields.pop("app", f"app-{id_}")),
        queue=queue,
        resources={"vcore": vcore * 1000},
        created_at=EARLIER,
        **fields,  # type: ignore[arg-type]
    )


def two_queues() -> PartitionConfig:
    return config(
        QueueConfig.child_of("root", "a", guaranteed={"vcore": 4000}),
        QueueConfig.child_of("root", "b"),
    )


def plan(state: ClusterState, ask_id: str = "k1") -> Plan:
    return plan_inter_queue(state, ask_id, NOW, Options())


def reasons(result: Plan) -> dict[str, str]:
    return {entry.candidate: str(entry.reason) for entry in result.explanations}


# ------------------------------------------------------------------------------------------
# Generated clusters
# ------------------------------------------------------------------------------------------


def random_cluster(rng: random.Random) -> ClusterState:
    """root -> 2-3 tenants (maybe fenced or disabled, maybe with a max) -> 1-3 leaves, a few
    nodes, tasks of mixed priority, apps, opt-outs, DaemonSet pods and preempting tasks, and
    three asks, some holding a reservation."""
    queues: list[QueueConfig] = []
    leaves: list[str] = []
    for t in range(rng.randint(2, 3)):
        properties = {"preemption.policy": rng.choice(["fence", "default", "disabled"])}
        limit = {"vcore": rng.randint(8, 40) * 1000} if rng.random() < 0.3 else {}
        tenant = QueueConfig.child_of(
            "root", f"t{t}", max=limit, properties=properties if rng.random() < 0.5 else {}
        )
        queues.append(tenant)
        for leaf in range(rng.randint(1, 3)):
            # The first leaf of a tenant is a "prod" queue, far from its guarantee: asks there
            # usually trigger (law 4), so the generator reaches the victim selection often.
            amount = rng.randint(12, 30) if leaf == 0 else rng.randint(0, 4)
            guaranteed = {"vcore": amount * 1000} if rng.random() < 0.8 else {}
            queues.append(QueueConfig.child_of(tenant.path, f"l{leaf}", guaranteed=guaranteed))
            leaves.append(f"{tenant.path}.l{leaf}")
    nodes = tuple(
        Node(f"n{i}", {"vcore": rng.randint(4, 12) * 1000}, schedulable=rng.random() < 0.9)
        for i in range(rng.randint(1, 4))
    )
    prod = [leaf for leaf in leaves if leaf.endswith(".l0")]
    others = [leaf for leaf in leaves if leaf not in prod]
    allocations = []
    for i in range(rng.randint(5, 40)):
        node = rng.choice(nodes)
        allocations.append(
            task(
                f"a{i:02d}",
                rng.choice(others or leaves) if rng.random() < 0.8 else rng.choice(leaves),
                node.name,
                rng.randint(1, 4),
                minute=rng.randint(0, 200),
                app=f"app{rng.randint(0, 5)}",
                priority=rng.randint(0, 3),
                allow_preemption=rng.random() < 0.8,
                originator=rng.random() < 0.2,
                required_node=node.name if rng.random() < 0.1 else None,
                state=AllocationState.PREEMPTING if rng.random() < 0.1 else AllocationState.RUNNING,
            )
        )
    asks = tuple(
        ask(
            f"k{i}",
            rng.choice(prod) if rng.random() < 0.7 else rng.choice(leaves),
            rng.randint(1, 6),
            app=f"app{rng.randint(0, 6)}",
            priority=rng.randint(1, 3),
            node=rng.choice(nodes).name if rng.random() < 0.2 else None,
        )
        for i in range(3)
    )
    return ClusterState(
        config=config(*queues), nodes=nodes, allocations=tuple(allocations), asks=asks
    )


def shuffled(state: ClusterState, rng: random.Random) -> ClusterState:
    allocations, nodes, asks = list(state.allocations), list(state.nodes), list(state.asks)
    rng.shuffle(allocations)
    rng.shuffle(nodes)
    rng.shuffle(asks)
    return replace(state, allocations=tuple(allocations), nodes=tuple(nodes), asks=tuple(asks))


CLUSTERS = [random_cluster(random.Random(seed)) for seed in range(300)]


def test_shuffling_the_input_never_changes_a_plan() -> None:
    rng = random.Random(7)
    for state in CLUSTERS:
        for pending in state.asks:
            expected = plan(state, pending.id).to_json()
            for _ in range(3):
                assert plan(shuffled(state, rng), pending.id).to_json() == expected


@pytest.mark.parametrize(
    "path",
    sorted([*SCENARIOS.glob("*.yaml"), *SHARED.glob("inter-queue-*.yaml")]),
    ids=lambda path: path.stem,
)
def test_shuffling_a_scenario_never_changes_its_plan(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.action is not None
    ask_id = scenario.action[1]
    expected = plan_inter_queue(scenario.state, ask_id, scenario.now, scenario.options).to_json()
    rng = random.Random(path.name)
    for _ in range(5):
        other = shuffled(scenario.state, rng)
        assert plan_inter_queue(other, ask_id, scenario.now, scenario.options).to_json() == expected


def test_victims_obey_the_laws_on_generated_clusters() -> None:
    """Victims never outrank the ask, never share its app, never sit outside the fence root
    or in Q, never opted out or DaemonSet pods, all run on the reserved node, and together
    keep every protected queue at or above a guarantee it was at."""
    complete = 0
    for state in CLUSTERS:
        for pending in state.asks:
            result = plan(state, pending.id)
            if result.outcome != Outcome.COMPLETE:
                assert result.victims == ()
                continue
            complete += 1
            fence = state.hierarchy.fence_root(pending.queue, pending.resources, state.usage)
            by_id = {allocation.id: allocation for allocation in state.running}
            victims = [by_id[victim] for victim in result.victims]
            for victim in victims:
                assert victim.priority <= pending.priority  # law 6
                assert victim.app != pending.app  # law 3
                assert state.hierarchy.is_within(victim.queue, fence)  # law 7
                assert victim.queue != pending.queue
                assert victim.allow_preemption  # law 1
                assert victim.required_node is None
                assert victim.node == result.node
            assert_guarantees_kept(state, pending, victims)
    assert complete > 30  # the generator really exercises the complete path


def assert_guarantees_kept(state: ClusterState, pending: Ask, victims: list[Allocation]) -> None:
    gone = {victim.id for victim in victims}
    after = state.hierarchy.usage_by_queue(a for a in state.running if a.id not in gone)
    for victim in victims:
        for step in [victim.queue, *state.hierarchy.ancestors(victim.queue)]:
            if state.hierarchy.is_within(pending.queue, step):
                break  # from the lowest common ancestor up, law 2 does not apply
            for name, floor in state.hierarchy.queues[step].guaranteed.items():
                before = state.usage[step].get(name, 0)
                assert before < floor or after[step].get(name, 0) >= floor


def test_explanations_cover_every_running_task_and_mark_those_outside_the_fence() -> None:
    for state in CLUSTERS:
        for pending in state.asks:
            result = plan(state, pending.id)
            if result.outcome == Outcome.NOT_TRIGGERED:
                assert result.explanations == () and result.node is None
                continue
            fence = state.hierarchy.fence_root(pending.queue, pending.resources, state.usage)
            explained = {entry.candidate: entry.reason for entry in result.explanations}
            assert sorted(explained) == sorted(a.id for a in state.running)
            for allocation in state.running:
                outside = not state.hierarchy.is_within(allocation.queue, fence)
                assert (explained[allocation.id] == Reason.OUTSIDE_FENCE) == outside
            accepted = {entry.candidate for entry in result.explanations if entry.accepted}
            assert accepted == set(result.victims)


# ------------------------------------------------------------------------------------------
# Targeted behaviour
# ------------------------------------------------------------------------------------------


def test_tasks_outside_the_fence_are_explained_as_outside_fence() -> None:
    state = ClusterState(
        config=config(
            QueueConfig.child_of("root", "t1", properties={"preemption.policy": "fence"}),
            QueueConfig.child_of("root.t1", "a", guaranteed={"vcore": 4000}),
            QueueConfig.child_of("root.t1", "x"),
            QueueConfig.child_of("root", "t2"),
        ),
        nodes=(Node("n1", {"vcore": 6000}),),
        allocations=(
            task("x1", "root.t1.x", "n1", 2),
            task("o1", "root.t2", "n1", 4, minute=100),
        ),
        asks=(ask("k1", "root.t1.a", 2),),
    )
    result = plan(state)
    assert result.victims == ("x1",)
    assert result.explanation_for("o1") == Explanation("o1", False, Reason.OUTSIDE_FENCE)


def test_preempting_tasks_are_neither_candidates_nor_explained() -> None:
    state = ClusterState(
        config=two_queues(),
        nodes=(Node("n1", {"vcore": 8000}),),
        allocations=(
            task("b1", "root.b", "n1", 4, minute=90, state=AllocationState.PREEMPTING),
            task("b2", "root.b", "n1", 4, minute=60),
            task("b3", "root.b", "n1", 4, minute=30),
        ),
        asks=(ask("k1", "root.a", 4),),
    )
    # b1 is on its way out, but b2 and b3 still fill the node (8 of 8).
    result = plan(state)
    assert result.victims == ("b2",)
    assert reasons(result) == {"b2": "victim", "b3": "target_met"}


def test_a_failed_plan_preempts_nobody_and_marks_no_entry_accepted() -> None:
    state = ClusterState(
        config=config(
            QueueConfig.child_of("root", "a", guaranteed={"vcore": 6000}),
            QueueConfig.child_of("root", "b", guaranteed={"vcore": 4000}),
        ),
        nodes=(Node("n1", {"vcore": 8000}),),
        allocations=(
            task("b1", "root.b", "n1", 4, minute=60),
            task("b2", "root.b", "n1", 4, minute=30),
        ),
        asks=(ask("k1", "root.a", 6),),
    )
    result = plan(state)
    assert result.outcome == Outcome.DOES_NOT_HELP
    assert result.victims == () and result.node is None
    assert all(not entry.accepted for entry in result.explanations)
    # b1 was taken in n1's pass (the first node by name) before b2 hit law 2.
    assert reasons(result) == {"b1": "victim", "b2": "law2_below_guarantee"}


def test_victims_are_listed_in_the_order_taken() -> None:
    state = ClusterState(
        config=two_queues(),
        nodes=(Node("n1", {"vcore": 6000}),),
        allocations=(
            task("b1", "root.b", "n1", 2, minute=10, priority=1),
            task("b2", "root.b", "n1", 2, minute=50),
            task("b3", "root.b", "n1", 2, minute=20, originator=True),
        ),
        asks=(ask("k1", "root.a", 6, priority=1),),
    )
    # Lower priority first, then non-originators, then newest first.
    assert plan(state).victims == ("b2", "b3", "b1")


def test_equal_tasks_are_taken_by_id_as_plain_strings() -> None:
    state = ClusterState(
        config=two_queues(),
        nodes=(Node("n1", {"vcore": 4000}),),
        allocations=(task("b9", "root.b", "n1", 2), task("b10", "root.b", "n1", 2)),
        asks=(ask("k1", "root.a", 2),),
    )
    assert plan(state).victims == ("b10",)  # "b10" < "b9" in code point order


def test_equal_nodes_are_chosen_by_name_as_plain_strings() -> None:
    state = ClusterState(
        config=two_queues(),
        nodes=(Node("n1", {"vcore": 4000}), Node("N2", {"vcore": 4000})),
        allocations=(task("b1", "root.b", "n1", 4), task("b2", "root.b", "N2", 4)),
        asks=(ask("k1", "root.a", 4),),
    )
    assert plan(state).node == "N2"  # "N" < "n"


def reserved_state(other_state: AskState, *, own_node: str | None = None) -> ClusterState:
    return ClusterState(
        config=two_queues(),
        nodes=(Node("n1", {"vcore": 4000}), Node("n2", {"vcore": 4000})),
        allocations=(task("b1", "root.b", "n1", 4, minute=60), task("b2", "root.b", "n2", 4)),
        asks=(
            ask("k0", "root.a", 4, node="n1", state=other_state),
            ask("k1", "root.a", 4, node=own_node),
        ),
    )


@pytest.mark.parametrize("other_state", [AskState.PENDING, AskState.RESERVED])
def test_a_node_reserved_for_a_waiting_ask_is_skipped(other_state: AskState) -> None:
    assert plan(reserved_state(other_state)).node == "n2"


@pytest.mark.parametrize("other_state", [AskState.ALLOCATED, AskState.REMOVED])
def test_an_ask_that_no_longer_waits_holds_no_reservation(other_state: AskState) -> None:
    assert plan(reserved_state(other_state)).node == "n1"


def test_the_asks_own_reservation_does_not_keep_it_off_its_node() -> None:
    state = reserved_state(AskState.REMOVED, own_node="n1")
    assert plan(state).node == "n1"


@pytest.mark.parametrize("state_", [AskState.ALLOCATED, AskState.REMOVED])
def test_an_ask_that_no_longer_waits_does_not_trigger(state_: AskState) -> None:
    state = reserved_state(AskState.REMOVED)
    state = replace(state, asks=(ask("k1", "root.a", 4, state=state_),))
    assert plan(state).outcome == Outcome.NOT_TRIGGERED


def test_the_partition_default_delay_applies_when_the_leaf_sets_none() -> None:
    state = replace(
        reserved_state(AskState.REMOVED),
        config=replace(
            two_queues(), settings=PartitionSettings(name="default", default_preemption_delay=7200)
        ),
    )
    assert plan(state).outcome == Outcome.NOT_TRIGGERED  # pending 1h of the 2h default


def test_the_plan_names_its_policy_and_ignores_the_options() -> None:
    state = reserved_state(AskState.REMOVED)
    default = plan(state)
    tuned = plan_inter_queue(state, "k1", NOW, Options(max_victims=0, deviation_percent=0))
    assert default.policy == PolicyName.INTER_QUEUE
    assert tuned == default


def test_a_large_cluster_is_planned_whole() -> None:
    """100,000 tasks on 2,000 nodes: one pass over the tasks, one sort, a walk per node."""
    rng = random.Random(3)
    queues = [QueueConfig.child_of("root", "ask", guaranteed={"vcore": 10**7})]
    leaves = []
    for t in range(20):
        queues.append(QueueConfig.child_of("root", f"t{t}"))
        for leaf in range(10):
            queues.append(
                QueueConfig.child_of(f"root.t{t}", f"l{leaf}", guaranteed={"vcore": 100_000})
            )
            leaves.append(f"root.t{t}.l{leaf}")
    nodes = tuple(Node(f"n{i:04d}", {"vcore": 50_000}) for i in range(2000))
    allocations = tuple(
        task(
            f"a{i:06d}",
            rng.choice(leaves),
            nodes[i % len(nodes)].name,
            1,
            minute=rng.randint(0, 1000),
            priority=rng.randint(0, 3),
        )
        for i in range(100_000)
    )
    state = ClusterState(
        config=config(*queues),
        nodes=nodes,
        allocations=allocations,
        asks=(ask("k1", "root.ask", 8, priority=2),),
    )
    result = plan(state)
    assert result.outcome == Outcome.COMPLETE and len(result.victims) == 8
    assert len(result.explanations) == 100_000
