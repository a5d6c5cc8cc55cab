"""A run stops when it is no longer needed (SPEC 5): before each chunk of victims a quota run
looks at its queue again, an ask's run at its ask; when the run is no longer needed it ends
``stopped`` with the reason, preempts nothing more, and says so in the audit, the API, the run
page and the metrics. Victims already preempted stay preempted.

The team partition (``tests/support/team.py``): root.team lowered from 400G to 100G while its
tasks use 180G; the run's victims are a2, b2 and b1 (30G, 40G, 40G, the leaves in path order;
b3 is a DaemonSet pod), so after the first chunk the queue uses 150G.
Chunks of one victim (``RUN_EVICTION_BATCH`` = 1), and the change is made right after the first
chunk commits (``after_first_chunk``), as another admin or the cluster would make it while the
worker runs. The races with a real worker over HTTP are in ``test_run_abort_races``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.enforcement.runs import execution
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.web.dashboard.panels import alerts
from tests.api.conftest import client_for
from tests.api.test_metrics import TOKEN, scrape, value
from tests.integration.test_ask_sweep import NOW, add_ask
from tests.integration.test_ask_sweep import partition as ask_partition  # noqa: F401
from tests.integration.test_run_failures import lower, partition, start_team_run  # noqa: F401
from tests.support.console import signed_in_client
from tests.support.team import GB, START, TEAM_TASKS

pytestmark = pytest.mark.django_db

CLOCK = START + timedelta(seconds=3)


def edit_team(**changes: object) -> None:
    """An admin saves a change of root.team (max, properties) through the service."""
    version = Queue.objects.get(path="root.team").version
    config_services.update_queue(
        "default", "root.team", version=version, actor=None, comment="change", **changes
    )


def after_first_chunk(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    """Make ``change`` once the run's first chunk has committed, before its second."""
    chunk = execution._preempt_chunk
    calls: list[int] = []

    def then_change(run, victims, token):
        went_on = chunk(run, victims, token)
        calls.append(1)
        if len(calls) == 1:
            change()
        return went_on

    monkeypatch.setattr(execution, "_preempt_chunk", then_change)


def run_with_a_change(settings, monkeypatch, change: Callable[[], None]) -> PreemptionRun:
    settings.RUN_EVICTION_BATCH = 1
    run_id = start_team_run()
    after_first_chunk(monkeypatch, change)
    with time_machine.travel(CLOCK, tick=False):
        run = runs.execute_run(run_id, worker="w")
    assert run is not None
    return run


def preempted(run: PreemptionRun) -> list[str]:
    return list(
        run.victims.filter(preempted_at__isnull=False)
        .order_by("position")
        .values_list("allocation_id", flat=True)
    )


def assert_stopped(run: PreemptionRun, reason: str) -> None:
    """Stopped after its first victim (a2), with ``reason``, audited; nothing more
    preempted."""
    assert run.status == RunStatus.STOPPED, (run.status, run.error)
    assert run.stop_reason == reason
    assert run.finished_at is not None and run.lease_expires_at is None
    assert preempted(run) == ["a2"]
    assert list(EvictionOrder.objects.filter(run=run).values_list("allocation_id", flat=True)) == [
        "a2"
    ]
    # The victims left are still running; the one preempted stays so.
    states = dict(Allocation.objects.values_list("external_id", "state"))
    assert states["a2"] == AllocationState.PREEMPTING
    assert states["b1"] == states["b2"] == AllocationState.RUNNING
    [event] = AuditEvent.objects.filter(kind=AuditKind.RUN_STOPPED)
    assert event.object_id == str(run.pk) and event.queue_path == "root.team"
    assert event.summary == (
        f"Run {run.pk} of root.team stopped after 1 of 3 victims, no longer needed: {reason}"
    )
    assert event.data == {
        "run": run.pk, "reason": reason, "preempted": 1, "victims": 3,
        "fence_token": run.fence_token,
    }  # fmt: skip
    assert not AuditEvent.objects.filter(kind=AuditKind.RUN_FINISHED).exists()


