"""Observe mode (SPEC 5 "Enforcement mode"): a partition whose ``enforcement`` is ``observe``
plans and records its runs as it would enforce them, creates no eviction order and changes no
task; switched back to ``enforce`` (a setting change with a revision and a comment) it enforces.

The team partition (``tests/support/team.py``): root.team lowered from 400G to 100G while its
tasks use 180G; the run's victims are a2, b2 and b1.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    RunCandidate,
    RunStatus,
    TimerStatus,
)
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import ConfigRevision, Partition
from tests.api.conftest import client_for
from tests.api.test_metrics import scrape, token, value  # noqa: F401
from tests.integration.test_run_failures import partition, start_team_run  # noqa: F401
from tests.integration.test_run_stops import CLOCK, preempted, run_with_a_change
from tests.integration.test_web_partition_settings import form_as_saved
from tests.support.console import signed_in_client
from tests.support.team import START

pytestmark = pytest.mark.django_db

VICTIMS = ["a2", "b2", "b1"]


def set_enforcement(mode: str, *, at=START) -> None:
    with time_machine.travel(at, tick=False):
        config_services.update_partition_settings(
            "default", actor=None, comment=f"{mode} first", enforcement=mode
        )


def states() -> dict[str, str]:
    return dict(Allocation.objects.values_list("external_id", "state"))


def test_an_observing_partition_records_a_complete_run_and_evicts_nothing(partition):  # noqa: F811
    set_enforcement("observe")
    revision = ConfigRevision.objects.filter(partition=partition).order_by("-number").first()
    assert revision.comment == "observe first"
    assert revision.snapshot["partition"]["enforcement"] == "observe"
    before = states()
    run_id = start_team_run()
    with time_machine.travel(CLOCK, tick=False):
        run = runs.execute_run(run_id, worker="w")

    assert run is not None and run.observe
    assert run.status == RunStatus.OBSERVED and run.finished_at is not None
    assert run.outcome == "complete" and run.lease_expires_at is None
    # The record is complete: victims in order, every candidate with its facts and reason.
    assert list(run.victims.order_by("position").values_list("allocation_id", flat=True)) == (
        VICTIMS
    )
    candidates = {c.candidate: c for c in RunCandidate.objects.filter(run=run)}
    assert {"a1", "a2", "b1", "b2"} <= set(candidates)
    assert candidates["a2"].accepted and candidates["a2"].reason
    assert candidates["a2"].resources and candidates["a2"].queue_path == "root.team.a"
    assert run.subject["queue"] == "root.team"
    # Nothing was evicted and no task changed.
    assert not EvictionOrder.objects.exists()
    assert preempted(run) == []
    assert states() == before
    assert not AuditEvent.objects.filter(kind=AuditKind.VICTIM_PREEMPTED).exists()
    [planned] = AuditEvent.objects.filter(kind=AuditKind.RUN_PLANNED)
    assert planned.data["victims"] == VICTIMS
    [observed] = AuditEvent.objects.filter(kind=AuditKind.RUN_OBSERVED)
    assert observed.object_id == str(run.pk)
    assert observed.data["would_have_evicted"] == VICTIMS
    assert "would have evicted 3 victims" in observed.summary


def test_switched_to_enforce_the_observed_queue_is_enforced_at_the_next_sweep(partition):  # noqa: F811
    set_enforcement("observe")
    run_id = start_team_run()
    with time_machine.travel(CLOCK, tick=False):
        runs.execute_run(run_id, worker="w")
    assert not EvictionOrder.objects.exists()

    switched = START + timedelta(minutes=10)
    set_enforcement("enforce", at=switched)
    [timer] = QuotaTimer.objects.filter(status=TimerStatus.PENDING)
    assert timer.queue_path == "root.team" and timer.due_at == switched
    started = AuditEvent.objects.filter(kind=AuditKind.TIMER_STARTED).order_by("-id").first()
    assert "enforces again" in started.summary

    [enforcing] = runs.sweep_due_quota_timers(switched + timedelta(seconds=1))
    with time_machine.travel(switched + timedelta(seconds=2), tick=False):
        run = runs.execute_run(enforcing, worker="w")
    assert run is not None and not run.observe
    assert run.status == RunStatus.FINISHED
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == sorted(VICTIMS)
    assert all(states()[victim] == AllocationState.PREEMPTING for victim in VICTIMS)


def test_switching_back_starts_no_timer_for_a_queue_back_within_its_max(partition):  # noqa: F811
    set_enforcement("observe")
    run_id = start_team_run()
    with time_machine.travel(CLOCK, tick=False):
        runs.execute_run(run_id, worker="w")
    # Observe -> enforce and quota preemption off at once: nothing to enforce, no timer.
    with time_machine.travel(START + timedelta(minutes=5), tick=False):
        config_services.update_partition_settings(
            "default", actor=None, comment="both", enforcement="enforce",
            quota_preemption_enabled=False,
        )  # fmt: skip
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()


def test_a_run_enforcing_when_the_partition_switches_to_observe_stops_before_its_next_victim(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    run = run_with_a_change(settings, monkeypatch, lambda: set_enforcement("observe"))
    assert run.status == RunStatus.STOPPED
    assert run.stop_reason == "the partition was switched to observe only"
    assert preempted(run) == ["a2"]


def test_the_api_takes_and_refuses_the_enforcement_setting(partition):  # noqa: F811
    admin = client_for("admin")
    refused = admin.patch(
        "/api/v1/partitions/default/",
        {"enforcement": "watch", "comment": "x"},
        format="json",
    )
    assert refused.status_code == 400
    assert "enforcement" in refused.json()["errors"]
    assert Partition.objects.get().enforcement == "enforce"
    saved = admin.patch(
        "/api/v1/partitions/default/",
        {"enforcement": "observe", "comment": "watch first"},
        format="json",
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["enforcement"] == "observe"
    config = admin.get("/api/v1/partitions/default/config").json()
    assert config["partition"]["enforcement"] == "observe"


def test_the_console_says_the_partition_only_observes_and_what_the_run_would_have_evicted(
    partition,  # noqa: F811
):
    set_enforcement("observe")
    run_id = start_team_run()
    with time_machine.travel(CLOCK, tick=False):
        runs.execute_run(run_id, worker="w")
    client = signed_in_client("admin")
    for url in (
        "/?partition=default",
        "/partitions/default/settings/",
        f"/runs/{run_id}/",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        assert "Partition default only observes." in page.content.decode(), url
    text = client.get(f"/runs/{run_id}/").content.decode()
    assert "would have evicted 3 victims" in text
    assert "Would have evicted (3)" in text


def test_metrics_count_observed_victims_apart(
    partition,  # noqa: F811
    token,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    set_enforcement("observe")
    before = scrape()
    run_id = start_team_run()
    with (
        django_capture_on_commit_callbacks(execute=True),
        time_machine.travel(CLOCK, tick=False),
    ):
        runs.execute_run(run_id, worker="w")
    after = scrape()
    labels = {"partition": "default", "policy": "quota", "reason": "quota_timer"}

    def grew(name: str) -> float:
        return sum(
            value(after, name, **labels, queue=queue) - value(before, name, **labels, queue=queue)
            for queue in ("root.team", "root.team.a", "root.team.b")
        )

    assert grew("scheduler_admin_victims_observed_total") == 3
    assert grew("scheduler_admin_victims_total") == 0
    runs_labels = {"partition": "default", "policy": "quota", "outcome": "observed"}
    assert (
        value(after, "scheduler_admin_runs_total", **runs_labels)
        - value(before, "scheduler_admin_runs_total", **runs_labels)
        == 1
    )
    assert PreemptionRun.objects.get().status == RunStatus.OBSERVED


def test_the_console_asks_to_confirm_a_switch_from_observe_to_enforce(partition):  # noqa: F811
    set_enforcement("observe")
    client = signed_in_client("admin")
    url = "/partitions/default/settings/"
    refused = client.post(url, form_as_saved(partition, enforcement="enforce", comment="go"))
    assert refused.status_code == 200
    assert "Switching to enforce evicts" in refused.content.decode()
    assert Partition.objects.get().enforcement == "observe"
    saved = client.post(
        url, form_as_saved(partition, enforcement="enforce", comment="go", confirm_enforce="on")
    )
    assert saved.status_code == 302
    assert Partition.objects.get().enforcement == "enforce"
    # Switching to observe needs no confirmation: it evicts nothing.
    again = client.post(url, form_as_saved(partition, enforcement="observe", comment="watch"))
    assert again.status_code == 302
    assert Partition.objects.get().enforcement == "observe"
