"""Usage roll-up, subtrees and fence roots of the queue tree."""

from __future__ import annotations

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import Hierarchy
from preemption.model import Allocation, AllocationState, ClusterState


def tree() -> PartitionConfig:
    return PartitionConfig(
        settings=PartitionSettings(name="default"),
        queues=(
            QueueConfig.child_of(None, "root"),
            QueueConfig.child_of("root", "t1", properties={"preemption.policy": "fence"}),
            QueueConfig.child_of("root.t1", "a", max={"vcore": 4000}),
            QueueConfig.child_of("root.t1", "b"),
            QueueConfig.child_of("root", "t2", max={"vcore": 6000}),
            QueueConfig.child_of("root.t2", "c"),
            QueueConfig.child_of("root", "ab"),
        ),
    )


def alloc(id_: str, queue: str, vcore: int, state: AllocationState = AllocationState.RUNNING):
    return Allocation(
        id=id_, app=id_, queue=queue, node="n1", resources={"vcore": vcore}, state=state
    )


def test_usage_rolls_up_to_every_ancestor_and_ignores_unknown_queues() -> None:
    hierarchy = Hierarchy(tree())
    usage = hierarchy.usage_by_queue(
        [alloc("x", "root.t1.a", 1000), alloc("y", "root.t1.b", 2000), alloc("z", "root.gone", 5)]
    )
    assert usage["root.t1.a"] == {"vcore": 1000}
    assert usage["root.t1"] == {"vcore": 3000}
    assert usage["root"] == {"vcore": 3000}
    assert usage["root.t2"] == {} and usage["root.ab"] == {}


def test_cluster_state_usage_counts_preempting_allocations_as_gone() -> None:
    state = ClusterState(
        config=tree(),
        allocations=(
            alloc("x", "root.t1.a", 1000),
            alloc("y", "root.t1.a", 500, AllocationState.PREEMPTING),
        ),
    )
    assert [a.id for a in state.running] == ["x"]
    assert state.usage["root.t1"] == {"vcore": 1000}


def test_subtree_membership_does_not_confuse_name_prefixes() -> None:
    hierarchy = Hierarchy(tree())
    assert hierarchy.is_within("root.t1.a", "root.t1")
    assert hierarchy.is_within("root.t1", "root.t1")
    assert not hierarchy.is_within("root.ab", "root.a")
    assert hierarchy.leaves_under("root") == ["root.t1.a", "root.t1.b", "root.t2.c", "root.ab"]
    assert hierarchy.leaves_under("root.t2.c") == ["root.t2.c"]


def test_fence_root_stops_at_a_fence_at_a_max_that_would_be_exceeded_or_at_root() -> None:
    hierarchy = Hierarchy(tree())
    no_usage: dict[str, dict[str, int]] = {}
    assert hierarchy.fence_root("root.t1.b", {"vcore": 1000}, no_usage) == "root.t1"
    # a's own max is exceeded by usage + ask: the walk stops at a itself
    assert hierarchy.fence_root("root.t1.a", {"vcore": 5000}, no_usage) == "root.t1.a"
    assert hierarchy.fence_root("root.t2.c", {"vcore": 1000}, {"root.t2": {"vcore": 5500}}) == (
        "root.t2"
    )
    assert hierarchy.fence_root("root.t2.c", {"vcore": 1000}, no_usage) == "root"