def test_raising_the_max_back_stops_the_run_before_its_next_victim(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    run = run_with_a_change(settings, monkeypatch, lambda: edit_team(max={"memory": 400 * GB}))
    assert_stopped(
        run,
        "the max of root.team was raised or removed (memory 100G before, memory 400G now): "
        "its usage (memory 150G) is within its max",
    )


def test_removing_the_max_stops_the_run(partition, settings, monkeypatch):  # noqa: F811
    run = run_with_a_change(settings, monkeypatch, lambda: edit_team(max={}))
    assert_stopped(
        run,
        "the max of root.team was raised or removed (memory 100G before, no max now): its "
        "usage (memory 150G) is within its max",
    )


def test_switching_quota_preemption_off_for_the_partition_stops_the_run(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    run = run_with_a_change(
        settings,
        monkeypatch,
        lambda: config_services.update_partition_settings(
            "default", actor=None, comment="off", quota_preemption_enabled=False
        ),
    )
    assert_stopped(run, "quota preemption was switched off for the partition")


def test_a_quota_preemption_delay_of_0_stops_the_run(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    run = run_with_a_change(
        settings, monkeypatch, lambda: edit_team(properties={"quota.preemption.delay": "0s"})
    )
    assert_stopped(
        run, "quota preemption is off for root.team: its quota preemption delay is now 0"
    )


def test_tasks_that_finished_meanwhile_stop_the_run_when_usage_is_back_within_max(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    """a1 and b1 finish (the cluster removes them): 150G - 70G = 80G, within the 100G max. The
    max itself did not change, and the reason says so."""
    p = Partition.objects.get(name="default")
    run = run_with_a_change(
        settings,
        monkeypatch,
        lambda: ingest_cluster_state(p, {"remove": {"allocations": ["a1", "b1"]}}, actor=None),
    )
    assert run.status == RunStatus.STOPPED
    assert run.stop_reason == (
        "the usage of root.team (memory 80G) is within its max (memory 100G) again"
    )
    assert preempted(run) == ["a2"]


def test_a_victim_the_cluster_reports_running_again_still_counts_as_gone(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    """After a2 was preempted the agent pushes it as running again (it has not evicted it yet),
    and an admin raises the max to 155G: with a2 gone the queue uses 150G, within it, so the
    run stops; had a2 been counted (180G), the run would have gone on."""
    p = Partition.objects.get(name="default")
    a2 = next(task for task in TEAM_TASKS if task["id"] == "a2")

    def change() -> None:
        ingest_cluster_state(p, {"allocations": [{**a2, "state": "running"}]}, actor=None)
        assert Allocation.objects.get(external_id="a2").state == AllocationState.RUNNING
        edit_team(max={"memory": 155 * GB})

    run = run_with_a_change(settings, monkeypatch, change)
    assert run.status == RunStatus.STOPPED, run.status
    assert run.stop_reason.endswith("its usage (memory 150G) is within its max")
    assert preempted(run) == ["a2"]


def test_a_run_still_needed_goes_on_whatever_else_changed(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    """A max raised but still below the usage before each chunk (100G -> 105G; 150G used
    before the second victim, 110G before the third) changes nothing."""
    run = run_with_a_change(settings, monkeypatch, lambda: edit_team(max={"memory": 105 * GB}))
    assert run.status == RunStatus.FINISHED and run.stop_reason == ""
    assert preempted(run) == ["a2", "b2", "b1"]


def test_an_ask_run_stops_when_its_ask_is_no_longer_pending(ask_partition):  # noqa: F811
    """The ask's run was planned (victim b3); before the worker preempts anything the cluster
    reports the ask gone (it was scheduled elsewhere): the run stops, nothing is preempted."""
    add_ask(ask_partition, NOW - timedelta(minutes=5))
    [run_id] = runs.sweep_pending_asks(NOW)
    ingest_cluster_state(ask_partition, {"remove": {"asks": ["k1"]}}, actor=None)
    run = runs.execute_run(run_id, worker="w")
    assert run.status == RunStatus.STOPPED
    assert run.stop_reason == "ask k1 is no longer pending"
    assert not EvictionOrder.objects.exists()
    assert AuditEvent.objects.get(kind=AuditKind.RUN_STOPPED).summary.startswith(
        f"Run {run_id} of root.prod stopped after 0 of 1 victims"
    )


def test_a_stopped_run_is_shown_as_stopped_in_the_api_the_page_and_the_metrics(
    partition,  # noqa: F811
    settings,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []
    labels = {"partition": "default", "policy": "quota", "outcome": "stopped"}
    before = value(scrape(), "scheduler_admin_runs_total", **labels)
    with django_capture_on_commit_callbacks(execute=True):
        run = run_with_a_change(settings, monkeypatch, lambda: edit_team(max={"memory": 400 * GB}))
    assert value(scrape(), "scheduler_admin_runs_total", **labels) == before + 1

    viewer = client_for("viewer")
    body = viewer.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "stopped"
    assert body["stop_reason"] == run.stop_reason
    listed = viewer.get("/api/v1/runs/?status=stopped").json()
    assert [item["id"] for item in listed["results"]] == [run.pk]
    schema = viewer.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    run_schema = schema["components"]["schemas"]["Run"]["properties"]
    assert "stopped" in str(schema["components"]["schemas"]) and "stop_reason" in run_schema

    page = signed_in_client("viewer").get(f"/runs/{run.pk}/").content.decode()
    assert "Stopped (no longer needed)" in page
    assert "Stopped after 1 of 3 victims: no longer needed." in page
    assert "Why it stopped" in page and "The max of root.team was raised or removed" in page


def test_a_stopped_run_whose_plan_fell_short_raises_no_alert(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    """Lowered to 30G, the queue cannot get there (b3, 40G, is never a victim): the plan is
    ``short``, which the dashboard flags. Raised back after the first victim, the run stops
    with its queue within max: nothing to flag any more."""
    settings.RUN_EVICTION_BATCH = 1
    lower("root.team", 30, at=START)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    after_first_chunk(monkeypatch, lambda: edit_team(max={"memory": 400 * GB}))
    with time_machine.travel(CLOCK, tick=False):
        run = runs.execute_run(run_id, worker="w")
    assert (run.status, run.outcome) == (RunStatus.STOPPED, "short")
    viewer = get_user_model().objects.create_user("alert-viewer")
    viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
    assert alerts(run.partition, CLOCK, viewer) == []
    page = signed_in_client("viewer").get(f"/runs/{run.pk}/").content.decode()
    assert "activity-alert-card" not in page
