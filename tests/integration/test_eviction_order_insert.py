"""A chunk's eviction orders written with one ``unnest`` insert (PostgreSQL, 50 orders or more)
are the orders ``bulk_create`` writes (fewer orders, other databases): every column the same,
ids in the victims' order, and a task that already has an order (``eviction_once_per_allocation``)
skipped without failing the others."""

from __future__ import annotations

import pytest

from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunVictim
from scheduler_admin.enforcement.runs import orders
from tests.support.factories.partitions import saved_partition
from tests.support.team import START, team_config

pytestmark = pytest.mark.django_db

#: Columns compared (the id aside, which only has to follow the victims' order).
FIELDS = [f.attname for f in EvictionOrder._meta.concrete_fields if not f.primary_key]


def _run(partition, name: str, count: int, *, soft: bool = False):
    run = PreemptionRun.objects.create(
        partition=partition, policy="quota", queue_path=f"root.{name}", trigger="test",
        created_at=START, soft_eviction=soft,
    )  # fmt: skip
    victims = RunVictim.objects.bulk_create(
        RunVictim(run=run, position=i, allocation_id=f"{name}-{i:03d}", queue_path="root.team.a",
                  node_name=f"n{i % 7}", resources={"vcore": 100})
        for i in range(1, count + 1)
    )  # fmt: skip
    return run, victims


@pytest.mark.parametrize("soft", [False, True])
def test_orders_in_one_insert_are_those_of_bulk_create(soft):
    partition = saved_partition(team_config())
    count = orders._ARRAYS_FROM + 10
    run, victims = _run(partition, "big", count, soft=soft)
    # The 7th victim's task already has an order (another run's): it gets none.
    other, [taken] = _run(partition, "other", 1)
    EvictionOrder.objects.create(
        partition=partition, run=other, victim=taken, allocation_id=victims[6].allocation_id,
        node_name="n0", created_at=START, next_attempt_at=START,
    )  # fmt: skip

    orders.insert_orders(run, victims, START)

    stored = list(EvictionOrder.objects.filter(run=run).order_by("pk"))
    expected = [v for v in victims if v.allocation_id != victims[6].allocation_id]
    assert [order.victim_id for order in stored] == [victim.pk for victim in expected]
    template = EvictionOrder(
        partition=partition, run=run, soft=soft, created_at=START, next_attempt_at=START
    )
    for order, victim in zip(stored, expected, strict=True):
        wanted = orders._order_of(template, victim)
        assert {f: getattr(order, f) for f in FIELDS} == {f: getattr(wanted, f) for f in FIELDS}

    # The small path (bulk_create) writes the same columns.
    few, small = _run(partition, "few", 3, soft=soft)
    orders.insert_orders(few, small, START)
    written = list(EvictionOrder.objects.filter(run=few).order_by("pk"))
    same = [f for f in FIELDS if f not in ("run_id", "victim_id", "allocation_id", "node_name")]
    assert {tuple(getattr(order, f) for f in same) for order in written} == {
        tuple(getattr(stored[0], f) for f in same)
    }
