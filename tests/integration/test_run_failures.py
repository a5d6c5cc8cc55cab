"""Runs that cannot finish end ``failed`` and free their queue; admins can abort a run.

The faults are real: a PostgreSQL trigger refuses the eviction order of one task (the kind of
failure a column too short for a 253-character id used to cause, on every retry), and a worker
that claims a run and is never heard of again (SIGKILL, OOM) is played by claiming without
executing. Time moves with time-machine; the reaper and the claims take ``now``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import time_machine
from django.db import connection

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunStatus,
    TimerStatus,
)
from scheduler_admin.enforcement.runs import execution
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.api.conftest import assert_error, client_for
from tests.support.console import signed_in_client
from tests.support.team import GB, START, TEAM_TASKS, team_config

pytestmark = pytest.mark.django_db

MAX_ATTEMPTS = 3


@pytest.fixture(autouse=True)
def _attempts(settings) -> None:
    settings.RUN_MAX_ATTEMPTS = MAX_ATTEMPTS
    settings.RUN_LEASE_SECONDS = 10


@pytest.fixture
def partition() -> Partition:
    with time_machine.travel(START, tick=False):
        [config] = parse_queues_yaml(
            team_config("2s"), settings_for=config_services.settings_for_import
        )
        result = config_services.save_partition_config(config, actor=None, comment="initial")
        ingest_cluster_state(
            result.partition,
            {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}],
             "allocations": TEAM_TASKS},
            actor=None,
        )  # fmt: skip
    return result.partition


@pytest.fixture
def refused_eviction() -> Iterator[str]:
    """A trigger that makes every eviction order of task b2 fail inside PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE FUNCTION refuse_b2() RETURNS trigger AS $$
            BEGIN
              IF NEW.allocation_id = 'b2' THEN
                RAISE EXCEPTION 'storage refused the eviction order of b2';
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER refuse_b2 BEFORE INSERT ON enforcement_evictionorder
              FOR EACH ROW EXECUTE FUNCTION refuse_b2();
            """
        )
    yield "b2"
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER IF EXISTS refuse_b2 ON enforcement_evictionorder;"
            "DROP FUNCTION IF EXISTS refuse_b2();"
        )


def lower(path: str, memory_gb: int, *, at) -> None:
    with time_machine.travel(at, tick=False):
        version = Queue.objects.get(path=path).version
        config_services.update_queue(
            "default", path, version=version, actor=None, comment="lower",
            max={"memory": memory_gb * GB},
        )  # fmt: skip


def start_team_run() -> int:
    """Lower root.team to 100G (usage 180G): a run whose victims are b2, b1, a2 (newest first,
    the DaemonSet pod b3 never)."""
    lower("root.team", 100, at=START)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    return run_id


def test_a_run_that_fails_every_attempt_ends_failed_with_its_error_and_frees_its_queue(
    partition, refused_eviction
):
    run_id = start_team_run()
    clock = START + timedelta(seconds=3)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        with time_machine.travel(clock, tick=False):
            run = runs.execute_run(run_id, worker=f"w{attempt}")
        assert run is not None and run.attempt == attempt
        if attempt < MAX_ATTEMPTS:
            # Handed back: still running, its lease over, so the reaper re-enqueues it at once.
            assert run.status == RunStatus.RUNNING
            assert "storage refused the eviction order of b2" in run.error
            clock += timedelta(seconds=1)
            with time_machine.travel(clock, tick=False):
                assert runs.reap_stale_runs() == [run_id]
    assert run.status == RunStatus.FAILED and run.finished_at is not None
    assert run.error.startswith(f"Failed on attempt {MAX_ATTEMPTS} of {MAX_ATTEMPTS}: ")
    assert "storage refused the eviction order of b2" in run.error
    # The victims before b2 were preempted and stay so; nothing of b2's step was half-written,
    # and no victim after it was reached.
    order = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
    assert "b2" in order
    before_b2 = order[: order.index("b2")]
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == sorted(
        before_b2
    )
    assert Allocation.objects.get(external_id="b2").state == AllocationState.RUNNING
    kinds = list(
        AuditEvent.objects.filter(object_type="run", object_id=str(run_id))
        .order_by("id")
        .values_list("kind", flat=True)
    )
    assert kinds.count(AuditKind.RUN_ATTEMPT_FAILED) == MAX_ATTEMPTS - 1
    assert kinds[-1] == AuditKind.RUN_FAILED
    # The queue is free: a new change starts a timer whose run is not blocked by the old one.
    assert runs.reap_stale_runs(clock + timedelta(minutes=5)) == []
    lower("root.team", 90, at=clock)
    with time_machine.travel(clock + timedelta(seconds=3), tick=False):
        [new_run] = runs.sweep_due_quota_timers(clock + timedelta(seconds=3))
    assert new_run != run_id
    assert PreemptionRun.objects.get(pk=new_run).status == RunStatus.PENDING


def test_a_failed_run_no_longer_defers_the_timers_of_its_relatives(partition, refused_eviction):
    run_id = start_team_run()
    lower("root.team.b", 30, at=START + timedelta(seconds=2))
    clock = START + timedelta(seconds=5)
    with time_machine.travel(clock, tick=False):
        assert runs.sweep_due_quota_timers(clock) == []  # deferred: the parent's run is active
    assert QuotaTimer.objects.get(queue_path="root.team.b").deferred_since is not None
    for _ in range(MAX_ATTEMPTS):
        clock += timedelta(seconds=1)
        with time_machine.travel(clock, tick=False):
            runs.reap_stale_runs()
            runs.execute_run(run_id, worker="w")
    assert PreemptionRun.objects.get(pk=run_id).status == RunStatus.FAILED
    clock += timedelta(seconds=1)
    with time_machine.travel(clock, tick=False):
        [child_run] = runs.sweep_due_quota_timers(clock)
    assert PreemptionRun.objects.get(pk=child_run).queue_path == "root.team.b"


def test_a_run_whose_workers_keep_dying_ends_failed_after_the_last_attempt(partition):
    """Each worker claims the run and is never heard of again: its lease expires, the reaper
    hands the run on, and the claim after the last attempt ends it instead."""
    run_id = start_team_run()
    clock = START + timedelta(seconds=3)
    tokens = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        with time_machine.travel(clock, tick=False):
            tokens.append(runs.claim_run(run_id, worker=f"dies{attempt}", now=clock))
        assert tokens[-1] is not None
        clock += timedelta(seconds=11)  # past the 10 s lease
        assert runs.reap_stale_runs(clock) == [run_id]
    with time_machine.travel(clock, tick=False):
        assert runs.claim_run(run_id, worker="rescuer", now=clock) is None
    run = PreemptionRun.objects.get(pk=run_id)
    assert run.status == RunStatus.FAILED and run.attempt == MAX_ATTEMPTS
    assert run.error.startswith(f"Gave up after {MAX_ATTEMPTS} attempts")
    assert runs.reap_stale_runs(clock + timedelta(minutes=5)) == []
    # The last worker, should it wake up, holds a token that was raised past: it writes nothing.
    assert QueueLock.objects.get().token > tokens[-1]
    event = AuditEvent.objects.get(kind=AuditKind.RUN_FAILED)
    assert event.queue_path == "root.team" and event.object_id == str(run_id)


def test_an_admin_aborts_an_active_run_over_the_api(partition):
    run_id = start_team_run()
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        token = runs.claim_run(run_id, worker="slow")
        run = PreemptionRun.objects.get(pk=run_id)
        execution._plan_run(run, token)
        execution._preempt_chunk(run, [run.victims.order_by("position").first()], token)

    url = f"/api/v1/runs/{run_id}/abort"
    assert_error(client_for("operator").post(url, {"comment": "no"}, format="json"), 403)
    admin = client_for("admin")
    response = admin.post(url, {"comment": "wrong queue"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "failed" and body["error"] == "Aborted by user-admin: wrong queue"
    # The worker still executing it is fenced off: its next write raises and writes nothing.
    second = run.victims.order_by("position")[1]
    with pytest.raises(runs.StaleRun):
        execution._preempt_chunk(run, [second], token)
    assert EvictionOrder.objects.count() == 1  # the victim taken before the abort stays taken
    assert runs.execute_run(run_id, worker="late") is None

    again = assert_error(admin.post(url, {}, format="json"), 409)
    assert again["code"] == "run_not_active"
    assert_error(admin.post("/api/v1/runs/999999/abort", {}, format="json"), 404)
    event = AuditEvent.objects.get(kind=AuditKind.RUN_ABORTED)
    assert event.actor_name == "user-admin" and "wrong queue" in event.summary


def test_the_console_shows_abort_to_admins_and_alerts_on_failed_runs(partition):
    run_id = start_team_run()
    page = f"/runs/{run_id}/"
    assert "Abort this run" in signed_in_client("admin").get(page).content.decode()
    operator = signed_in_client("operator")
    assert "Abort this run" not in operator.get(page).content.decode()
    assert operator.post(f"{page}abort/", {"comment": "x"}).status_code == 403
    assert PreemptionRun.objects.get(pk=run_id).status == RunStatus.PENDING

    admin = signed_in_client("admin")
    response = admin.post(f"{page}abort/", {"comment": "testing the abort"}, follow=True)
    text = response.content.decode()
    assert f"Run {run_id} aborted" in text and "Aborted by " in text
    assert "Abort this run" not in text
    assert PreemptionRun.objects.get(pk=run_id).status == RunStatus.FAILED
    again = admin.post(f"{page}abort/", {}, follow=True).content.decode()
    assert "had already ended" in again

    with time_machine.travel(START + timedelta(minutes=1), tick=False):
        dashboard = admin.get("/?partition=default").content.decode()
    alerts = dashboard.split('id="alerts-heading"')[1].split("</section>")[0]
    assert f"Run {run_id}</a>" in alerts and "failed" in alerts and "testing the abort" in alerts
    assert QuotaTimer.objects.get(queue_path="root.team").status == TimerStatus.FIRED
