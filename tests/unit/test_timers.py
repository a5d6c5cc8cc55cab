"""Tests for preemption.timers (SPEC 4.1 "Timer", seed 001 "Quota Preemption Delay"): which saves
start, reset or cancel a timer, what a timer that fell due does, and the order of a sweep."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from preemption.config import PartitionConfig, QueueConfig
from preemption.hierarchy import Hierarchy
from preemption.model import Allocation, ClusterState, ConfigChange, Node, Outcome
from preemption.timers import (
    DueDecision,
    DueState,
    QuotaTimer,
    decide_due,
    due_order,
    is_pure_increase,
    quota_run_stop_reason,
    replay_timeline,
    timers_after_save,
)
from tests.unit.builders import GI, config, queue

T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)
T1 = T0 + timedelta(minutes=2)


def base(**settings: object) -> PartitionConfig:
    """root.p (delay 5m) -> root.p.a (max 100Gi), root.p.b (max 100Gi, own delay 1m);
    root.c (max 100Gi, no delay anywhere: D = 0)."""
    return config(
        queue("root.p", properties={"quota.preemption.delay": "5m"}),
        queue("root.p.a", max={"memory": 100 * GI}),
        queue("root.p.b", max={"memory": 100 * GI}, properties={"quota.preemption.delay": "1m"}),
        queue("root.c", max={"memory": 100 * GI}),
        **{"quota_preemption_enabled": True, **settings},
    )


def edit(cfg: PartitionConfig, path: str, **fields: object) -> PartitionConfig:
    current = cfg.queue(path)
    assert current is not None
    if "properties" in fields:
        merged = {**current.properties, **fields["properties"]}  # type: ignore[dict-item]
        fields["properties"] = {k: v for k, v in merged.items() if v is not None}
    return cfg.with_queue(replace(current, **fields))  # type: ignore[arg-type]


def switch(cfg: PartitionConfig, enabled: bool) -> PartitionConfig:
    return replace(cfg, settings=replace(cfg.settings, quota_preemption_enabled=enabled))


def timer(path: str, started: datetime, delay: int) -> QuotaTimer:
    return QuotaTimer(path, started, started + timedelta(seconds=delay), delay)


# --------------------------------------------------------------------------------------------
# timers_after_save
# --------------------------------------------------------------------------------------------


def test_lowering_max_starts_a_timer_due_after_the_effective_delay() -> None:
    old = base()
    new = edit(old, "root.p.a", max={"memory": 50 * GI})
    assert timers_after_save(old, new, {}, T0) == {"root.p.a": timer("root.p.a", T0, 300)}


def test_the_timer_starts_whatever_the_usage() -> None:
    # The engine has no usage here at all: the timer re-checks usage when it falls due.
    old = base()
    new = edit(old, "root.p.b", max={"memory": 99 * GI})
    assert timers_after_save(old, new, {}, T0) == {"root.p.b": timer("root.p.b", T0, 60)}


def test_a_second_change_resets_the_timer_instead_of_adding_to_it() -> None:
    old = edit(base(), "root.p.a", max={"memory": 50 * GI})
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    new = edit(old, "root.p.a", max={"memory": 40 * GI})
    assert timers_after_save(old, new, pending, T1) == {"root.p.a": timer("root.p.a", T1, 300)}


@pytest.mark.parametrize(
    ("before", "after", "pure"),
    [
        ({"memory": 30}, {"memory": 50}, True),
        ({"memory": 30, "vcore": 10}, {"memory": 30}, True),  # removing a type is an increase
        ({"memory": 30}, {}, True),
        ({"memory": 30}, {"memory": 30, "vcore": 10}, False),  # adding a type lowers it
        ({"memory": 30, "vcore": 10}, {"memory": 50, "vcore": 5}, False),
        ({}, {"memory": 30}, False),
    ],
)
def test_pure_increase(before, after, pure) -> None:
    assert is_pure_increase(before, after) is pure


def test_a_pure_increase_cancels_the_pending_timer_and_starts_none() -> None:
    old = edit(base(), "root.p.a", max={"memory": 30 * GI})
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    new = edit(old, "root.p.a", max={"memory": 50 * GI})
    assert timers_after_save(old, new, pending, T1) == {}


def test_raising_one_type_and_lowering_another_is_a_decrease() -> None:
    old = edit(base(), "root.p.a", max={"memory": 30 * GI, "vcore": 10_000})
    new = edit(old, "root.p.a", max={"memory": 50 * GI, "vcore": 5_000})
    assert timers_after_save(old, new, {}, T1) == {"root.p.a": timer("root.p.a", T1, 300)}


def test_an_increase_saved_with_a_delay_change_still_cancels() -> None:
    old = edit(base(), "root.p.b", max={"memory": 30 * GI})
    pending = {"root.p.b": timer("root.p.b", T0, 60)}
    new = edit(
        old, "root.p.b", max={"memory": 50 * GI}, properties={"quota.preemption.delay": "2m"}
    )
    assert timers_after_save(old, new, pending, T1) == {}


def test_a_delay_change_restarts_the_timer_with_the_new_delay() -> None:
    old = base()
    pending = {"root.p.b": timer("root.p.b", T0, 60)}
    new = edit(old, "root.p.b", properties={"quota.preemption.delay": "10m"})
    assert timers_after_save(old, new, pending, T1) == {"root.p.b": timer("root.p.b", T1, 600)}


def test_a_delay_change_alone_starts_a_timer() -> None:
    old = base()
    new = edit(old, "root.p.b", properties={"quota.preemption.delay": "10m"})
    assert timers_after_save(old, new, {}, T1) == {"root.p.b": timer("root.p.b", T1, 600)}


def test_rewriting_the_same_delay_is_no_change() -> None:
    old = base()
    pending = {"root.p.b": timer("root.p.b", T0, 60)}
    new = edit(old, "root.p.b", properties={"quota.preemption.delay": "60s"})
    assert timers_after_save(old, new, pending, T1) == pending


def test_other_changes_keep_pending_timers_as_they_are() -> None:
    old = base()
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    new = edit(old, "root.p.a", guaranteed={"memory": GI}, properties={"x": "y"})
    assert timers_after_save(old, new, pending, T1) == pending


def test_an_ancestor_delay_change_restarts_pending_descendants_that_inherit_it() -> None:
    old = base()
    pending = {"root.p.a": timer("root.p.a", T0, 300), "root.p.b": timer("root.p.b", T0, 60)}
    new = edit(old, "root.p", properties={"quota.preemption.delay": "2m"})
    # a inherits p's delay: restarted with 2m. b sets its own: untouched. p itself: own delay
    # changed, so its timer starts (it will end not_needed, having no max).
    assert timers_after_save(old, new, pending, T1) == {
        "root.p": timer("root.p", T1, 120),
        "root.p.a": timer("root.p.a", T1, 120),
        "root.p.b": timer("root.p.b", T0, 60),
    }


def test_an_ancestor_delay_change_starts_no_timer_on_descendants_without_one() -> None:
    old = base()
    new = edit(old, "root.p", properties={"quota.preemption.delay": "2m"})
    assert set(timers_after_save(old, new, {}, T1)) == {"root.p"}


def test_an_ancestor_delay_removed_drops_pending_descendant_timers() -> None:
    old = base()
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    new = edit(old, "root.p", properties={"quota.preemption.delay": None})
    assert timers_after_save(old, new, pending, T1) == {}


def test_no_timer_starts_when_the_delay_is_zero() -> None:
    old = base()
    new = edit(old, "root.c", max={"memory": 10 * GI})
    assert timers_after_save(old, new, {}, T0) == {}
    new = edit(old, "root.p.b", max={"memory": 10 * GI}, properties={"quota.preemption.delay": "0"})
    assert timers_after_save(old, new, {"root.p.b": timer("root.p.b", T0, 60)}, T1) == {}


def test_no_timer_starts_when_quota_preemption_is_disabled() -> None:
    old = base(quota_preemption_enabled=False)
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    new = edit(old, "root.p.a", max={"memory": 10 * GI})
    assert timers_after_save(old, new, pending, T1) == {}


def test_turning_the_switch_off_keeps_pending_timers_until_they_fall_due() -> None:
    old = base()
    pending = {"root.p.a": timer("root.p.a", T0, 300)}
    assert timers_after_save(old, switch(old, False), pending, T1) == pending


def test_turning_the_switch_on_starts_no_timer() -> None:
    old = edit(base(quota_preemption_enabled=False), "root.p.a", max={"memory": 10 * GI})
    assert timers_after_save(old, switch(old, True), {}, T1) == {}


def test_queues_that_disappear_lose_their_timers() -> None:
    old = base()
    pending = {"root.p.a": timer("root.p.a", T0, 300), "root.p.b": timer("root.p.b", T0, 60)}
    new = old.without_subtree("root.p.a")
    assert timers_after_save(old, new, pending, T1) == {"root.p.b": timer("root.p.b", T0, 60)}


def test_a_new_queue_starts_no_timer_but_changing_it_later_does() -> None:
    old = base()
    new = old.with_queue(QueueConfig.child_of("root.p", "n", max={"memory": GI}))
    assert timers_after_save(old, new, {}, T0) == {}
    lowered = new.with_queue(QueueConfig.child_of("root.p", "n", max={"memory": GI // 2}))
    assert timers_after_save(new, lowered, {}, T0) == {"root.p.n": timer("root.p.n", T0, 300)}


# --------------------------------------------------------------------------------------------
# decide_due
# --------------------------------------------------------------------------------------------


def state_with(
    cfg: PartitionConfig, used: int, running_runs: set[str] = frozenset()
) -> ClusterState:
    return ClusterState(
        config=cfg,
        nodes=(Node("n1", {"memory": 1000 * GI}),),
        allocations=(Allocation("t1", "app", "root.p.a", "n1", {"memory": used * GI}),),
        running_runs=frozenset(running_runs),
    )


LOWERED = edit(base(), "root.p.a", max={"memory": 50 * GI})
DUE = timer("root.p.a", T0, 300)


def test_a_due_timer_runs_when_usage_is_over_max() -> None:
    assert decide_due(state_with(LOWERED, 80), DUE) == DueDecision.RUN


def test_a_due_timer_is_not_needed_when_usage_is_within_max() -> None:
    assert decide_due(state_with(LOWERED, 50), DUE) == DueDecision.NOT_NEEDED


def test_a_due_timer_is_cancelled_when_the_switch_is_off_or_the_delay_is_zero() -> None:
    assert decide_due(state_with(switch(LOWERED, False), 80), DUE) == DueDecision.CANCELLED
    no_delay = edit(LOWERED, "root.p", properties={"quota.preemption.delay": None})
    assert decide_due(state_with(no_delay, 80), DUE) == DueDecision.CANCELLED
    gone = timer("root.gone", T0, 300)
    assert decide_due(state_with(LOWERED, 80), gone) == DueDecision.CANCELLED


@pytest.mark.parametrize("running", ["root.p.a", "root.p", "root"])
def test_a_due_timer_is_deferred_by_a_run_on_the_queue_or_an_ancestor(running) -> None:
    assert decide_due(state_with(LOWERED, 80, {running}), DUE) == DueDecision.DEFERRED


def test_a_due_timer_is_deferred_by_a_run_on_a_descendant() -> None:
    parent = edit(LOWERED, "root.p", max={"memory": 10 * GI})
    state = state_with(parent, 80, {"root.p.a"})
    assert decide_due(state, timer("root.p", T0, 300)) == DueDecision.DEFERRED


def test_a_run_on_a_sibling_or_a_lookalike_name_does_not_defer() -> None:
    state = state_with(LOWERED, 80, {"root.p.b", "root.p.aa", "root.c"})
    assert decide_due(state, DUE) == DueDecision.RUN


def test_cancelled_is_decided_before_deferred() -> None:
    state = state_with(switch(LOWERED, False), 80, {"root.p.a"})
    assert decide_due(state, DUE) == DueDecision.CANCELLED


@pytest.mark.parametrize(
    ("cfg", "used", "running", "path"),
    [
        (LOWERED, 80, set(), "root.p.a"),  # run
        (LOWERED, 50, set(), "root.p.a"),  # not needed
        (switch(LOWERED, False), 80, set(), "root.p.a"),  # cancelled
        (LOWERED, 80, set(), "root.gone"),  # cancelled: no such queue
        (LOWERED, 80, {"root.p"}, "root.p.a"),  # deferred by an ancestor
        (LOWERED, 80, {"root.p.a"}, "root.p"),  # deferred by a descendant
        (LOWERED, 80, {"root"}, "root.p.a"),
        (LOWERED, 80, {"root.p.b", "root.p.aa", "root.c", "root.p.a.x"}, "root.p.a"),
        (LOWERED, 80, {"root.p.b", "root.p.aa", "root.c"}, "root.p.a"),
        (LOWERED, 80, {"root.pp", "root.p.aa.z"}, "root.p"),
    ],
)
def test_a_due_state_decides_as_the_full_state_does(cfg, used, running, path) -> None:
    """The sweep decides on the usage per queue without the tasks: the same answers."""
    state = state_with(cfg, used, running)
    due = timer(path, T0, 300)
    assert decide_due(DueState.of(state), due) == decide_due(state, due)


def test_a_due_state_keeps_its_usage_when_only_the_runs_change() -> None:
    """A sweep shares one usage roll-up across every timer: the runs it starts replace
    ``running_runs`` only, and the usage and hierarchy are the same objects."""
    shared = DueState.of(state_with(LOWERED, 80))
    later = replace(shared, running_runs=frozenset({"root.p.a"}))
    assert later.usage is shared.usage and later.hierarchy is shared.hierarchy
    assert decide_due(shared, DUE) == DueDecision.RUN
    assert decide_due(later, DUE) == DueDecision.DEFERRED


def test_a_run_added_to_a_due_state_defers_its_relatives_only() -> None:
    """``with_run`` extends what it derived from the runs instead of computing it again: the
    same as a state built with that run from the start."""
    shared = DueState.of(state_with(LOWERED, 80, {"root.c"}))
    assert shared.queues_above_runs == {"root"}
    later = shared.with_run("root.p.a.x")
    assert later.running_runs == {"root.c", "root.p.a.x"} and later.usage is shared.usage
    fresh = DueState(shared.hierarchy, shared.usage, later.running_runs)
    assert later.queues_above_runs == fresh.queues_above_runs == {"root", "root.p", "root.p.a"}
    for path in ("root.p.a", "root.p", "root.p.b", "root.c", "root.p.aa"):
        due = timer(path, T0, 300)
        assert decide_due(later, due) == decide_due(fresh, due)
    assert decide_due(later, DUE) == DueDecision.DEFERRED
    assert decide_due(later, timer("root.p.b", T0, 300)) != DueDecision.DEFERRED


# --------------------------------------------------------------------------------------------
# due_order
# --------------------------------------------------------------------------------------------


def test_due_order_is_by_time_then_deeper_first_then_path() -> None:
    later_leaf = timer("root.p.a", T1, 60)
    parent = timer("root.p", T0, 60)
    leaf_b = timer("root.p.b", T0, 60)
    leaf_a = timer("root.p.a", T0, 60)
    deep = timer("root.p.a.x", T0, 60)
    ordered = due_order([later_leaf, parent, leaf_b, leaf_a, deep])
    assert ordered == [deep, leaf_a, leaf_b, parent, later_leaf]


# --------------------------------------------------------------------------------------------
# replay_timeline
# --------------------------------------------------------------------------------------------


def test_replay_takes_changes_in_time_order_and_releases_victims() -> None:
    state = ClusterState(
        config=base(),
        nodes=(Node("n1", {"memory": 1000 * GI}),),
        allocations=tuple(
            Allocation(
                f"t{i}",
                "app",
                "root.p.b",
                "n1",
                {"memory": 20 * GI},
                created_at=T0 - timedelta(hours=i),
            )
            for i in range(1, 4)
        ),
    )
    changes = [
        ConfigChange(at=T0 + timedelta(minutes=5), queue="root.p.b", max={"memory": 30 * GI}),
        ConfigChange(at=T0, queue="root.p.b", max={"memory": 40 * GI}),
    ]
    runs = replay_timeline(state, changes, T0 + timedelta(hours=1))
    assert [(run.at, run.victims, run.outcome) for run in runs] == [
        (T0 + timedelta(minutes=1), ("t1",), Outcome.COMPLETE),
        (T0 + timedelta(minutes=6), ("t2",), Outcome.COMPLETE),
    ]


def test_replay_never_runs_a_timer_past_until() -> None:
    state = state_with(base(), 80)
    change = ConfigChange(at=T0, queue="root.p.a", max={"memory": 50 * GI})
    assert replay_timeline(state, [change], T0 + timedelta(seconds=299)) == []
    assert len(replay_timeline(state, [change], T0 + timedelta(seconds=300))) == 1


# --------------------------------------------------------------------------------------------
# quota_run_stop_reason (SPEC 5: a run stops when it is no longer needed)
# --------------------------------------------------------------------------------------------


def stop_reason(cfg: PartitionConfig, path: str, used_gi: int, **planned: int) -> str:
    usage = {"memory": used_gi * GI, "vcore": 4000}
    planned_max = {name: value * GI for name, value in planned.items()} or None
    return quota_run_stop_reason(Hierarchy(cfg), path, usage, ["memory"], planned_max=planned_max)


def test_a_quota_run_over_its_max_is_still_needed() -> None:
    assert stop_reason(base(), "root.p.a", 150, memory=100) == ""


def test_a_quota_run_within_its_max_again_stops_saying_whether_the_max_changed() -> None:
    assert stop_reason(base(), "root.p.a", 80, memory=100) == (
        "the usage of root.p.a (memory 80Gi) is within its max (memory 100Gi) again"
    )
    raised = edit(base(), "root.p.a", max={"memory": 200 * GI})
    assert stop_reason(raised, "root.p.a", 150, memory=100) == (
        "the max of root.p.a was raised or removed (memory 100Gi before, memory 200Gi now): "
        "its usage (memory 150Gi) is within its max"
    )
    removed = edit(base(), "root.p.a", max={})
    assert "(memory 100Gi before, no max now)" in stop_reason(removed, "root.p.a", 150, memory=100)


def test_the_effective_max_counts_an_ancestors_limit() -> None:
    """root.p.a's own max removed while root.p limits memory to 120Gi: 150Gi is still over."""
    cfg = edit(edit(base(), "root.p", max={"memory": 120 * GI}), "root.p.a", max={})
    assert stop_reason(cfg, "root.p.a", 150, memory=100) == ""


def test_a_quota_run_stops_when_quota_preemption_is_off_for_its_queue() -> None:
    assert stop_reason(switch(base(), False), "root.p.a", 150) == (
        "quota preemption was switched off for the partition"
    )
    no_delay = edit(base(), "root.p", properties={"quota.preemption.delay": "0s"})
    assert stop_reason(no_delay, "root.p.a", 150) == (
        "quota preemption is off for root.p.a: its quota preemption delay is now 0"
    )
    assert stop_reason(base().without_subtree("root.p.a"), "root.p.a", 150) == (
        "root.p.a no longer exists"
    )


def test_a_run_without_target_types_never_stops_for_its_usage() -> None:
    assert quota_run_stop_reason(Hierarchy(base()), "root.p.a", {}, []) == ""
