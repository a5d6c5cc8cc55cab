"""``preemption.explain``: every candidate's specific reason, with its numbers, its place in the
policy's order and what remained before and after it, on small clusters built here, plus a sweep
over every scenario file (every reason code gets a specific text, and explaining never changes or
contradicts a plan)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.explain import CandidateRecord, amounts, explain, ordinal, subject_facts
from preemption.explanations.quota import in_quota_order
from preemption.model import (
    Allocation,
    Ask,
    ClusterState,
    Node,
    Options,
    Outcome,
    Plan,
    QoS,
    Reason,
)
from preemption.policies import (
    plan_inter_queue,
    plan_priority,
    plan_quota,
    plan_required_node,
    with_new_max,
)
from preemption.quota import victim_order_key
from preemption.scenario import decide, load_scenario
from tests.support.scenario_files import PlannedScenario, planned_scenarios

GI = 1024**3
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
DELAY = {"quota.preemption.delay": "60s"}
ROOT = Path(__file__).resolve().parents[2]


def at(minute: int) -> datetime:
    return datetime(2026, 1, 1, 8, tzinfo=UTC) + timedelta(minutes=minute)


def task(id_: str, queue: str, minute: int = 0, node: str = "n1", **fields: object) -> Allocation:
    memory = fields.pop("memory", None)
    vcore = fields.pop("vcore", None)
    amounts_: dict[str, int] = {}
    if memory is not None:
        amounts_["memory"] = int(memory) * GI  # type: ignore[call-overload]
    if vcore is not None:
        amounts_["vcore"] = int(vcore) * 1000  # type: ignore[call-overload]
    return Allocation(
        id=id_,
        app=str(fields.pop("app", f"app-{id_}")),
        queue=queue,
        node=node,
        resources=amounts_,
        created_at=at(minute),
        **fields,  # type: ignore[arg-type]
    )


def config(*queues: QueueConfig, **settings: object) -> PartitionConfig:
    return PartitionConfig(
        settings=PartitionSettings(name="default", **settings),  # type: ignore[arg-type]
        queues=(QueueConfig.child_of(None, "root"), *queues),
    )


def by_id(records: list[CandidateRecord]) -> dict[str, CandidateRecord]:
    return {record.candidate: record for record in records}


def test_ordinals_and_amounts_read_as_people_write_them():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]  # fmt: skip
    assert amounts({"vcore": 1500, "memory": 580 * GI}) == "memory 580Gi, vcore 1500m"
    assert amounts({}) == "nothing"


# --------------------------------------------------------------------------------------------
# Quota
# --------------------------------------------------------------------------------------------


def quota_leaf() -> tuple[ClusterState, Plan]:
    """root.a (guaranteed 300Gi) uses 310Gi and its max is lowered to 290Gi: target 10Gi."""
    state = ClusterState(
        config=config(
            QueueConfig.child_of("root", "a", guaranteed={"memory": 300 * GI}, properties=DELAY),
            quota_preemption_enabled=True,
        ),
        nodes=(Node("n1", {"memory": 1024 * GI, "vcore": 100_000}),),
        allocations=(
            task("big", "root.a", 50, memory=20),
            task("s1", "root.a", 40, memory=5),
            task("s2", "root.a", 30, memory=5),
            task("s3", "root.a", 20, memory=5),
            task("ds", "root.a", 55, memory=5, required_node="n1"),
            task("cpu", "root.a", 56, vcore=1),
            task("base", "root.a", 0, memory=270, originator=True, allow_preemption=False),
        ),
    )
    state = with_new_max(state, "root.a", {"memory": 290 * GI})
    return state, plan_quota(state, "root.a", NOW)


def test_quota_victims_say_their_place_in_the_order_and_what_remained():
    state, plan = quota_leaf()
    assert plan.victims == ("s1", "s2") and plan.outcome == Outcome.COMPLETE
    records = by_id(explain(state, plan, "root.a"))
    s1, s2 = records["s1"], records["s2"]
    assert (s1.position, s1.rank, s2.position, s2.rank) == (1, 2, 2, 3)
    assert s1.detail == (
        "victim #1, 2nd in the order of root.a: non-originator, priority 0, preemption allowed, "
        "created 2026-01-01T08:40:00Z; root.a had memory 10Gi left to free before it, memory 5Gi "
        "after"
    )
    assert s1.remaining_before == {"root.a": {"memory": 10 * GI}}
    assert s1.remaining_after == {"root.a": {"memory": 5 * GI}}
    assert s2.detail.endswith("memory 5Gi left to free before it, 0 (root.a's target is met) after")
    assert s2.remaining_after == {"root.a": {}}


def test_quota_law2_names_the_queue_the_guarantee_the_usage_and_the_task():
    state, plan = quota_leaf()
    big = by_id(explain(state, plan, "root.a"))["big"]
    assert big.reason == Reason.LAW2_BELOW_GUARANTEE and big.rank == 1
    assert big.detail.endswith(
        "but it would take root.a below its guarantee of memory 300Gi (usage 310Gi, task 20Gi)"
    )


def test_quota_not_needed_static_rules_and_facts():
    state, plan = quota_leaf()
    records = by_id(explain(state, plan, "root.a"))
    assert records["s3"].detail.startswith(
        "target already met: root.a remaining 0 after the 2nd victim (s2); 4th in the order of "
        "root.a: non-originator, priority 0, preemption allowed"
    )
    assert records["base"].detail.startswith("target already met")
    assert "originator, priority 0, opted out of preemption" in records["base"].detail
    assert records["ds"].detail == "DaemonSet pod (required node n1): never a quota victim"
    assert records["cpu"].detail == (
        "uses vcore 1; root.a has to free memory 10Gi: no type in common"
    )
    facts = records["base"]
    assert (facts.queue, facts.application, facts.node, facts.priority) == (
        "root.a", "app-base", "n1", 0,
    )  # fmt: skip
    assert (facts.originator, facts.allow_preemption, facts.created_at) == (True, False, at(0))
    assert facts.resources == {"memory": 270 * GI} and facts.rank == 5
    assert records["ds"].required_node == "n1" and records["ds"].rank is None


def test_quota_leaves_without_a_share_are_told_why():
    """root.p is lowered; x is at its guarantee (nothing releasable), z has a run in progress,
    y gives everything."""
    queues = (
        QueueConfig.child_of("root", "p", properties=DELAY),
        QueueConfig.child_of("root.p", "x", guaranteed={"memory": 100 * GI}),
        QueueConfig.child_of("root.p", "y"),
        QueueConfig.child_of("root.p", "z"),
    )
    state = ClusterState(
        config=config(*queues, quota_preemption_enabled=True),
        nodes=(Node("n1", {"memory": 1024 * GI}),),
        allocations=(
            task("x1", "root.p.x", 1, memory=100),
            task("y1", "root.p.y", 2, memory=100),
            task("y2", "root.p.y", 3, memory=100),
            task("z1", "root.p.z", 4, memory=50),
        ),
        running_runs=frozenset({"root.p.z"}),
    )
    state = with_new_max(state, "root.p", {"memory": 250 * GI})
    plan = plan_quota(state, "root.p", NOW)
    records = by_id(explain(state, plan, "root.p"))
    assert plan.victims == ("y2",)
    assert records["x1"].detail == (
        "not needed: root.p.x got no share of root.p's target memory 100Gi: root.p.x usage "
        "memory 100Gi is not above its guarantee memory 100Gi, so it has nothing releasable"
    )
    assert records["z1"].detail == (
        "not needed: root.p.z got no share of root.p's target memory 100Gi: a run is in progress "
        "on root.p.z, so root.p.z takes no part"
    )
    assert subject_facts(state, plan, "root.p") == {
        "queue": "root.p", "usage": {"memory": 350 * GI}, "max": {"memory": 250 * GI},
        "guaranteed": {}, "target": {"memory": 100 * GI},
    }  # fmt: skip


def test_a_plan_without_explanations_has_no_records():
    state, _ = quota_leaf()
    relaxed = with_new_max(state, "root.a", {"memory": 400 * GI})
    plan = plan_quota(relaxed, "root.a", NOW)
    assert plan.outcome == Outcome.NOT_TRIGGERED and explain(relaxed, plan, "root.a") == []


# --------------------------------------------------------------------------------------------
# Inter-queue
# --------------------------------------------------------------------------------------------


def inter_queue_cluster() -> tuple[ClusterState, Plan]:
    """An ask of 40Gi (priority 5) in root.prod, under its guarantee; n1 is full. root.research
    uses 580Gi against a 300Gi guarantee; root.batch is within its guarantee."""
    queues = (
        QueueConfig.child_of("root", "prod", guaranteed={"memory": 100 * GI}),
        QueueConfig.child_of("root", "research", guaranteed={"memory": 300 * GI}),
        QueueConfig.child_of("root", "batch", guaranteed={"memory": 100 * GI}),
        QueueConfig.child_of("root", "spare"),
    )
    allocations = (
        task("p1", "root.prod", 1, memory=20, app="web"),
        task("r1", "root.research", 30, memory=100),
        task("r2", "root.research", 20, memory=100),
        task("r-high", "root.research", 40, memory=100, priority=10),
        task("r-web", "root.research", 41, memory=100, app="web"),
        task("r-opt", "root.research", 42, memory=100, allow_preemption=False),
        task("r-ds", "root.research", 43, memory=80, required_node="n1"),
        task("b1", "root.batch", 5, memory=40),
        task("r-far", "root.spare", 5, node="n2", memory=100),
    )
    state = ClusterState(
        config=config(*queues),
        nodes=(Node("n1", {"memory": 640 * GI}), Node("n2", {"memory": 100 * GI})),
        allocations=allocations,
        asks=(Ask("k", "web", "root.prod", {"memory": 40 * GI}, priority=5, created_at=at(0)),),
    )
    return state, plan_inter_queue(state, "k", NOW, Options())


def test_inter_queue_victim_gives_law5_numbers_its_order_and_what_the_ask_still_needed():
    state, plan = inter_queue_cluster()
    assert plan.victims == ("r1",) and plan.node == "n1"
    r1 = by_id(explain(state, plan, "k"))["r1"]
    assert r1.detail == (
        "victim #1, 1st on n1 in the order: priority 0, non-originator, created "
        "2026-01-01T08:30:00Z; root.research usage memory 580Gi above guarantee 300Gi; the ask "
        "still needed memory 40Gi on n1 before it, nothing after"
    )
    assert r1.remaining_before == {"node n1": {"memory": 40 * GI}}
    assert r1.remaining_after == {}


def test_inter_queue_task_and_queue_rules_carry_their_numbers():
    state, plan = inter_queue_cluster()
    records = by_id(explain(state, plan, "k"))
    assert records["r-high"].detail == (
        "priority 10 > ask priority 5: only lower or equal priorities may go"
    )
    assert records["r-web"].detail == "same application web as the ask k"
    assert records["r-opt"].detail == "allow_preemption is false: the task opted out of preemption"
    assert records["r-ds"].detail.startswith("DaemonSet pod itself (required node n1)")
    assert records["b1"].detail == (
        "root.batch usage memory 40Gi not above guarantee 100Gi: not above its guarantee on any "
        "type of the ask"
    )
    assert records["p1"].detail == (
        "in the ask's own queue root.prod, which is under its guarantee (usage memory 20Gi below "
        "guarantee 100Gi)"
    )
    assert records["r2"].detail.startswith(
        "not needed: the ask fits n1 after victim #1 (r1); 2nd on n1 in the order"
    )
    assert records["r-far"].detail == "runs on n2; the plan chose n1"
    assert subject_facts(state, plan, "k") == {
        "ask": "k", "application": "web", "queue": "root.prod", "priority": 5,
        "resources": {"memory": 40 * GI}, "created_at": "2026-01-01T08:00:00Z",
        "preemption_policy": "PreemptLowerPriority", "required_node": "", "fence": "root",
    }  # fmt: skip


def test_inter_queue_fence_disabled_and_law2():
    queues = (
        QueueConfig.child_of("root", "tenant", properties={"preemption.policy": "fence"}),
        QueueConfig.child_of("root.tenant", "a", guaranteed={"vcore": 4000}),
        QueueConfig.child_of("root.tenant", "b", guaranteed={"vcore": 5000}),
        QueueConfig.child_of("root.tenant", "off", properties={"preemption.policy": "disabled"}),
        QueueConfig.child_of("root", "other"),
    )
    state = ClusterState(
        config=config(*queues),
        nodes=(Node("n1", {"vcore": 10_000}),),
        allocations=(
            task("b1", "root.tenant.b", 10, vcore=3),
            task("b2", "root.tenant.b", 9, vcore=3),
            task("o1", "root.tenant.off", 8, vcore=2),
            task("x1", "root.other", 7, vcore=2),
        ),
        asks=(Ask("k", "app-k", "root.tenant.a", {"vcore": 2000}, created_at=at(0)),),
    )
    plan = plan_inter_queue(state, "k", NOW, Options())
    records = by_id(explain(state, plan, "k"))
    assert plan.outcome == Outcome.DOES_NOT_HELP
    assert records["x1"].detail == (
        "root.other is outside the ask's fence root root.tenant (root.tenant has "
        "preemption.policy fence)"
    )
    assert records["o1"].detail == "root.tenant.off has preemption.policy disabled"
    assert records["b1"].detail.endswith(
        "but it would take root.tenant.b below its guarantee of vcore 5 (usage 6, task 3)"
    )


# --------------------------------------------------------------------------------------------
# Priority
# --------------------------------------------------------------------------------------------


def test_priority_seed_example_victim_reprieved_and_equal_priority():
    """Seed 003: capacity 10, the ask needs 5 at priority 10; p0:3, p1:1, p2:5, p3:1 run, and a
    priority-10 pod of 0 cores... only p2 goes."""
    allocations = (
        task("q0", "root.a", vcore=3, priority=0),
        task("q1", "root.a", vcore=1, priority=1),
        task("q2", "root.a", vcore=5, priority=2, qos=QoS.BEST_EFFORT),
        task("q3", "root.a", vcore=1, priority=3),
        task("eq", "root.a", node="n2", vcore=4, priority=10),
    )
    state = ClusterState(
        config=config(QueueConfig.child_of("root", "a")),
        nodes=(Node("n1", {"vcore": 10_000}), Node("n2", {"vcore": 4000})),
        allocations=allocations,
        asks=(Ask("k", "app-k", "root.a", {"vcore": 5000}, priority=10, created_at=at(0)),),
    )
    plan = plan_priority(state, "k", NOW, Options())
    assert plan.victims == ("q2",)
    records = by_id(explain(state, plan, "k"))
    q2 = records["q2"]
    assert (q2.position, q2.rank, q2.qos) == (1, 2, "BestEffort")
    assert q2.detail == (
        "victim #1, 2nd in the reprieve walk: priority 2, QoS BestEffort, created "
        "2026-01-01T08:00:00Z; putting it back would leave the ask short of vcore 1 on n1; the "
        "ask lacked vcore 5 on n1 before it, nothing after"
    )
    assert q2.remaining_before == {"node n1": {"vcore": 5000}}
    assert records["q3"].detail.startswith(
        "reprieved, 1st in the reprieve walk: priority 3, QoS Burstable (unset)"
    )
    assert "free room vcore 10 before putting it back, vcore 9 after" in records["q3"].detail
    assert records["eq"].detail == ("priority 10 = ask priority 10: only lower priorities may go")


def test_priority_budget_violation_names_the_budget_and_who_used_it():
    path = ROOT / "tests/scenarios/priority/pdb-budget-used-by-more-important.yaml"
    scenario = load_scenario(path)
    plan = decide(scenario)
    _, ask_id = scenario.action
    records = by_id(explain(scenario.state, plan, ask_id, scenario.options))
    violating = [r for r in records.values() if r.reason == Reason.BUDGET_VIOLATION]
    assert [r.candidate for r in violating] == ["w1"]
    assert violating[0].budget == "web" and violating[0].accepted
    assert violating[0].detail.endswith(
        "its disruption budget web allows 1 disruption(s), used up by more important pods (w2)"
    )


def test_priority_with_no_possible_node_says_so():
    state = ClusterState(
        config=config(QueueConfig.child_of("root", "a")),
        nodes=(Node("n1", {"vcore": 4000}),),
        allocations=(task("l", "root.a", vcore=4, priority=1),),
        asks=(Ask("k", "app-k", "root.a", {"vcore": 5000}, priority=10, created_at=at(0)),),
    )
    plan = plan_priority(state, "k", NOW, Options())
    [record] = explain(state, plan, "k")
    assert record.detail == (
        "no node can make room for the ask (even with every lower-priority task gone the ask "
        "would not fit n1): nobody is preempted"
    )


# --------------------------------------------------------------------------------------------
# Required node and job
# --------------------------------------------------------------------------------------------


def test_required_node_single_and_multiple_strategies():
    allocations = (
        task("small", "root.a", 30, vcore=1),
        task("fit", "root.a", 20, vcore=2),
        task("opt", "root.a", 10, vcore=2, allow_preemption=False),
    )
    state = ClusterState(
        config=config(QueueConfig.child_of("root", "a")),
        nodes=(Node("n1", {"vcore": 5000}),),
        allocations=allocations,
        asks=(
            Ask("ds", "app-ds", "root.a", {"vcore": 2000}, required_node="n1", created_at=at(0)),
        ),
    )
    plan = plan_required_node(state, "ds", NOW, Options())
    records = by_id(explain(state, plan, "ds"))
    assert plan.victims == ("fit",)
    assert records["fit"].detail.startswith(
        "victim #1, the single victim: alone it frees what n1 lacks (vcore 2) and its size "
        "deviates 0% from the ask's (limit 10%); 2nd in the order: class regular, priority 0"
    )
    assert records["small"].detail.startswith(
        "as the single victim it is too small: n1 lacks vcore 2 and it frees vcore 1"
    )
    assert records["opt"].detail.startswith(
        "not needed: its class opted out comes after the single victim's class regular"
    )

    few = Options(victim_strategy=("multiple",), max_victims=1)
    greedy = ClusterState(
        config=state.config,
        nodes=state.nodes,
        allocations=(task("t1", "root.a", 1, vcore=3), task("t2", "root.a", 2, vcore=2)),
        asks=(
            Ask("ds", "app-ds", "root.a", {"vcore": 4000}, required_node="n1", created_at=at(0)),
        ),
    )
    plan = plan_required_node(greedy, "ds", NOW, few)
    assert plan.outcome == Outcome.DOES_NOT_HELP
    t2 = by_id(explain(greedy, plan, "ds", few))["t2"]
    assert t2.reason == Reason.TOO_MANY_VICTIMS
    assert t2.detail.endswith(
        "making room on n1 (vcore 4 lacking) would need more than max_victims 1 victims: "
        "nobody is preempted"
    )


def test_job_victim_kept_out_by_admission_gives_the_inequality():
    path = ROOT / "tests/scenarios/job/reprieve-checks-admission.yaml"
    scenario = load_scenario(path)
    plan = decide(scenario)
    records = by_id(explain(scenario.state, plan, scenario.action[1]))
    assert records["m1"].detail.endswith(
        "with it kept root.ml would no longer admit the job (nvidia.com/gpu: min(guarantee 0, "
        "non-preemptible usage 0) + preemptible usage 4 + request 8 > max 8)"
    )
    assert records["x1"].reason == Reason.NOT_NEEDED_AFTER_REPRIEVE
    assert records["x1"].detail.startswith("reprieved, 2nd in the reprieve walk")
    facts = subject_facts(scenario.state, plan, scenario.action[1])
    assert facts["job"] == scenario.action[1] and facts["queue"] == "root.ml"


# --------------------------------------------------------------------------------------------
# Every scenario
# --------------------------------------------------------------------------------------------


def _explained_scenarios() -> list[tuple[PlannedScenario, list[CandidateRecord]]]:
    return [
        (planned, explain(planned.state, planned.plan, planned.subject, planned.options))
        for planned in planned_scenarios()
    ]


def test_every_scenario_plan_is_described_candidate_by_candidate_without_contradiction():
    seen: set[Reason] = set()
    for (path, plan, *_), records in _explained_scenarios():
        assert [r.candidate for r in records] == [e.candidate for e in plan.explanations], path
        for record, explanation in zip(records, plan.explanations, strict=True):
            assert (record.accepted, record.reason) == (explanation.accepted, explanation.reason)
            assert not record.detail.startswith("reason "), (path, record)
            if record.accepted:
                assert record.position == plan.victims.index(record.candidate) + 1, path
                assert record.detail.startswith(f"victim #{record.position}"), (path, record)
        seen.update(record.reason for record in records)
    assert seen == set(Reason)  # every reason code is met, and none falls back to its code


def test_explaining_only_some_candidates_gives_their_records_of_the_full_explanation():
    """``only`` (a preview explains its first candidates): each record is the one the full
    list has, whichever candidates are left out before it in the policy's walk."""
    checked = 0
    for (path, plan, state, subject, options), records in _explained_scenarios():
        ids = [record.candidate for record in records]
        for picked in (set(ids[::2]), set(ids[1::3]), {ids[-1], "no-such-task"} if ids else set()):
            got = explain(state, plan, subject, options, only=picked)
            assert got == [record for record in records if record.candidate in picked], path
            checked += 1
    assert checked > 30


