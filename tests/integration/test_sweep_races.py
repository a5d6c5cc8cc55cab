"""Sweepers that overlap (two beats, or a sweep slower than its period) on real PostgreSQL.

A leaf and its parent fall due in the same sweep. One sweeper alone fires the leaf, defers the
parent while the leaf's run is active, and runs the parent afterwards on the state the leaf's run
left (SPEC 4.1). Two sweepers released at the same instant must do exactly that too: the rule
"deferred while a related run is active" is decided in the database when the run is created, so
the sweeper that lost the leaf's timer to the other does not fire the parent on its stale read
(which used to preempt the parent's share a second time, and to end in spurious runs).

The sweepers are threads with their own database connections, started by a barrier; each trial
has a partition of its own, so trials are independent and nothing is flushed in between.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
import time_machine

from preemption.model import Options
from preemption.policies import plan_ask
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.adapters import load_cluster_state
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    TimerStatus,
)
from scheduler_admin.enforcement.runs import creation
from scheduler_admin.queues.models import Partition
from tests.support.asks import CORES_NODE, batch_tasks
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import lower_max, saved_partition
from tests.support.racing import release_together_or_raise
from tests.support.team import GB, START, task

pytestmark = pytest.mark.django_db(transaction=True)

TRIALS = 10
CONFIG = """
partitions:
  - name: NAME
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: team
            resources: {max: {memory: 400G}}
            properties: {quota.preemption.delay: 1s}
            queues:
              - name: a
              - name: b
"""


def make_partition(name: str) -> None:
    """team.a and team.b run eight 10G tasks each (16 in all, 160G)."""
    with time_machine.travel(START, tick=False):
        partition = saved_partition(CONFIG.replace("NAME", name))
        ingest(
            partition,
            [task(f"{leaf}{n}", f"root.team.{leaf}", 10, n) for leaf in "ab" for n in range(1, 9)],
        )
        # A new queue with a max starts no timer; lower b (80G -> 40G) and team (160G -> 110G).
        for path, memory in (("root.team.b", 40), ("root.team", 110)):
            lower_max(path, memory, START, partition=name)
    assert QuotaTimer.objects.filter(partition__name=name, status=TimerStatus.PENDING).count() == 2


def related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def active_runs(name: str) -> list[str]:
    return list(
        PreemptionRun.objects.filter(
            partition__name=name, status__in=ACTIVE_RUN_STATUSES
        ).values_list("queue_path", flat=True)
    )


def enforce(name: str, sweepers: int) -> dict[str, object]:
    """Sweep the due timers with ``sweepers`` sweepers at once, then keep executing the active
    runs (all at once) and sweeping (one sweeper, a second later each time) until nothing is
    pending or active; returns what happened."""
    concurrent_runs: list[list[str]] = []
    clock = START + timedelta(seconds=2)
    with time_machine.travel(clock, tick=False):
        release_together_or_raise(*[lambda now=clock: runs.sweep_due_quota_timers(now)] * sweepers)
    concurrent_runs.append(active_runs(name))
    for step in itertools.count():
        assert step < 20, "enforcement did not settle"
        # Active runs execute at once, as on a worker with several slots.
        active = PreemptionRun.objects.filter(partition__name=name, status__in=ACTIVE_RUN_STATUSES)
        with time_machine.travel(clock, tick=False):
            release_together_or_raise(
                *[
                    lambda run_id=run_id: runs.execute_run(run_id, worker=f"w{run_id}")
                    for run_id in active.values_list("pk", flat=True)
                ]
            )
        clock += timedelta(seconds=1)
        pending = QuotaTimer.objects.filter(partition__name=name, status=TimerStatus.PENDING)
        if not pending.exists() and not active_runs(name):
            break
        with time_machine.travel(clock, tick=False):
            runs.sweep_due_quota_timers(clock)
        concurrent_runs.append(active_runs(name))
    evicted = sorted(
        EvictionOrder.objects.filter(partition__name=name).values_list("allocation_id", flat=True)
    )
    preempting = Allocation.objects.filter(
        partition__name=name, state=AllocationState.PREEMPTING
    ).count()
    assert preempting == len(evicted)
    return {
        "evicted": evicted,
        "runs": list(
            PreemptionRun.objects.filter(partition__name=name)
            .order_by("pk")
            .values_list("queue_path", "outcome")
        ),
        "concurrent": concurrent_runs,
    }


def test_two_sweepers_at_once_preempt_exactly_what_one_sweeper_does() -> None:
    """Slow (about 20 s): two real sweeper processes race, repeated, against a reference run by one
    sweeper."""
    make_partition("alone")
    alone = enforce("alone", sweepers=1)
    # One sweeper: b's run first (4 of b's tasks), then team's run on what is left (160G - 40G
    # = 120G against 110G: one task each from a and b, by their releasable shares).
    assert [path for path, _ in alone["runs"]] == ["root.team.b", "root.team"]
    assert all(outcome == "complete" for _, outcome in alone["runs"])
    assert len(alone["evicted"]) == 6

    failures = []
    for trial in range(TRIALS):
        name = f"race{trial}"
        make_partition(name)
        raced = enforce(name, sweepers=2)
        overlapping = [
            queues
            for queues in raced["concurrent"]
            if any(related(x, y) for x, y in itertools.combinations(queues, 2))
        ]
        if overlapping or raced["runs"] != alone["runs"] or len(raced["evicted"]) != 6:
            failures.append((trial, raced["runs"], len(raced["evicted"]), overlapping))
    assert not failures, f"{len(failures)} of {TRIALS} trials differ from one sweeper: {failures}"


# --- Many timers in one sweep ---------------------------------------------------------------

MANY_LEAVES = 12
MANY_CONFIG = """
partitions:
  - name: NAME
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: team
            resources: {max: {memory: TEAMG}}
            properties: {quota.preemption.delay: 1s}
            queues:
LEAVES
"""


def many_config(name: str, *, team: int, leaves: dict[str, int]) -> str:
    rows = []
    for leaf in (f"l{n:02d}" for n in range(MANY_LEAVES)):
        rows.append(f"              - name: {leaf}")
        if leaf in leaves:
            rows.append(f"                resources: {{max: {{memory: {leaves[leaf]}G}}}}")
    return (
        MANY_CONFIG.replace("NAME", name)
        .replace("TEAM", str(team))
        .replace("LEAVES", "\n".join(rows))
    )


def make_many_timers_partition(name: str) -> None:
    """Twelve leaves of 20G each (two 10G tasks) under team; one saved change gives four of
    them a 15G max (over it: they run), the other eight 50G (within: not needed), and lowers
    team from 2000G to 1000G (within, but deferred behind its leaves' runs, which go first)."""
    with time_machine.travel(START, tick=False):
        partition = saved_partition(many_config(name, team=2000, leaves={}))
        ingest(
            partition,
            [
                task(f"l{leaf:02d}-{n}", f"root.team.l{leaf:02d}", 10, n)
                for leaf in range(MANY_LEAVES)
                for n in range(2)
            ],
        )
        limits = {f"l{n:02d}": 15 if n < 4 else 50 for n in range(MANY_LEAVES)}
        saved_partition(many_config(name, team=1000, leaves=limits), comment="limits")
    pending = QuotaTimer.objects.filter(partition__name=name, status=TimerStatus.PENDING)
    assert pending.count() == MANY_LEAVES + 1


def sweep_outcome(name: str) -> dict[str, object]:
    """Each timer's status (deferred apart), the runs, and the sweep's audit events per timer."""
    timers = QuotaTimer.objects.filter(partition__name=name).order_by("queue_path")
    events = AuditEvent.objects.filter(partition_name=name).exclude(
        kind__in=[AuditKind.TIMER_STARTED, AuditKind.CONFIG_CHANGED, AuditKind.STATE_INGESTED]
    )
    return {
        "timers": [(t.queue_path, "deferred" if t.deferred_since else t.status) for t in timers],
        "runs": sorted(
            PreemptionRun.objects.filter(partition__name=name).values_list(
                "queue_path", "timer__queue_path"
            )
        ),
        "events": sorted(events.values_list("kind", "queue_path")),
    }


def test_two_sweepers_of_many_timers_at_once_write_each_outcome_once() -> None:
    """Thirteen timers fall due together (four run, eight are not needed, one is deferred):
    two sweepers released at the same instant leave exactly what one sweeper leaves: one run
    per fired timer, each timer ended or deferred once, one audit event for each of those."""
    make_many_timers_partition("many-alone")
    clock = START + timedelta(seconds=2)
    with time_machine.travel(clock, tick=False):
        runs.sweep_due_quota_timers(clock)
    alone = sweep_outcome("many-alone")
    statuses = [status for _, status in alone["timers"]]
    assert statuses.count(TimerStatus.FIRED) == 4
    assert statuses.count(TimerStatus.NOT_NEEDED) == 8
    assert dict(alone["timers"])["root.team"] == "deferred"
    assert len(alone["events"]) == 4 + 8 + 1

    failures = []
    for trial in range(TRIALS):
        name = f"many{trial}"
        make_many_timers_partition(name)
        with time_machine.travel(clock, tick=False):
            release_together_or_raise(*[lambda: runs.sweep_due_quota_timers(clock)] * 2)
        raced = sweep_outcome(name)
        if raced != alone:
            failures.append((trial, raced))
    assert not failures, f"{len(failures)} of {TRIALS} trials differ from one sweeper: {failures}"


# --- Pending asks ---------------------------------------------------------------------------

ASK_CONFIG = """
partitions:
  - name: NAME
    queues:
      - name: root
        queues:
          - name: prod
            resources: {guaranteed: {vcore: "8"}}
            properties: {preemption.delay: 1s}
          - name: batch
            resources: {guaranteed: {vcore: "2"}}
"""


def make_ask_partition(name: str) -> None:
    """batch fills the node (four 2-core tasks); prod asks for 2 cores under its guarantee."""
    with time_machine.travel(START, tick=False):
        partition = saved_partition(ASK_CONFIG.replace("NAME", name), comment="x")
    ask = {"id": "k1", "queue": "root.prod", "app": "web", "resources": {"vcore": "2"},
           "created_at": START.isoformat()}  # fmt: skip
    ingest(partition, batch_tasks(first_hour=10), nodes=CORES_NODE, asks=[ask])


def test_two_ask_sweepers_at_once_start_one_run_and_take_each_victim_once() -> None:
    failures = []
    clock = START + timedelta(seconds=5)
    for trial in range(TRIALS):
        name = f"asks{trial}"
        make_ask_partition(name)
        with time_machine.travel(clock, tick=False):
            created = release_together_or_raise(*[lambda: runs.sweep_pending_asks(clock)] * 2)
            run_ids = [run_id for ids in created for run_id in ids]
            release_together_or_raise(
                *[lambda run_id=r: runs.execute_run(run_id, worker="w") for r in run_ids]
            )
        evicted = list(
            EvictionOrder.objects.filter(partition__name=name).values_list(
                "allocation_id", flat=True
            )
        )
        if len(run_ids) != 1 or evicted != ["b3"]:
            failures.append((trial, run_ids, evicted))
    assert not failures, f"{len(failures)} of {TRIALS} trials: {failures}"


def test_a_plan_read_before_another_run_took_its_victims_starts_no_run() -> None:
    """A sweep slower than its period: it planned the ask on a state read before another
    sweeper's run for the same ask was created, executed and finished. Deciding in the database
    when the run is created, it sees the victims are no longer running and starts nothing."""
    make_ask_partition("slow")
    partition = Partition.objects.get(name="slow")
    clock = START + timedelta(seconds=5)
    stale_state = load_cluster_state(partition, running_runs=frozenset())
    stale_plan = plan_ask(stale_state, "k1", clock, Options())
    assert stale_plan.victims == ("b3",)
    with time_machine.travel(clock, tick=False):
        [run_id] = runs.sweep_pending_asks(clock)
        runs.execute_run(run_id, worker="fast")
        ask = stale_state.asks_by_id["k1"]
        started = creation._start_ask_run(partition, stale_state, ask, stale_plan, clock, Options())
        assert started is None
    assert PreemptionRun.objects.filter(partition=partition).count() == 1
    assert EvictionOrder.objects.filter(partition=partition).count() == 1


def test_a_sweep_that_read_before_a_related_run_ended_leaves_the_timer_to_the_next_sweep() -> None:
    """A sweep slower than the leaf's whole run: it read the state before the leaf's run
    existed, so it would fire the parent on usage the leaf's run has since lowered. The fire
    sees the related run that ended after the read and leaves the timer pending; the next
    sweep decides on the state as it is then."""
    make_partition("slowparent")
    partition = Partition.objects.get(name="slowparent")
    clock = START + timedelta(seconds=2)
    parent = QuotaTimer.objects.get(partition=partition, queue_path="root.team")
    with time_machine.travel(clock, tick=False):
        stale = runs.read_for_sweep(partition)
    assert stale.state.usage["root.team"]["memory"] == 160 * GB  # over its 110G: it would run
    with time_machine.travel(clock + timedelta(seconds=1), tick=False):
        [leaf_run] = [
            run_id
            for run_id in runs.sweep_due_quota_timers(clock)
            if PreemptionRun.objects.get(pk=run_id).queue_path == "root.team.b"
        ]
        runs.execute_run(leaf_run, worker="w")
        assert runs.decide_due_timers(partition, clock, stale) == []
    parent.refresh_from_db()
    assert parent.status == TimerStatus.PENDING
    assert active_runs("slowparent") == []
    [parent_run] = runs.sweep_due_quota_timers(clock + timedelta(seconds=2))
    assert PreemptionRun.objects.get(pk=parent_run).queue_path == "root.team"
