"""The live loop's services on PostgreSQL, driven directly (no worker): timers, sweeps, runs,
fencing tokens, resumption and evictions. Time is moved with time-machine."""

from __future__ import annotations

import io
import logging
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command

from preemption.policies import plan_quota
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.adapters import load_cluster_state
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.cluster.services import IngestErrors, ingest_cluster_state
from scheduler_admin.enforcement import record, runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunStatus,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.enforcement.runs import execution
from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.support.team import GB, START, TEAM_TASKS, task, team_config

pytestmark = pytest.mark.django_db

CONFIG = team_config("2s")


@pytest.fixture
def partition() -> Partition:
    with time_machine.travel(START, tick=False):
        [config] = parse_queues_yaml(CONFIG, settings_for=config_services.settings_for_import)
        result = config_services.save_partition_config(config, actor=None, comment="initial")
        ingest_cluster_state(
            result.partition,
            {
                "nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}],
                "allocations": TEAM_TASKS,
            },
            actor=None,
        )
    return result.partition


def lower_team_max(memory_gb: int, *, at=START) -> None:
    with time_machine.travel(at, tick=False):
        version = Queue.objects.get(path="root.team").version
        config_services.update_queue(
            "default", "root.team", version=version, actor=None, comment="lower",
            max={"memory": memory_gb * GB},
        )  # fmt: skip


def test_ingesting_the_same_body_twice_changes_nothing(partition):
    before = list(Allocation.objects.order_by("external_id").values_list())
    ingest_cluster_state(
        partition,
        {"allocations": [task("a1", "root.team.a", 30, 1), task("a2", "root.team.a", 30, 2)]},
        actor=None,
    )
    assert list(Allocation.objects.order_by("external_id").values_list()) == before


def test_a_bad_body_is_refused_with_every_field_error_and_changes_nothing(partition):
    before = Allocation.objects.count(), AuditEvent.objects.count()
    with pytest.raises(IngestErrors) as refused:
        ingest_cluster_state(
            partition,
            {
                "allocations": [
                    task("x1", "root.team", 1, 1),  # a parent queue
                    {**task("x2", "root.team.a", 1, 2), "resources": {"memory": "-1G"}},
                    {**task("x3", "root.team.a", 1, 3), "node": "n9"},
                ],
                "surprise": [],
            },
            actor=None,
        )
    assert set(refused.value.errors) == {
        "allocations[0].queue",
        "allocations[1].resources.memory",
        "allocations[2].node",
        "surprise",
    }
    assert (Allocation.objects.count(), AuditEvent.objects.count()) == before


def test_lowering_a_quota_starts_a_timer_and_the_sweep_runs_it_after_the_delay(partition):
    lower_team_max(100)  # usage 180G (b3 is a DaemonSet pod), target 80G
    timer = QuotaTimer.objects.get(status=TimerStatus.PENDING)
    assert timer.due_at == START + timedelta(seconds=2)
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_STARTED).count() == 1

    assert runs.sweep_due_quota_timers(START + timedelta(seconds=1)) == []  # not due yet
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    run = runs.execute_run(run_id, worker="w1")
    assert run.status == RunStatus.FINISHED and run.outcome == "complete"
    victims = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
    # team's target 80G is split by releasable usage: a has 40G above its guarantee, b 120G
    assert run.targets == {"root.team.a": {"memory": 20 * GB}, "root.team.b": {"memory": 60 * GB}}
    assert victims == ["a2", "b2", "b1"]
    assert set(
        Allocation.objects.filter(state=AllocationState.PREEMPTING).values_list(
            "external_id", flat=True
        )
    ) == {"a2", "b1", "b2"}
    assert EvictionOrder.objects.count() == 3
    kinds = list(AuditEvent.objects.order_by("id").values_list("kind", flat=True))
    assert kinds[-6:] == [
        AuditKind.RUN_STARTED, AuditKind.RUN_PLANNED, AuditKind.VICTIM_PREEMPTED,
        AuditKind.VICTIM_PREEMPTED, AuditKind.VICTIM_PREEMPTED, AuditKind.RUN_FINISHED,
    ]  # fmt: skip
    assert run.candidates.get(candidate="b3").reason == "daemonset_excluded"


def test_a_second_change_resets_the_timer_and_a_pure_increase_cancels_it(partition):
    lower_team_max(100)
    lower_team_max(90, at=START + timedelta(seconds=1))
    timers = list(QuotaTimer.objects.order_by("id").values_list("status", "due_at"))
    assert timers == [
        (TimerStatus.SUPERSEDED, START + timedelta(seconds=2)),
        (TimerStatus.PENDING, START + timedelta(seconds=3)),
    ]
    lower_team_max(150, at=START + timedelta(seconds=2))  # raises only: usage still over max
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()
    assert runs.sweep_due_quota_timers(START + timedelta(seconds=10)) == []