def test_explaining_only_a_later_leaf_counts_what_the_leaves_before_it_took():
    """A guarded ancestor (root.t) is taken down by the victims of every leaf walked before:
    a candidate of the second leaf explained alone reads what the first leaf's victims took."""
    queues = (
        QueueConfig.child_of("root", "t", guaranteed={"memory": 300 * GI}),
        QueueConfig.child_of("root.t", "p", properties=DELAY),
        QueueConfig.child_of("root.t.p", "a"),
        QueueConfig.child_of("root.t.p", "b"),
    )
    state = ClusterState(
        config=config(*queues, quota_preemption_enabled=True),
        nodes=(Node("n1", {"memory": 1024 * GI}),),
        allocations=tuple(
            task(f"{leaf}{n}", f"root.t.p.{leaf}", n, memory=100) for leaf in "ab" for n in (1, 2)
        ),
    )
    state = with_new_max(state, "root.t.p", {"memory": 100 * GI})
    plan = plan_quota(state, "root.t.p", NOW)
    every = by_id(explain(state, plan, "root.t.p"))
    later = [r for r in every.values() if r.queue == "root.t.p.b"]
    assert any(r.reason == Reason.LAW2_BELOW_GUARANTEE for r in later), every
    for record in later:
        assert explain(state, plan, "root.t.p", only={record.candidate}) == [record]


