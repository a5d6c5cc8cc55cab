"""Tests for preemption.quota (SPEC 4.1, seed 001) beyond what scenario files express well:
the target formula on the seed's whole table, the largest-remainder split, outcome boundaries,
the explanation scope and that the order of the input never changes a plan."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from preemption.model import (
    Allocation,
    AllocationState,
    ClusterState,
    Node,
    Outcome,
    PolicyName,
    Reason,
)
from preemption.quota import (
    judge_outcome,
    leaf_targets,
    plan_quota,
    quota_target,
    quota_triggered,
    split_largest_remainder,
    victim_order_key,
)
from tests.unit.builders import config, queue

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
G = 1000**3
GPU = "nvidia.com/gpu"
DELAY = {"quota.preemption.delay": "60s"}


def alloc(id: str, path: str, minutes_ago: int, node: str = "n1", **fields: object) -> Allocation:
    resources = fields.pop("resources", {GPU: 1})
    return Allocation(
        id=id,
        app=id,
        queue=path,
        node=node,
        resources=resources,  # type: ignore[arg-type]
        created_at=NOW - timedelta(minutes=minutes_ago),
        **fields,  # type: ignore[arg-type]
    )


def parent_state(**settings: object) -> ClusterState:
    """root.p (max 20 GPUs, was 40) -> x (guarantee 4) -> x1, x2; y; z (no usage).

    Usage: x1 9, x2 7, y 12 = 28 -> target 8. Lots of ties (same size, same created_at)
    so that any order-dependence would show.
    """
    cfg = config(
        queue("root.p", max={GPU: 20}, properties=DELAY),
        queue("root.p.x", guaranteed={GPU: 4}),
        queue("root.p.x.x1"),
        queue("root.p.x.x2", guaranteed={GPU: 3}),
        queue("root.p.y"),
        queue("root.p.z"),
        queue("root.other"),
        quota_preemption_enabled=True,
        **settings,
    )
    allocations = [
        *(alloc(f"x1-{i}", "root.p.x.x1", 10 * (i % 3)) for i in range(9)),
        *(alloc(f"x2-{i}", "root.p.x.x2", 5, priority=i % 2) for i in range(7)),
        *(alloc(f"y-{i}", "root.p.y", 7, originator=i == 0) for i in range(11)),
        alloc("y-ds", "root.p.y", 1, required_node="n1"),
        alloc("y-cpu", "root.p.y", 1, resources={"vcore": 1000}),
        alloc("y-gone", "root.p.y", 1, state=AllocationState.PREEMPTING),
        alloc("o-1", "root.other", 1),
    ]
    return ClusterState(
        config=cfg, nodes=(Node("n1", {GPU: 100, "vcore": 8000}),), allocations=tuple(allocations)
    )


# --------------------------------------------------------------------------------------------
# Target
# --------------------------------------------------------------------------------------------


# Seed 001 "Preemptable Resource calculation": (new max, usage, preemptable resources); the
# current max plays no part. CPU is vcore (millicores).
SEED_TABLE = [
    ({"memory": 50 * G}, {"memory": 80 * G}, {"memory": 30 * G}),
    ({"memory": 50 * G}, {"memory": 80 * G}, {"memory": 30 * G}),
    (
        {"memory": 50 * G, "vcore": 50_000},
        {"memory": 80 * G, "vcore": 80_000},
        {"memory": 30 * G, "vcore": 30_000},
    ),
    (
        {"memory": 200 * G, "vcore": 50_000},
        {"memory": 100 * G, "vcore": 80_000},
        {"vcore": 30_000},
    ),
    (
        {"memory": 100 * G, "vcore": 100_000},
        {"memory": 50 * G, "vcore": 500_000},
        {"vcore": 400_000},
    ),
    ({"memory": 50 * G}, {"memory": 80 * G, "vcore": 100_000}, {"memory": 30 * G}),
    ({"vcore": 100_000}, {"memory": 100 * G, "vcore": 500_000}, {"vcore": 400_000}),
]


@pytest.mark.parametrize(("new_max", "usage", "expected"), SEED_TABLE)
def test_target_matches_every_row_of_the_seed_table(new_max, usage, expected) -> None:
    assert quota_target(usage, new_max, {}) == expected


def test_target_never_goes_below_the_guarantee() -> None:
    assert quota_target({"memory": 100}, {"memory": 60}, {"memory": 50}) == {"memory": 40}
    assert quota_target({"memory": 100}, {"memory": 40}, {"memory": 70}) == {"memory": 30}
    assert quota_target({"memory": 100}, {"memory": 40}, {"memory": 100}) == {}


# --------------------------------------------------------------------------------------------
# Largest remainder
# --------------------------------------------------------------------------------------------


def test_split_adds_up_exactly_where_naive_rounding_would_lose_a_unit() -> None:
    weights = {"c": {GPU: 10}, "a": {GPU: 10}, "b": {GPU: 10}}
    assert split_largest_remainder({GPU: 10}, weights) == {
        "a": {GPU: 4},
        "b": {GPU: 3},
        "c": {GPU: 3},
    }


def test_split_adds_up_exactly_where_naive_rounding_would_add_a_unit() -> None:
    assert split_largest_remainder({GPU: 3}, {"b": {GPU: 5}, "a": {GPU: 5}}) == {
        "a": {GPU: 2},
        "b": {GPU: 1},
    }


def test_split_gives_leftover_units_to_the_largest_remainders_first() -> None:
    # 7 * (1, 2, 4) / 7 = 1, 2, 4 exactly; 5 * (1, 2, 4) / 7 = 0.71, 1.43, 2.86 -> 1, 1, 3.
    weights = {"a": {GPU: 1}, "b": {GPU: 2}, "c": {GPU: 4}}
    assert split_largest_remainder({GPU: 7}, weights) == {
        "a": {GPU: 1},
        "b": {GPU: 2},
        "c": {GPU: 4},
    }
    assert split_largest_remainder({GPU: 5}, weights) == {
        "a": {GPU: 1},
        "b": {GPU: 1},
        "c": {GPU: 3},
    }


def test_split_never_gives_more_than_the_weight_and_skips_types_nobody_releases() -> None:
    weights = {"a": {GPU: 2}, "b": {GPU: 3, "memory": 0}}
    assert split_largest_remainder({GPU: 100, "memory": 10}, weights) == {
        "a": {GPU: 2},
        "b": {GPU: 3},
    }


def test_split_shares_always_sum_to_the_target_when_enough_is_releasable() -> None:
    rng = random.Random(7)
    for _ in range(500):
        weights = {f"q{i}": {GPU: rng.randrange(0, 50)} for i in range(rng.randrange(1, 8))}
        total = sum(w[GPU] for w in weights.values())
        target = rng.randrange(0, total + 1)
        shares = split_largest_remainder({GPU: target}, weights)
        assert sum(share.get(GPU, 0) for share in shares.values()) == target
        assert all(shares[key][GPU] <= weights[key][GPU] for key in shares)


def test_leaf_targets_skip_zero_usage_children_and_recurse_to_the_leaves() -> None:
    state = parent_state()
    # x releases 16 - 4 = 12, y 12 (the preempting task counts as gone): 8 -> 4 / 4.
    # x1 releases 9, x2 7 - 3 = 4: 4 * 9 / 13 = 2.77, 4 * 4 / 13 = 1.23 -> 3 / 1.
    assert leaf_targets(state, "root.p", {GPU: 8}) == {
        "root.p.x.x1": {GPU: 3},
        "root.p.x.x2": {GPU: 1},
        "root.p.y": {GPU: 4},
    }


def test_a_run_in_progress_in_a_child_or_below_it_keeps_that_child_out() -> None:
    for running in ("root.p.x", "root.p.x.x2"):
        state = replace(parent_state(), running_runs=frozenset({running}))
        assert leaf_targets(state, "root.p", {GPU: 8}) == {"root.p.y": {GPU: 8}}


# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


def test_parent_plan_takes_victims_leaf_by_leaf_in_path_order() -> None:
    plan = plan_quota(parent_state(), "root.p", NOW)
    assert plan.policy == PolicyName.QUOTA
    assert plan.outcome == Outcome.COMPLETE
    leaves = [victim.split("-")[0] for victim in plan.victims]
    assert leaves == sorted(leaves, key=["x1", "x2", "y"].index)
    assert plan.freed == {GPU: 8}


def test_explanations_cover_every_running_allocation_of_the_subtree_only() -> None:
    state = parent_state()
    plan = plan_quota(state, "root.p", NOW)
    expected = sorted(
        a.id for a in state.running if a.queue.startswith("root.p.")
    )  # o-1 is outside, y-gone is preempting
    assert [e.candidate for e in plan.explanations] == expected
    assert {e.candidate for e in plan.explanations if e.accepted} == set(plan.victims)
    reasons = {e.candidate: e.reason for e in plan.explanations}
    assert reasons["y-ds"] == Reason.DAEMONSET_EXCLUDED
    assert reasons["y-cpu"] == Reason.NO_SHARED_RESOURCE
    assert reasons["y-0"] == Reason.TARGET_MET  # the originator comes last


def test_guarantee_protection_stops_at_the_guarantee_of_the_leaf() -> None:
    # x2 uses 7 with a guarantee of 3; with a target of 8 on x2 itself only 4 may go.
    state = parent_state()
    cfg = state.config.with_queue(
        replace(state.config.queue("root.p.x.x2"), max={GPU: 1}, properties=DELAY)
    )
    plan = plan_quota(replace(state, config=cfg), "root.p.x.x2", NOW)
    assert plan.targets == {"root.p.x.x2": {GPU: 4}}
    assert len(plan.victims) == 4
    assert plan.outcome == Outcome.COMPLETE


@pytest.mark.parametrize(
    ("settings", "path", "new_max"),
    [
        ({"quota_preemption_enabled": False}, "root.p", {GPU: 20}),
        ({}, "root.p", {GPU: 28}),  # usage equal to max is within it
        ({}, "root.other", {GPU: 0}),  # no delay anywhere on its path: D = 0
    ],
)
def test_not_triggered_plans_have_no_victims_and_no_explanations(settings, path, new_max) -> None:
    state = parent_state()
    cfg = replace(state.config, settings=replace(state.config.settings, **settings)).with_queue(
        replace(state.config.queue(path), max=new_max)
    )
    state = replace(state, config=cfg)
    assert not quota_triggered(state, path)
    plan = plan_quota(state, path, NOW)
    assert plan.outcome == Outcome.NOT_TRIGGERED
    assert plan.victims == () and plan.explanations == () and plan.targets == {}


def test_the_decision_does_not_depend_on_now() -> None:
    state = parent_state()
    later = plan_quota(state, "root.p", NOW + timedelta(days=3))
    assert plan_quota(state, "root.p", NOW).to_json() == later.to_json()


def test_shuffling_the_input_never_changes_the_plan() -> None:
    state = parent_state(miss_percent=5)
    expected = plan_quota(state, "root.p", NOW).to_json()
    rng = random.Random(11)
    for _ in range(50):
        allocations = list(state.allocations)
        rng.shuffle(allocations)
        others = list(state.config.queues[1:])
        rng.shuffle(others)
        queues = [state.config.queues[0], *others]
        # Parents must still come first in a config, so only the allocations and siblings move.
        queues.sort(key=lambda q: q.path.count("."))
        shuffled = replace(
            state,
            allocations=tuple(allocations),
            config=replace(state.config, queues=tuple(queues)),
        )
        assert plan_quota(shuffled, "root.p", NOW).to_json() == expected


def test_victim_order_is_originator_priority_opt_out_age_then_id() -> None:
    base = {"path": "root.q", "minutes_ago": 10}
    tasks = [
        alloc("k", **base, originator=True),
        alloc("j", **base, priority=1),
        alloc("i", **base, allow_preemption=False),
        alloc("h", "root.q", 20),
        alloc("b", **base),
        alloc("a", **base),
        alloc("new", "root.q", 1),
    ]
    ordered = sorted(random.Random(3).sample(tasks, len(tasks)), key=victim_order_key)
    assert [task.id for task in ordered] == ["new", "a", "b", "h", "i", "j", "k"]


# --------------------------------------------------------------------------------------------
# Outcome
# --------------------------------------------------------------------------------------------


def test_outcome_boundaries() -> None:
    target = {"memory": 40, "vcore": 10}
    assert judge_outcome(target, {"memory": 40, "vcore": 12}, ("v",), 0) == Outcome.COMPLETE
    assert judge_outcome(target, {"memory": 30, "vcore": 10}, ("v",), 25) == Outcome.BEST_EFFORT
    assert judge_outcome(target, {"memory": 29, "vcore": 10}, ("v",), 25) == Outcome.SHORT
    assert judge_outcome(target, {"memory": 40, "vcore": 7}, ("v",), 25) == Outcome.SHORT
    assert judge_outcome(target, {}, (), 100) == Outcome.DOES_NOT_HELP
    assert judge_outcome({}, {}, (), 0) == Outcome.DOES_NOT_HELP
