"""sweep_pending_asks on PostgreSQL: which policy plans an ask, reservations, retries."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from scheduler_admin.cluster.models import Allocation, Ask
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues import services as config_services
from tests.support.asks import NOW, filled_partition

pytestmark = pytest.mark.django_db


@pytest.fixture
def partition():
    return filled_partition(first_hour=10)


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
