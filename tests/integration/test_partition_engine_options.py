"""The live loop plans with the partition's own engine options (PostgreSQL): required-node
preemption honours ``max_victims`` and ``victim_strategy``, and a job run of a partition with
``soft_eviction`` gives soft eviction orders (SPEC 4.3, 4.5)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues import services as config_services
from tests.support.asks import NOW, filled_partition

pytestmark = pytest.mark.django_db


@pytest.fixture
def partition():
    """One 8-core node filled by four 2-core batch tasks."""
    return filled_partition(first_hour=0)


def set_options(partition, **options) -> None:
    config_services.update_partition_settings(
        partition.name, actor=None, comment="options", **options
    )


def add_daemonset_ask(partition, vcore: str) -> None:
    ask = {"id": "ds", "queue": "root.prod", "app": "ds", "resources": {"vcore": vcore},
           "required_node": "n1", "priority": 100,
           "created_at": (NOW - timedelta(minutes=5)).isoformat()}  # fmt: skip
    ingest_cluster_state(partition, {"asks": [ask]}, actor=None)


def add_gang(partition) -> None:
    asks = [
        {"id": f"g{i}", "queue": "root.prod", "app": "gang", "job": "j1",
         "resources": {"vcore": "2"}, "priority": 10,
         "created_at": (NOW - timedelta(minutes=5)).isoformat()}
        for i in range(2)
    ]  # fmt: skip
    ingest_cluster_state(partition, {"asks": asks}, actor=None)


def test_a_daemonset_ask_takes_as_many_victims_as_max_victims_allows(partition):
    add_daemonset_ask(partition, "6")  # needs three of the four 2-core tasks gone
    set_options(partition, max_victims=2)
    assert runs.sweep_pending_asks(NOW) == []  # too_many_victims -> does_not_help
    assert Ask.objects.get(external_id="ds").retry_after is not None

    set_options(partition, max_victims=3)
    Ask.objects.filter(external_id="ds").update(retry_after=None)
    [run_id] = runs.sweep_pending_asks(NOW)
    run = runs.execute_run(run_id, worker="w")
    assert (run.policy, run.status, run.outcome) == (
        "required_node",
        RunStatus.FINISHED,
        "complete",
    )
    assert run.victims.count() == 3


def test_a_single_only_strategy_gives_no_run_where_multiple_would(partition):
    add_daemonset_ask(partition, "4")  # no one 2-core task frees 4 cores
    set_options(partition, victim_strategy=("single",))
    assert runs.sweep_pending_asks(NOW) == []
    set_options(partition, victim_strategy=("single", "multiple"))
    Ask.objects.filter(external_id="ds").update(retry_after=None)
    [run_id] = runs.sweep_pending_asks(NOW)
    assert runs.execute_run(run_id, worker="w").victims.count() == 2


@pytest.mark.parametrize("soft", [False, True])
def test_a_job_run_orders_softly_exactly_when_the_partition_says_so(partition, soft):
    set_options(partition, soft_eviction=soft)
    add_gang(partition)
    [run_id] = runs.sweep_pending_asks(NOW)
    run = runs.execute_run(run_id, worker="w")
    assert (run.policy, run.soft_eviction, run.outcome) == ("job", soft, "complete")
    orders = list(EvictionOrder.objects.filter(run=run))
    assert len(orders) == 2 and {order.soft for order in orders} == {soft}
    events = AuditEvent.objects.filter(kind=AuditKind.VICTIM_PREEMPTED, data__run=run.pk)
    assert events.count() == 2
    assert all(event.data.get("soft", False) is soft for event in events)
    assert all(("soft eviction order" in event.summary) is soft for event in events)
    # the victims stop counting at once either way; the order is acknowledged when the pod is gone
    victims = [order.allocation_id for order in orders]
    states = Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
    assert set(states) == {AllocationState.PREEMPTING}
    for order in orders:
        acknowledge_eviction(order.pk, actor=None)
    states = Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
    assert set(states) == {AllocationState.RELEASED}


def test_soft_eviction_is_a_job_option_an_inter_queue_run_evicts_as_usual(partition):
    set_options(partition, soft_eviction=True)
    ask = {"id": "k1", "queue": "root.prod", "app": "web", "resources": {"vcore": "2"},
           "created_at": (NOW - timedelta(minutes=5)).isoformat()}  # fmt: skip
    ingest_cluster_state(partition, {"asks": [ask]}, actor=None)
    [run_id] = runs.sweep_pending_asks(NOW)
    run = runs.execute_run(run_id, worker="w")
    assert (run.policy, run.soft_eviction) == ("inter_queue", False)
    assert not EvictionOrder.objects.filter(run=run, soft=True).exists()


def test_a_resumed_job_run_keeps_the_soft_flag_it_was_created_with(partition):
    set_options(partition, soft_eviction=True)
    add_gang(partition)
    [run_id] = runs.sweep_pending_asks(NOW)
    set_options(partition, soft_eviction=False)  # changed while the run waits for a worker
    run = runs.execute_run(run_id, worker="w")
    assert set(EvictionOrder.objects.filter(run=run).values_list("soft", flat=True)) == {True}
    assert PreemptionRun.objects.get(pk=run_id).soft_eviction is True