def test_an_admin_can_cancel_a_pending_timer(partition):
    lower_team_max(100)
    timer = QuotaTimer.objects.get(status=TimerStatus.PENDING)
    cancel_timer(timer.pk, actor=None)
    assert QuotaTimer.objects.get(pk=timer.pk).status == TimerStatus.CANCELLED
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_CANCELLED).exists()
    with pytest.raises(TimerNotFound):
        cancel_timer(timer.pk, actor=None)


def test_the_cancel_command_records_the_comment_in_the_audit_event(partition):
    lower_team_max(100)
    timer = QuotaTimer.objects.get(status=TimerStatus.PENDING)
    out = io.StringIO()
    call_command("cancel_timer", str(timer.pk), "--comment", "team moved", stdout=out)
    assert "cancelled the timer of root.team" in out.getvalue()
    event = AuditEvent.objects.get(kind=AuditKind.TIMER_CANCELLED)
    assert event.data["comment"] == "team moved"
    assert "cancelled by system: team moved" in event.summary


def test_cancelling_through_another_partition_finds_no_timer(partition):
    lower_team_max(100)
    timer = QuotaTimer.objects.get(status=TimerStatus.PENDING)
    other = Partition.objects.create(name="other")
    with pytest.raises(TimerNotFound):
        cancel_timer(timer.pk, actor=None, partition=other)
    assert QuotaTimer.objects.get(pk=timer.pk).status == TimerStatus.PENDING
    cancel_timer(timer.pk, actor=None, partition=partition)
    assert QuotaTimer.objects.get(pk=timer.pk).status == TimerStatus.CANCELLED


def test_a_timer_falls_through_as_not_needed_when_usage_dropped(partition):
    lower_team_max(100)
    ingest_cluster_state(partition, {"remove": {"allocations": ["a1", "a2", "b1"]}}, actor=None)
    assert runs.sweep_due_quota_timers(START + timedelta(seconds=5)) == []
    assert QuotaTimer.objects.get().status == TimerStatus.NOT_NEEDED


def test_a_timer_due_while_a_run_is_active_on_a_relative_is_deferred_then_runs(partition):
    lower_team_max(100)
    [parent_run] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        version = Queue.objects.get(path="root.team.b").version
        config_services.update_queue(
            "default", "root.team.b", version=version, actor=None, comment="b",
            max={"memory": 30 * GB},
        )  # fmt: skip
    assert runs.sweep_due_quota_timers(START + timedelta(seconds=6)) == []
    child = QuotaTimer.objects.get(queue_path="root.team.b", status=TimerStatus.PENDING)
    assert child.deferred_since == START + timedelta(seconds=6)
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_DEFERRED).count() == 1
    runs.sweep_due_quota_timers(START + timedelta(seconds=7))  # still deferred: no new event
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_DEFERRED).count() == 1

    with time_machine.travel(START + timedelta(seconds=8), tick=False):
        runs.execute_run(parent_run, worker="w1")
    # Only the DaemonSet pod b3 (40G) is left in b after the parent's run: still over 30G.
    [child_run] = runs.sweep_due_quota_timers(START + timedelta(seconds=9))
    assert PreemptionRun.objects.get(pk=child_run).queue_path == "root.team.b"
    child_result = runs.execute_run(child_run, worker="w1")
    assert child_result.outcome == "does_not_help"  # DaemonSet pods are never quota victims


def test_a_stalled_worker_writes_nothing_after_its_run_was_taken_over(partition, settings):
    settings.RUN_LEASE_SECONDS = 5
    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        old_token = runs.claim_run(run_id, worker="slow")
        run = PreemptionRun.objects.get(pk=run_id)
        execution._plan_run(run, old_token)
        first = run.victims.order_by("position").first()
        execution._preempt_chunk(run, [first], old_token)
    # The slow worker stalls past its lease; the reaper hands the run to another worker.
    with time_machine.travel(START + timedelta(seconds=20), tick=False):
        assert runs.reap_stale_runs() == [run_id]
        assert runs.claim_run(run_id, worker="slow") is not None  # the takeover claim
        new_token = QueueLock.objects.get().token
        assert new_token == old_token + 1
        second = run.victims.order_by("position")[1]
        with pytest.raises(runs.StaleRun):
            execution._preempt_chunk(run, [second], old_token)
    assert RunVictim.objects.get(pk=second.pk).preempted_at is None
    assert EvictionOrder.objects.count() == 1