def test_the_replay_sorts_quota_candidates_in_the_policys_order():
    rng = random.Random(7)
    tasks = [
        task(
            f"t{rng.randrange(40):02d}-{n}", "root.a", rng.choice([0, 1, 1, 2]), memory=1,
            priority=rng.choice([-1, 0, 0, 5]), originator=rng.random() < 0.2,
            allow_preemption=rng.random() < 0.8,
        )
        for n in range(400)
    ]  # fmt: skip
    walk = list(tasks)
    in_quota_order(walk)
    assert walk == sorted(tasks, key=victim_order_key)


def test_quota_tasks_left_in_a_deleted_queue_are_told_why():
    """root.p.gone was removed from the config while its task still runs: the plan explains the
    task but gives the unconfigured path no share; the record says so (it used to raise
    KeyError walking the path from root)."""
    queues = (
        QueueConfig.child_of("root", "p", properties=DELAY),
        QueueConfig.child_of("root.p", "y"),
    )
    state = ClusterState(
        config=config(*queues, quota_preemption_enabled=True),
        nodes=(Node("n1", {"memory": 1024 * GI}),),
        allocations=(
            task("y1", "root.p.y", 2, memory=100),
            task("y2", "root.p.y", 3, memory=100),
            task("g1", "root.p.gone", 1, memory=100),
        ),
    )
    state = with_new_max(state, "root.p", {"memory": 150 * GI})
    plan = plan_quota(state, "root.p", NOW)
    records = by_id(explain(state, plan, "root.p"))
    assert plan.victims == ("y2",)
    assert records["g1"].detail == (
        "not needed: root.p.gone is not in the config (removed, its tasks still running), so it "
        "gets no share of root.p's target memory 50Gi"
    )
