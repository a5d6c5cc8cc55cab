"""Bench section ``acks``: acknowledging 5,000 eviction orders (issue 14, row "acknowledging
5,000 orders").

The orders are made directly (a finished run of tenant ``root.t05`` with 5,000 victims, their
orders pending and their tasks ``preempting``): what is measured is the acknowledgement only.
The figure is one ``POST .../evictions/acknowledge`` of all 5,000 through the API with an
operator's token (the agent's way); the baseline is the one-by-one service
(``evictions.acknowledge_eviction``), timed on 500 other orders and scaled to 5,000. The note
says how many requests each way needs and what the write throttle allows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from scheduler_admin.bench.harness import Row

ORDERS = 5000
ONE_BY_ONE = 500
TENANT = "root.t05"


def rows(context) -> Iterator[Row]:
    from django.conf import settings

    from scheduler_admin.enforcement.evictions import acknowledge_eviction
    from scheduler_admin.enforcement.models import EvictionOrder

    partition = context.partition
    singles = _pending_orders(partition, ONE_BY_ONE, offset=ORDERS)
    started = time.perf_counter()
    for order_id in singles:
        acknowledge_eviction(order_id, partition_name=partition.name, actor=None, via="bench")
    rate = len(singles) / (time.perf_counter() - started)

    orders = _pending_orders(partition, ORDERS, offset=0)
    client = context.api_client("operator")
    url = f"/api/v1/partitions/{partition.name}/evictions/acknowledge"
    body = {"orders": [{"id": order_id} for order_id in orders]}
    started = time.perf_counter()
    response = client.post(url, body, format="json")
    seconds = time.perf_counter() - started
    assert response.status_code == 200, response.content[:500]
    assert response.json()["acknowledged"] == ORDERS, response.json()["acknowledged"]
    assert not EvictionOrder.objects.filter(pk__in=orders, status="pending").exists()
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    yield Row(
        f"acknowledging {ORDERS:,} orders (one bulk API request)",
        seconds,
        "s",
        baseline=ORDERS / rate,
        baseline_name=f"one by one (acknowledge_eviction, {rate:,.0f}/s)",
        goal=2.0,
        note=f"{ORDERS / seconds:,.0f}/s; 1 request (throttle: token writes "
        f"{rates['agent_writes']}, console writes {rates['writes']}) instead of {ORDERS:,}",
    )


def _pending_orders(partition, count: int, *, offset: int) -> list[int]:
    """``count`` pending orders of a finished run on the tenant's tasks (skipping ``offset``
    tasks), their tasks ``preempting``; returns the orders' ids."""
    from django.utils import timezone

    from scheduler_admin.cluster.models import Allocation
    from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunVictim

    now = timezone.now()
    tasks = list(
        Allocation.objects.filter(
            partition=partition, queue_path__startswith=TENANT + ".", state="running"
        )
        .order_by("external_id")
        .values_list("external_id", "queue_path", "node_name", "resources")[:count]
    )
    run = PreemptionRun.objects.create(
        partition=partition, policy="quota", queue_path=TENANT, trigger="bench",
        created_at=now, status="finished", planned=True,
    )  # fmt: skip
    victims = RunVictim.objects.bulk_create(
        RunVictim(run=run, position=i, allocation_id=task, queue_path=path, node_name=node,
                  resources=amounts, preempted_at=now)
        for i, (task, path, node, amounts) in enumerate(tasks)
    )  # fmt: skip
    EvictionOrder.objects.bulk_create(
        EvictionOrder(partition=partition, run=run, victim=victim,
                      allocation_id=victim.allocation_id, node_name=victim.node_name,
                      created_at=now, next_attempt_at=now)
        for victim in victims
    )  # fmt: skip
    Allocation.objects.filter(
        partition=partition, external_id__in=[task for task, *_ in tasks]
    ).update(state="preempting", state_changed_at=now)
    del offset  # the tasks taken are running ones: earlier orders' tasks are not
    return list(EvictionOrder.objects.filter(run=run).order_by("pk").values_list("pk", flat=True))
