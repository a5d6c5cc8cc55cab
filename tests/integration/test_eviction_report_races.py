"""A cluster's report on an eviction order racing the acknowledgement of the same order, on
PostgreSQL: threads released at the same instant by a barrier, each with its own connection,
repeated.

Whatever the interleaving, the order ends acknowledged with its outcome, and a report is kept
only if it came while the order was pending: reported before the acknowledgement (its audit
event first), or refused as ``already_acknowledged`` with nothing written. Two orders reported
and acknowledged in opposite orders never deadlock (both lock orders in id order).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import (
    AckResult,
    ClusterReport,
    ReportResult,
    acknowledge_eviction,
    acknowledge_evictions,
    report_evictions,
)
from scheduler_admin.enforcement.models import ClusterStatus, EvictionOrder, EvictionStatus
from scheduler_admin.queues.models import Partition
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition, lower_max
from tests.support.racing import release_together
from tests.support.team import START, task, team_config

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 10
BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def pending() -> tuple[Partition, list[int]]:
    """The team partition with 40 tasks of 10G in root.team.b, lowered to 10G: a run
    preempted 39 of them, their orders pending."""
    with time_machine.travel(START, tick=False):
        partition = imported_partition(team_config("2s"))
        ingest(partition, [task(f"t{i:02}", "root.team.b", 10, 1) for i in range(40)])
        lower_max("root.team.b", 10, START)
    due = START + timedelta(seconds=3)
    with time_machine.travel(due, tick=False):
        for run_id in runs.sweep_due_quota_timers(due):
            runs.execute_run(run_id, worker="t")
    ids = list(EvictionOrder.objects.order_by("pk").values_list("pk", flat=True))
    assert len(ids) >= 2 * ROUNDS
    return partition, ids


def events(kind: AuditKind, order_id: int) -> list[int]:
    return list(
        AuditEvent.objects.filter(kind=kind, object_id=str(order_id))
        .order_by("id")
        .values_list("id", flat=True)
    )


def check(order_id: int, result: ReportResult, outcome: str) -> None:
    """The order is acknowledged with ``outcome``; the report was kept only while pending."""
    order = EvictionOrder.objects.get(pk=order_id)
    assert (order.status, order.outcome) == (EvictionStatus.ACKNOWLEDGED, outcome)
    [acknowledged] = events(AuditKind.EVICTION_ACKNOWLEDGED, order_id)
    reported = events(AuditKind.EVICTION_REPORTED, order_id)
    if result == ReportResult.REPORTED:
        assert (order.cluster_status, order.cluster_attempts) == ("blocked", 1)
        # Written while the order was pending: before the acknowledgement (the times are taken
        # before the locks, so the events' order tells, not the clocks).
        assert reported and reported[0] < acknowledged, "a report written after the ack"
    else:
        assert result == ReportResult.ALREADY_ACKNOWLEDGED, result
        assert (order.cluster_status, order.cluster_attempts, reported) == ("", 0, [])


def test_a_report_racing_the_acknowledgement_of_its_order(pending):
    partition, ids = pending
    seen = set()
    for round_ in range(ROUNDS):
        order_id = ids[round_]
        report = ClusterReport(order_id, ClusterStatus.BLOCKED, BUDGET, 429)
        reported, acked = release_together(
            lambda report=report: report_evictions(partition, [report], actor=None),
            lambda order_id=order_id: acknowledge_eviction(order_id, actor=None),
        )
        assert not isinstance(reported, BaseException), reported
        assert not isinstance(acked, BaseException), acked
        [(_, result)] = reported
        check(order_id, result, "evicted")
        seen.add(result)
    assert seen  # which of the two came first is up to the race


def test_two_orders_reported_and_acknowledged_in_opposite_orders_never_deadlock(pending):
    partition, ids = pending
    for round_ in range(ROUNDS):
        first, second = ids[-(2 * round_ + 2)], ids[-(2 * round_ + 1)]
        reports = [
            ClusterReport(first, ClusterStatus.BLOCKED, BUDGET, 429),
            ClusterReport(second, ClusterStatus.BLOCKED, BUDGET, 429),
        ]
        reported, acked = release_together(
            lambda reports=reports: report_evictions(partition, reports, actor=None),
            lambda a=first, b=second: acknowledge_evictions(
                partition, [(b, "gone"), (a, "gone")], actor=None
            ),
        )
        assert not isinstance(reported, BaseException), reported
        assert acked == [(second, AckResult.ACKNOWLEDGED), (first, AckResult.ACKNOWLEDGED)]
        results = dict(reported)
        for order_id in (first, second):
            check(order_id, results[order_id], "gone")
