"""Every scenario file yields the same decision through the services as through the engine alone.

``python -m preemption.scenario`` evaluates a file on a frozen state. Here the same file is loaded
into PostgreSQL through the services (``tests.support.scenario_db``) and the decision is made by
the live loop, as an admin and the cluster would cause it:

- ``quota``: the config is saved as in the file, then the admin lowers the max with
  ``update_queue`` at the scenario's ``now``; the timer sweep runs at the timer's ``due_at`` and
  the run is executed. Victims (as a set), outcome and explanations must equal ``decide``'s.
- ``inter_queue``, ``required_node``, ``priority``, ``job``: the ask sweep runs at ``now`` and the
  run it starts (if any) is executed. A ``not_triggered`` plan starts no run and leaves the ask
  alone; a ``does_not_help`` plan starts no run and makes the ask wait for a retry (SPEC 4.2).
- ``quota_timeline``: the changes are saved at their times, every timer is swept when it falls
  due and its run executed and its evictions acknowledged (the victims are released); the runs
  must be those of ``replay_timeline``.

Folders are read like ``tests/unit/test_scenarios.py``: new files are picked up without code
changes. A case that cannot be represented faithfully is skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import groupby
from pathlib import Path

import pytest
import time_machine

from preemption.errors import ConfigErrors
from preemption.hierarchy.partition_settings import _option_errors
from preemption.model import AskState, Outcome, Plan
from preemption.scenario import Scenario, decide, load_scenario, scenario_files
from preemption.timers import is_pure_increase, replay_timeline
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    RunStatus,
    TimerStatus,
)
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.services import save_partition_config, update_queue
from tests.support.scenario_db import (
    NotLoadable,
    hold_back_asks,
    load_scenario_into_db,
    scenario_config,
    start_running_runs,
)

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "scenarios"
OURS = REPO / "tests" / "scenarios"
FILES = scenario_files([str(folder) for folder in (SHARED, OURS) if folder.is_dir()])

#: The config and the cluster are loaded this long before the decision being tested.
LEAD = timedelta(days=1)
WORKER = "scenario-test"

#: Cases that disagree because of a product bug: label -> reason naming file, line and cause
#: (each is marked xfail(strict=True), so the fix shows up as XPASS).
KNOWN_BUGS: dict[str, str] = {}


def label(path: Path) -> str:
    return str(path.relative_to(REPO.parent))


def cases() -> Iterator[object]:
    for path in FILES:
        bug = KNOWN_BUGS.get(label(path))
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        yield pytest.param(path, marks=marks, id=label(path))


def test_every_shared_scenario_is_checked_through_the_services() -> None:
    assert SHARED.is_dir(), f"expected the shared scenarios at {SHARED}"
    shared = sorted(SHARED.rglob("*.yaml"))
    assert shared and all(path in FILES for path in shared)


@pytest.mark.parametrize("path", list(cases()))
def test_services_decide_like_the_engine(path: Path) -> None:
    scenario = load_scenario(path)
    try:
        if scenario.policy == "quota":
            check_quota(scenario)
        elif scenario.policy == "quota_timeline":
            check_timeline(scenario)
        else:
            check_ask(scenario)
    except NotLoadable as exc:
        pytest.skip(f"{path.name}: {exc}")


# --------------------------------------------------------------------------------------------
# quota: an admin lowers a max, the timer falls due, the run executes
# --------------------------------------------------------------------------------------------


def check_quota(scenario: Scenario) -> None:
    plan = decide(scenario)
    queue, new_max = scenario.action[1]
    if queue in scenario.state.running_runs:
        raise NotLoadable(f"a run is already active on {queue}: the services allow one per queue")
    old_max = scenario.state.config.queue(queue).max
    partition = load_scenario_into_db(scenario, at=scenario.now - LEAD, with_running_runs=False)

    with time_machine.travel(scenario.now, tick=False):
        version = Queue.objects.get(partition=partition, path=queue).version
        try:
            saved = update_queue(
                partition.name, queue, version=version, actor=None,
                comment="scenario: lower the max", max=new_max,
            )  # fmt: skip
        except ConfigErrors as exc:
            raise NotLoadable(f"SPEC 3.2 validation refuses the new max: {exc}") from None

    timer = QuotaTimer.objects.filter(
        partition=partition, queue_path=queue, status=TimerStatus.PENDING
    ).first()
    if timer is None:
        if plan.outcome != Outcome.NOT_TRIGGERED and not saved.changed:
            raise NotLoadable(
                "the new max equals the saved one: no change is saved, no timer starts"
            )
        if plan.outcome != Outcome.NOT_TRIGGERED and is_pure_increase(old_max, new_max):
            raise NotLoadable("the change only raises or removes types: SPEC 4.1 starts no timer")
        assert plan.outcome == Outcome.NOT_TRIGGERED, "the engine plans a run, but no timer started"
        assert runs.sweep_due_quota_timers(scenario.now + LEAD) == []
        return

    created = runs.sweep_due_quota_timers(timer.due_at)
    if plan.outcome == Outcome.NOT_TRIGGERED:
        assert created == []
        timer.refresh_from_db()
        assert timer.status in (TimerStatus.NOT_NEEDED, TimerStatus.CANCELLED)
        return
    assert len(created) == 1, f"the engine plans {plan.outcome}, the sweep started {created}"
    # The runs in progress start after the quota run was created: one that was active on a
    # relative when the timer fell due would have deferred the timer (SPEC 4.1) — but an ask's
    # run may start on a child meanwhile, and the quota run then plans around it.
    start_running_runs(partition, scenario.state.running_runs, at=timer.due_at)
    with time_machine.travel(timer.due_at, tick=False):
        run = runs.execute_run(created[0], worker=WORKER)
    assert run is not None
    assert (run.trigger, run.queue_path) == ("quota_timer", queue)
    assert_run_matches(run, plan)
    assert run.targets == {path: dict(amounts) for path, amounts in plan.targets.items()}
    assert run.freed == dict(plan.freed)


# --------------------------------------------------------------------------------------------
# inter_queue, required_node, priority, job: the ask sweep plans the scenario's ask
# --------------------------------------------------------------------------------------------


def check_ask(scenario: Scenario) -> None:
    plan = decide(scenario)
    if _option_errors(scenario_config(scenario).settings):
        raise NotLoadable(
            f"options {scenario.options} are outside what a partition setting may hold"
        )
    kind, value = scenario.action
    state = scenario.state
    if kind == "job":
        job_asks = sorted(
            (ask for ask in state.asks if ask.job == value and ask.state == AskState.PENDING),
            key=lambda ask: (ask.created_at, ask.id),
        )
        if not job_asks:
            raise NotLoadable(f"job {value} has no pending ask: the sweep never plans it")
        first, keep = job_asks[0], {ask.id for ask in job_asks}
    else:
        first, keep = state.ask(value), {value}
        if first.state != AskState.PENDING:
            raise NotLoadable(f"ask {value} is {first.state}: the sweep plans pending asks only")
    # Plain asks are planned by the partition's ask_policy: set it to the scenario's policy.
    ask_policy = scenario.policy if scenario.policy in ("inter_queue", "priority") else None
    chosen = (
        "required_node"
        if first.required_node
        else "job"
        if first.job
        else ask_policy or state.settings.ask_policy
    )
    if chosen != scenario.policy:
        raise NotLoadable(
            f"ask {first.id} is planned by the {chosen} policy (SPEC 4.0), not this one"
        )
    if first.queue in state.running_runs:
        raise NotLoadable(
            f"a run is active on {first.queue}: the sweep waits for it (one per queue)"
        )

    partition = load_scenario_into_db(scenario, at=scenario.now - LEAD, ask_policy=ask_policy)
    # Other pending asks stay in the state (they may hold nodes) but are not planned now.
    hold_back_asks(partition, keep=keep, until=scenario.now + LEAD)
    with time_machine.travel(scenario.now, tick=False):
        created = runs.sweep_pending_asks(scenario.now)
        run = runs.execute_run(created[0], worker=WORKER) if len(created) == 1 else None

    retry_after = Ask.objects.get(partition=partition, external_id=first.id).retry_after
    if plan.outcome in (Outcome.NOT_TRIGGERED, Outcome.DOES_NOT_HELP):
        assert created == [], f"the engine says {plan.outcome}, the sweep started a run"
        # does_not_help makes the ask wait for its delay again; not_triggered leaves it alone
        assert (retry_after is not None) == (plan.outcome == Outcome.DOES_NOT_HELP)
        return
    assert run is not None, f"the engine plans {plan.outcome}, the sweep started {created}"
    trigger = ("job", value) if kind == "job" else ("ask", value)
    assert (run.trigger, run.trigger_id, run.queue_path) == (*trigger, first.queue)
    assert_run_matches(run, plan)
    assert run.node == (plan.node or "")
    assert run.nominations == dict(plan.nominations)
    # A job run of a partition with soft_eviction orders softly (SPEC 4.5); no other run does.
    soft = kind == "job" and scenario.options.soft_eviction
    orders = EvictionOrder.objects.filter(run=run).values_list("soft", flat=True)
    assert run.soft_eviction is soft and set(orders) <= {soft}
    # The sweep reserves or nominates the plan's node for the ask (each job ask its own).
    reserved = dict(plan.nominations) or ({first.id: plan.node} if plan.node else {})
    for ask_id, node in reserved.items():
        assert Ask.objects.get(partition=partition, external_id=ask_id).node == node


def assert_run_matches(run: PreemptionRun, plan: Plan) -> None:
    """Victims (as a set), outcome, policy and explanations of a finished run equal the plan's;
    the victims were preempted."""
    victims = set(run.victims.values_list("allocation_id", flat=True))
    assert victims == set(plan.victims)
    assert run.status == RunStatus.FINISHED
    assert (run.policy, run.outcome) == (str(plan.policy), str(plan.outcome))
    stored = {
        c: (a, r) for c, a, r in run.candidates.values_list("candidate", "accepted", "reason")
    }
    assert stored == {e.candidate: (e.accepted, str(e.reason)) for e in plan.explanations}
    preempting = Allocation.objects.filter(
        partition=run.partition, state=AllocationState.PREEMPTING, external_id__in=victims
    )
    assert preempting.count() == len(victims)


# --------------------------------------------------------------------------------------------
# quota_timeline: saved changes, timers falling due, runs releasing their victims
# --------------------------------------------------------------------------------------------


def check_timeline(scenario: Scenario) -> None:
    assert scenario.until is not None
    expected = replay_timeline(scenario.state, scenario.timeline, scenario.until)
    changes = sorted(scenario.timeline, key=lambda change: change.at)
    partition = load_scenario_into_db(scenario, at=changes[0].at - LEAD)
    sweeper = _TimerSweeper(partition)
    # Changes saved at the same moment are saved together: the replay sweeps nothing between
    # them, and a pair such as "parent max down, then child max down" is valid only as a whole.
    for moment, group in groupby(changes, key=lambda change: change.at):
        sweeper.run_due(moment)
        with time_machine.travel(moment, tick=False):
            config = Partition.objects.get(pk=partition.pk).current_config()
            for change in group:
                config = change.apply(config)
            try:
                save_partition_config(config, actor=None, comment="scenario timeline")
            except ConfigErrors as exc:
                raise NotLoadable(
                    f"SPEC 3.2 validation refuses the change at {moment}: {exc}"
                ) from None
    sweeper.run_due(scenario.until)

    started = PreemptionRun.objects.filter(partition=partition, trigger="quota_timer")
    actual = [
        (run.queue_path, run.created_at, set(run.victims.values_list("allocation_id", flat=True)),
         run.outcome)
        for run in started.order_by("created_at", "id")
    ]  # fmt: skip
    assert actual == [(run.queue, run.at, set(run.victims), str(run.outcome)) for run in expected]


class _TimerSweeper:
    """Sweeps the due timers at each moment one falls due, executes every run started and
    acknowledges its evictions (the victims are released before anything later happens)."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition
        self.cursor: datetime | None = None

    def run_due(self, limit: datetime) -> None:
        pending = QuotaTimer.objects.filter(
            partition=self.partition, status=TimerStatus.PENDING, due_at__lte=limit
        )
        if self.cursor is not None:
            pending = pending.filter(due_at__gt=self.cursor)
        for moment in sorted(set(pending.values_list("due_at", flat=True))):
            self.cursor = moment
            with time_machine.travel(moment, tick=False):
                # Again at the same moment while runs start: a timer deferred by a run of this
                # sweep (a parent after its leaf) is looked at once that run has finished.
                while created := runs.sweep_due_quota_timers(moment):
                    for run_id in created:
                        runs.execute_run(run_id, worker=WORKER)
                        for order in EvictionOrder.objects.filter(run_id=run_id):
                            acknowledge_eviction(order.pk, actor=None)
