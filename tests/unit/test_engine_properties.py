"""Property-based tests of the policies on random hierarchies and clusters (hypothesis).

Each property is a promise the product makes to admins, checked on thousands of generated cases:
guarantees are protected where the policy says so, inter-queue victims respect the laws and the
fence, quota plans reach their target when they can, and the order of the input never matters.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preemption import resources
from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.model import Allocation, Ask, ClusterState, Node, Options, Outcome, Plan
from preemption.policies import (
    plan_inter_queue,
    plan_job,
    plan_priority,
    plan_quota,
    plan_quota_change,
    plan_required_node,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
TYPES = ("vcore", "memory")
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def partitions(draw: st.DrawFn) -> PartitionConfig:
    """root -> 2-3 tenants (maybe fenced, maybe guaranteed) -> 1-3 leaves each."""
    queues = [QueueConfig.child_of(None, "root")]
    for t in range(draw(st.integers(2, 3))):
        tenant_props = {"preemption.policy": "fence"} if draw(st.booleans()) else {}
        leaves = draw(st.integers(1, 3))
        leaf_guarantees = [
            {kind: draw(st.integers(0, 8)) * 1000 for kind in TYPES if draw(st.booleans())}
            for _ in range(leaves)
        ]
        tenant_guarantee = resources.add(*leaf_guarantees[:2]) if leaves > 1 else leaf_guarantees[0]
        for extra in leaf_guarantees[2:]:
            tenant_guarantee = resources.add(tenant_guarantee, extra)
        tenant = QueueConfig.child_of(
            "root",
            f"t{t}",
            guaranteed=tenant_guarantee if draw(st.booleans()) else {},
            properties={**tenant_props, "quota.preemption.delay": "60s"},
        )
        queues.append(tenant)
        for leaf in range(leaves):
            queues.append(
                QueueConfig.child_of(tenant.path, f"l{leaf}", guaranteed=leaf_guarantees[leaf])
            )
    settings_ = PartitionSettings(name="default", quota_preemption_enabled=True, miss_percent=0)
    return PartitionConfig(settings=settings_, queues=tuple(queues))


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    config = draw(partitions())
    leaves = [q.path for q in config.queues if not config.children(q.path)]
    nodes = tuple(
        Node(name=f"n{i}", capacity={"vcore": 16000, "memory": 64000})
        for i in range(draw(st.integers(1, 4)))
    )
    count = draw(st.integers(1, 30))
    allocations = []
    for i in range(count):
        allocations.append(
            Allocation(
                id=f"a{i:02d}",
                app=f"app{draw(st.integers(0, 5))}",
                queue=draw(st.sampled_from(leaves)),
                node=draw(st.sampled_from(nodes)).name,
                resources={kind: draw(st.integers(1, 4)) * 1000 for kind in TYPES},
                priority=draw(st.integers(0, 3)),
                allow_preemption=draw(st.booleans()) or draw(st.booleans()),
                originator=draw(st.integers(0, 4)) == 0,
                required_node=None,
                created_at=NOW - timedelta(minutes=draw(st.integers(1, 600))),
            )
        )
    asks = tuple(
        Ask(
            id=f"k{i}",
            app=f"app{draw(st.integers(0, 6))}",
            queue=draw(st.sampled_from(leaves)),
            resources={kind: draw(st.integers(1, 6)) * 1000 for kind in TYPES},
            priority=draw(st.integers(0, 3)),
            created_at=NOW - timedelta(hours=2),
            job="j1" if i < 2 and draw(st.booleans()) else None,
        )
        for i in range(3)
    )
    return ClusterState(config=config, nodes=nodes, allocations=tuple(allocations), asks=asks)


def shuffled(state: ClusterState, seed: int) -> ClusterState:
    rng = random.Random(seed)
    allocations, nodes, asks = list(state.allocations), list(state.nodes), list(state.asks)
    rng.shuffle(allocations)
    rng.shuffle(nodes)
    rng.shuffle(asks)
    return replace(state, allocations=tuple(allocations), nodes=tuple(nodes), asks=tuple(asks))


def usage_after(state: ClusterState, plan: Plan) -> dict[str, dict[str, int]]:
    gone = set(plan.victims)
    return state.hierarchy.usage_by_queue(a for a in state.running if a.id not in gone)


def guarantee_kept(state: ClusterState, plan: Plan, queues: list[str]) -> bool:
    """No queue in ``queues`` dropped below a guaranteed type it was at or above."""
    after = usage_after(state, plan)
    for path in queues:
        guarantee = state.hierarchy.queues[path].guaranteed
        for kind, amount in guarantee.items():
            before_use = state.usage[path].get(kind, 0)
            if before_use >= amount and after[path].get(kind, 0) < amount:
                return False
    return True


def lowered_quota(state: ClusterState, path: str, fraction: float) -> dict[str, int]:
    usage = state.usage[path]
    return {kind: int(usage.get(kind, 0) * fraction) for kind in TYPES}


@PROPERTY_SETTINGS
@given(state=clusters(), tenant=st.integers(0, 2), fraction=st.sampled_from([0.0, 0.3, 0.6, 0.9]))
def test_quota_plans_never_take_a_queue_below_its_guarantee(state, tenant, fraction):
    tenants = [q.path for q in state.config.queues if q.parent == "root"]
    path = tenants[tenant % len(tenants)]
    plan = plan_quota_change(state, path, lowered_quota(state, path, fraction), NOW)
    subtree = [q for q in state.hierarchy.queues if state.hierarchy.is_within(q, path)]
    assert guarantee_kept(state, plan, subtree)
    victims = {a.id: a for a in state.running if a.id in set(plan.victims)}
    assert all(state.hierarchy.is_within(v.queue, path) for v in victims.values())
    assert all(v.required_node is None for v in victims.values())


@PROPERTY_SETTINGS
@given(state=clusters(), fraction=st.sampled_from([0.0, 0.25, 0.5, 0.75]))
def test_quota_plans_free_the_target_when_nothing_constrains_them(state, fraction):
    # No guarantees anywhere: every task in the queue is an acceptable victim.
    unconstrained = replace(
        state.config,
        queues=tuple(replace(q, guaranteed={}) for q in state.config.queues),
    )
    state = replace(state, config=unconstrained)
    path = next(q.path for q in state.config.queues if q.parent == "root")
    usage = state.usage[path]
    new_max = lowered_quota(state, path, fraction)
    plan = plan_quota_change(state, path, new_max, NOW)
    target = resources.positive_part(resources.subtract(usage, new_max))
    if resources.is_zero(target):
        assert plan.outcome == Outcome.NOT_TRIGGERED
        return
    assert plan.outcome == Outcome.COMPLETE
    for kind, amount in target.items():
        assert plan.freed.get(kind, 0) >= amount


@PROPERTY_SETTINGS
@given(state=clusters(), which=st.integers(0, 2))
def test_inter_queue_victims_respect_the_laws_and_the_fence(state, which):
    ask = state.asks[which]
    plan = plan_inter_queue(state, ask.id, NOW, Options())
    if not plan.victims:
        return
    fence = state.hierarchy.fence_root(ask.queue, ask.resources, state.usage)
    by_id = {a.id: a for a in state.running}
    for victim_id in plan.victims:
        victim = by_id[victim_id]
        assert victim.priority <= ask.priority  # law 6
        assert victim.app != ask.app  # law 3
        assert victim.allow_preemption  # law 1
        assert state.hierarchy.is_within(victim.queue, fence)  # law 7
        assert victim.queue != ask.queue
        assert victim.node == plan.node
    victim_queues = {by_id[v].queue for v in plan.victims}
    protected = set()
    for queue in victim_queues:
        for step in [queue, *state.hierarchy.ancestors(queue)]:
            if state.hierarchy.is_within(ask.queue, step):
                break  # from the lowest common ancestor up, law 2 does not apply
            protected.add(step)
    assert guarantee_kept(state, plan, sorted(protected))  # law 2


@PROPERTY_SETTINGS
@given(state=clusters(), which=st.integers(0, 2))
def test_priority_victims_are_strictly_lower_and_make_room(state, which):
    ask = state.asks[which]
    plan = plan_priority(state, ask.id, NOW, Options())
    if plan.outcome != Outcome.COMPLETE:
        assert not plan.victims
        return
    by_id = {a.id: a for a in state.running}
    assert all(by_id[v].priority < ask.priority for v in plan.victims)
    assert all(by_id[v].node == plan.node for v in plan.victims)
    node = state.nodes_by_name[plan.node]
    left = [a for a in state.running if a.node == node.name and a.id not in set(plan.victims)]
    used: dict[str, int] = {}
    for allocation in left:
        used = resources.add(used, allocation.resources)
    free = resources.subtract(node.capacity, used)
    assert all(free.get(kind, 0) >= amount for kind, amount in ask.resources.items())


@PROPERTY_SETTINGS
@given(state=clusters(), which=st.integers(0, 2))
def test_required_node_victims_run_on_the_node_and_never_outrank_the_ask(state, which):
    """Slow (about 20 s): a property test over many generated clusters (hypothesis)."""
    ask = replace(state.asks[which], required_node=state.nodes[0].name, job=None)
    state = replace(state, asks=(ask,))
    plan = plan_required_node(state, ask.id, NOW, Options())
    by_id = {a.id: a for a in state.running}
    for victim_id in plan.victims:
        victim = by_id[victim_id]
        assert victim.node == ask.required_node
        assert victim.priority <= ask.priority
        assert victim.required_node is None
    assert len(plan.victims) <= max(Options().max_victims, 1)


@PROPERTY_SETTINGS
@given(state=clusters())
def test_job_victims_are_preemptible_and_lower_priority(state):
    jobs = sorted({ask.job for ask in state.asks if ask.job})
    if not jobs:
        return
    plan = plan_job(state, jobs[0], NOW, Options())
    job_priority = max(a.priority for a in state.asks if a.job == jobs[0])
    by_id = {a.id: a for a in state.running}
    for victim_id in plan.victims:
        assert by_id[victim_id].allow_preemption
        assert by_id[victim_id].priority < job_priority
    if plan.outcome != Outcome.COMPLETE:
        assert not plan.victims


@PROPERTY_SETTINGS
@given(state=clusters(), seed=st.integers(0, 10_000), which=st.integers(0, 2))
def test_shuffling_the_input_never_changes_a_plan(state, seed, which):
    other = shuffled(state, seed)
    ask = state.asks[which]
    tenant = next(q.path for q in state.config.queues if q.parent == "root")
    new_max = lowered_quota(state, tenant, 0.5)
    pinned = replace(ask, required_node=state.nodes[0].name)
    calls = [
        lambda s: plan_quota_change(s, tenant, new_max, NOW),
        lambda s: plan_inter_queue(s, ask.id, NOW, Options()),
        lambda s: plan_priority(s, ask.id, NOW, Options()),
        lambda s: plan_required_node(
            replace(s, asks=(*[a for a in s.asks if a.id != ask.id], pinned)),
            ask.id,
            NOW,
            Options(),
        ),
    ]
    jobs = sorted({a.job for a in state.asks if a.job})
    if jobs:
        calls.append(lambda s: plan_job(s, jobs[0], NOW, Options()))
    for call in calls:
        assert call(state).to_json() == call(other).to_json()


def test_plan_quota_is_exported_for_callers_that_already_applied_the_change():
    # plan_quota takes a state whose config already holds the new max (the services' path).
    config = PartitionConfig(
        settings=PartitionSettings(name="default", quota_preemption_enabled=True),
        queues=(
            QueueConfig.child_of(None, "root"),
            QueueConfig.child_of(
                "root", "q", max={"vcore": 1000}, properties={"quota.preemption.delay": "30s"}
            ),
        ),
    )
    state = ClusterState(
        config=config,
        nodes=(Node("n1", {"vcore": 8000}),),
        allocations=(Allocation("a1", "x", "root.q", "n1", {"vcore": 2000}),),
    )
    plan = plan_quota(state, "root.q", NOW)
    assert plan.victims == ("a1",) and plan.outcome == Outcome.COMPLETE