def test_a_resumed_run_finishes_the_stored_victims_and_never_plans_again(partition, settings):
    settings.RUN_LEASE_SECONDS = 5
    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        token = runs.claim_run(run_id, worker="dies")
        run = PreemptionRun.objects.get(pk=run_id)
        execution._plan_run(run, token)
        execution._preempt_chunk(run, [run.victims.order_by("position").first()], token)
    planned = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
    # Meanwhile the cluster changed: a new task that a fresh plan might choose.
    ingest_cluster_state(
        partition, {"allocations": [task("b9", "root.team.b", 40, 59)]}, actor=None
    )
    with time_machine.travel(START + timedelta(seconds=30), tick=False):
        resumed = runs.execute_run(run_id, worker="rescuer")
    assert resumed.status == RunStatus.FINISHED and resumed.attempt == 2
    assert (
        list(resumed.victims.order_by("position").values_list("allocation_id", flat=True))
        == planned
    )
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == sorted(planned)
    assert AuditEvent.objects.filter(kind=AuditKind.RUN_PLANNED).count() == 1
    assert AuditEvent.objects.filter(kind=AuditKind.RUN_RESUMED).count() == 1
    assert runs.execute_run(run_id, worker="late") is None  # finished: nothing to do


def test_acknowledging_an_eviction_releases_the_task_once(partition):
    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    runs.execute_run(run_id, worker="w1")
    order = EvictionOrder.objects.order_by("pk").first()
    acknowledge_eviction(order.pk, actor=None)
    acknowledge_eviction(order.pk, actor=None)
    assert Allocation.objects.get(external_id=order.allocation_id).state == "released"
    assert AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).count() == 1


def test_a_victim_removed_by_the_cluster_while_the_run_plans_is_left_out(partition):
    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        token = runs.claim_run(run_id, worker="w1")
        run = PreemptionRun.objects.get(pk=run_id)
        state = load_cluster_state(partition)
        plan = plan_quota(state, "root.team", START)
        # The task finished and the cluster removed it between planning and storing.
        ingest_cluster_state(partition, {"remove": {"allocations": ["b1"]}}, actor=None)
        assert "b1" in plan.victims
        described = record.Described.of(state, plan, "root.team")
        assert record.store_plan(run, plan, described) == ["b1"]
    stored = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
    assert stored == [v for v in plan.victims if v != "b1"]
    gone = run.candidates.get(candidate="b1")  # still explained, with the facts it had
    assert (gone.accepted, gone.queue_path, gone.resources) == (
        True,
        "root.team.b",
        {"memory": 40 * GB},
    )
    assert gone.detail.endswith(record.VANISHED_NOTE)
    with time_machine.travel(START + timedelta(seconds=4), tick=False):
        for victim in run.victims.order_by("position"):
            execution._preempt_chunk(run, [victim], token)
        execution._finish_run(run, token)
    assert PreemptionRun.objects.get(pk=run_id).status == RunStatus.FINISHED


def test_a_victim_counts_towards_displayed_usage_until_its_eviction_is_acknowledged(partition):
    from scheduler_admin.cluster.adapters import queue_usage

    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    runs.execute_run(run_id, worker="w1")
    assert queue_usage(partition)["root.team"] == {"memory": 180 * GB}  # preempting still shown
    for order in EvictionOrder.objects.all():
        acknowledge_eviction(order.pk, actor=None)
    assert queue_usage(partition)["root.team"] == {"memory": 70 * GB}  # a1 (30G) and b3 (40G)


def test_the_sweep_sums_usage_as_the_engine_counts_it(partition):
    """The sweep reads the usage per queue summed in the database, not the tasks: the same
    figures as the engine's state, where preempting victims count as gone already."""
    from scheduler_admin.cluster.adapters import load_cluster_state
    from scheduler_admin.enforcement.timers import load_due_state

    def same() -> dict[str, int]:
        due = load_due_state(partition)
        assert due.usage == load_cluster_state(partition).usage
        return due.usage["root.team"]

    assert same() == {"memory": 180 * GB}
    lower_team_max(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    runs.execute_run(run_id, worker="w1")
    assert Allocation.objects.filter(state=AllocationState.PREEMPTING).exists()
    assert same() == {"memory": 70 * GB}  # a1 (30G) and b3 (40G) are left running
    for order in EvictionOrder.objects.all():
        acknowledge_eviction(order.pk, actor=None)
    assert same() == {"memory": 70 * GB}


def test_the_tasks_log_at_info_only_what_they_did(partition, caplog):
    """Beat sends the sweeps every 5 s: a sweep with nothing to do is a DEBUG line, one that
    started a run an INFO line naming it, and the run's end is an INFO line (issue 13)."""
    from scheduler_admin.enforcement import tasks

    caplog.set_level(logging.DEBUG, logger=tasks.logger.name)

    def info_lines() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
        caplog.clear()
        return lines

    lower_team_max(100)
    with time_machine.travel(START + timedelta(seconds=1), tick=False):
        tasks.sweep_due_quota_timers()  # not due yet
        tasks.sweep_pending_asks()
        tasks.reap_stale_runs()
        tasks.deliver_eviction_webhooks()
    assert info_lines() == []
    with time_machine.travel(START + timedelta(seconds=2), tick=False):
        tasks.sweep_due_quota_timers()
    run = PreemptionRun.objects.get()
    assert info_lines() == [f"quota timer sweep started run(s) {run.pk}"]
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        tasks.execute_run(run.pk)
    assert info_lines() == [f"run {run.pk} (quota, default root.team): finished, complete"]
