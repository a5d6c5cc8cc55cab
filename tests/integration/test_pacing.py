"""Pacing (SPEC 5 "Pacing"): a partition's runs together create at most
``max_evictions_per_minute`` eviction orders in any 60 seconds; a run that reaches the pace
pauses (``paced_until``, its lease ending then) and goes on in a later claim that is not a new
attempt; before each chunk it checks again that it is still needed, so it stops early when the
max is raised.

The clock is time-machine's, frozen and moved by the test to the moment the run asked to go on
(as the countdown or the reaper would), so 500 victims at 100 a minute take five simulated
minutes and a few seconds of real time. The orders' ``created_at`` are the times checked.

Partition ``paced``: root.big (max 1000G) with 600 tasks of 1G on one node, lowered to 100G, so
its run has 500 victims.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.enforcement.runs import pacing
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.api.conftest import client_for
from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db

GB = 10**9
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PACE = 100
CONFIG = """
partitions:
  - name: paced
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: big
            resources: {max: {memory: 1000G}}
            properties: {quota.preemption.delay: 1s}
"""


@pytest.fixture
def partition() -> Partition:
    with time_machine.travel(START, tick=False):
        [config] = parse_queues_yaml(CONFIG, settings_for=config_services.settings_for_import)
        result = config_services.save_partition_config(config, actor=None, comment="initial")
        tasks = [
            {
                "id": f"t{i:03d}", "queue": "root.big", "node": "n1",
                "resources": {"memory": "1G"},
                "created_at": f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z",
            }
            for i in range(600)
        ]  # fmt: skip
        ingest_cluster_state(
            result.partition,
            {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}], "allocations": tasks},
            actor=None,
        )
        config_services.update_partition_settings(
            "paced", actor=None, comment="100 a minute", max_evictions_per_minute=PACE
        )
    return result.partition


def set_max(memory_gb: int, *, at: datetime) -> None:
    with time_machine.travel(at, tick=False):
        version = Queue.objects.get(path="root.big").version
        config_services.update_queue(
            "paced", "root.big", version=version, actor=None, comment="max",
            max={"memory": memory_gb * GB},
        )  # fmt: skip


def start_run() -> int:
    set_max(100, at=START)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=2))
    return run_id


def go_on(run_id: int, clock: datetime) -> PreemptionRun:
    with time_machine.travel(clock, tick=False):
        run = runs.execute_run(run_id, worker="w")
    assert run is not None
    return run


def assert_never_over_the_pace(times: list[datetime]) -> None:
    """In every window [t, t + 60 s) that starts at an order, at most ``PACE`` orders."""
    times = sorted(times)
    for i, start in enumerate(times):
        inside = sum(1 for t in times[i:] if t < start + pacing.WINDOW)
        assert inside <= PACE, (start, inside)


def test_a_paced_run_of_500_victims_never_exceeds_100_orders_in_any_minute(partition, settings):
    settings.RUN_EVICTION_BATCH = 64  # chunks that do not divide the pace
    run_id = start_run()
    clock = START + timedelta(seconds=3)
    run = go_on(run_id, clock)
    assert run.victims.count() == 500
    claims = 1
    while run.status == RunStatus.RUNNING:
        assert run.paced_until is not None and run.paced_until > clock
        assert run.lease_expires_at == run.paced_until
        # Not before its time: the lease holds until the window frees.
        with time_machine.travel(run.paced_until - timedelta(seconds=1), tick=False):
            assert runs.execute_run(run_id, worker="early") is None
        clock = run.paced_until
        run = go_on(run_id, clock)
        claims += 1
        assert claims < 20
    assert run.status == RunStatus.FINISHED, (run.status, run.error)
    assert run.attempt == 1  # going on after a pause is not a new attempt
    assert not AuditEvent.objects.filter(kind=AuditKind.RUN_RESUMED).exists()
    times = list(EvictionOrder.objects.filter(run=run).values_list("created_at", flat=True))
    assert len(times) == 500
    assert_never_over_the_pace(times)
    # At the pace, not slower: five windows for 500 orders.
    assert max(times) - min(times) == 4 * pacing.WINDOW
    assert claims == 5


def test_a_paced_run_stops_early_when_the_max_is_raised(partition):
    run_id = start_run()
    clock = START + timedelta(seconds=3)
    run = go_on(run_id, clock)
    clock = run.paced_until
    run = go_on(run_id, clock)
    assert EvictionOrder.objects.filter(run=run).count() == 200
    set_max(1000, at=clock + timedelta(seconds=10))
    run = go_on(run_id, run.paced_until)
    assert run.status == RunStatus.STOPPED
    assert "raised or removed" in run.stop_reason
    assert EvictionOrder.objects.filter(run=run).count() == 200


def test_the_run_page_and_the_api_show_a_paced_runs_progress(partition):
    run_id = start_run()
    clock = START + timedelta(seconds=3)
    run = go_on(run_id, clock)
    with time_machine.travel(clock + timedelta(seconds=5), tick=False):
        body = client_for("admin").get(f"/api/v1/runs/{run_id}/").json()
        page = signed_in_client("admin").get(f"/runs/{run_id}/").content.decode()
    assert body["paced_until"] is not None
    assert body["progress"]["preempted"] == 100 and body["progress"]["victims"] == 500
    expected = run.paced_until + 4 * pacing.WINDOW - pacing.WINDOW
    assert datetime.fromisoformat(body["progress"]["expected_end"]) == expected
    assert "100 of 500 victims taken" in page
    assert "expected to end at" in page


def test_the_api_refuses_a_pace_out_of_range(partition):
    refused = client_for("admin").patch(
        "/api/v1/partitions/paced/",
        {"max_evictions_per_minute": -1, "comment": "x"},
        format="json",
    )
    assert refused.status_code == 400
    assert "max_evictions_per_minute" in refused.json()["errors"]
    assert Partition.objects.get().max_evictions_per_minute == PACE
