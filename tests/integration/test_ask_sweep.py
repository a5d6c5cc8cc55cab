"""sweep_pending_asks on PostgreSQL: which policy plans an ask, reservations, retries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from scheduler_admin.cluster.models import Allocation, Ask
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.yaml_io import parse_queues_yaml

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: prod
            resources: {guaranteed: {vcore: "8"}}
            properties: {preemption.delay: 30s}
          - name: batch
            resources: {guaranteed: {vcore: "2"}}
"""


@pytest.fixture
def partition():
    with time_machine.travel(NOW - timedelta(hours=1), tick=False):
        [config] = parse_queues_yaml(CONFIG, settings_for=config_services.settings_for_import)
        partition = config_services.save_partition_config(config, actor=None, comment="x").partition
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"vcore": "8"}}],
            "allocations": [
                {"id": f"b{i}", "queue": "root.batch", "app": f"batch{i}", "node": "n1",
                 "resources": {"vcore": "2"}, "created_at": f"2026-03-01T1{i}:00:00Z"}
                for i in range(4)
            ],
        },
        actor=None,
    )  # fmt: skip
    return partition


def add_ask(partition, created_at: datetime, **extra) -> None:
    ask = {"id": "k1", "queue": "root.prod", "app": "web", "resources": {"vcore": "2"},
           "created_at": created_at.isoformat(), **extra}  # fmt: skip
    ingest_cluster_state(partition, {"asks": [ask]}, actor=None)


def test_an_ask_waits_for_its_queues_delay_then_gets_a_run_and_a_reserved_node(partition):
    add_ask(partition, NOW - timedelta(seconds=10))
    assert runs.sweep_pending_asks(NOW) == []  # 10 s < prod's 30 s preemption.delay
    [run_id] = runs.sweep_pending_asks(NOW + timedelta(seconds=25))
    run = PreemptionRun.objects.get(pk=run_id)
    assert (run.policy, run.trigger, run.trigger_id, run.planned) == (
        "inter_queue",
        "ask",
        "k1",
        True,
    )
    assert Ask.objects.get(external_id="k1").node == "n1"  # reserved for the ask
    done = runs.execute_run(run_id, worker="w")
    assert done.status == RunStatus.FINISHED
    # batch is over its guarantee (8 > 2): the newest task goes first
    assert list(done.victims.values_list("allocation_id", flat=True)) == ["b3"]


def test_an_ask_whose_victims_are_still_being_evicted_is_not_planned_again(partition):
    add_ask(partition, NOW - timedelta(minutes=5))
    [run_id] = runs.sweep_pending_asks(NOW)
    runs.execute_run(run_id, worker="w")
    assert runs.sweep_pending_asks(NOW + timedelta(seconds=5)) == []
    order = EvictionOrder.objects.get()
    acknowledge_eviction(order.pk, actor=None)
    assert Allocation.objects.get(external_id="b3").state == "released"
    # b3 is gone and the ask now fits: nothing to do (the scheduler places it)
    assert runs.sweep_pending_asks(NOW + timedelta(seconds=10)) == []


def test_an_ask_that_cannot_be_helped_is_retried_only_after_its_delay(partition):
    add_ask(partition, NOW - timedelta(minutes=5), priority=-1)  # outranked by every task
    assert runs.sweep_pending_asks(NOW) == []
    assert Ask.objects.get(external_id="k1").retry_after == NOW + timedelta(seconds=30)
    ingest_cluster_state(partition, {"asks": [{"id": "k1", "queue": "root.prod", "app": "web",
        "resources": {"vcore": "2"}, "created_at": (NOW - timedelta(minutes=5)).isoformat()}]},
        actor=None)  # fmt: skip
    assert runs.sweep_pending_asks(NOW + timedelta(seconds=10)) == []  # still waiting
    assert len(runs.sweep_pending_asks(NOW + timedelta(seconds=30))) == 1


def test_the_priority_policy_plans_when_the_partition_says_so(partition):
    partition.ask_policy = "priority"
    config = partition.current_config()
    from dataclasses import replace

    config_services.save_partition_config(
        replace(config, settings=replace(config.settings, ask_policy="priority")),
        actor=None,
        comment="priority",
    )
    add_ask(partition, NOW - timedelta(minutes=5), priority=10)
    [run_id] = runs.sweep_pending_asks(NOW)
    assert PreemptionRun.objects.get(pk=run_id).policy == "priority"
