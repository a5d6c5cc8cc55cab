"""Cluster-state pushes racing each other and the enforcement services, on PostgreSQL.

Threads are released at the same instant by a barrier, each with its own connection, and
every race is repeated: two pushes of the same new rows (in opposite orders) both succeed and
count each row as created exactly once; a victim marked ``preempting`` while a push that does
not name its state is being written stays ``preempting``. The last test forces the worst
interleaving instead of hoping for it: the push reads the victims as running, then waits for
their rows while the enforcement marks them and commits.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState, Application
from scheduler_admin.cluster.services import IngestResult, ingest_cluster_state
from scheduler_admin.queues.models import Partition
from tests.support.racing import release_together

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = 400
ROUNDS = 8


def body(round_: int, *, reverse: bool = False, priority: int = 0) -> dict[str, Any]:
    allocations = [
        {"id": f"r{round_}-pod-{i:04}", "queue": "root.prod.web", "node": "n1",
         "app": f"r{round_}-app-{i // 10}", "resources": {"memory": "1Gi"},
         "priority": priority}
        for i in range(TASKS)
    ]  # fmt: skip
    return {
        "nodes": [{"name": "n1", "capacity": {"memory": "1Ti"}}],
        "allocations": allocations[::-1] if reverse else allocations,
    }


@pytest.fixture
def partition() -> Partition:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return Partition.objects.get(name="default")


def test_two_pushes_of_the_same_new_rows_both_succeed_and_count_each_row_once(partition):
    for round_ in range(ROUNDS):
        events = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).count()
        results = release_together(
            lambda r=round_: ingest_cluster_state(partition, body(r), actor=None),
            lambda r=round_: ingest_cluster_state(partition, body(r, reverse=True), actor=None),
        )
        assert all(isinstance(result, IngestResult) for result in results), results
        created = [result.changed["allocations"]["created"] for result in results]
        assert sorted(created) == [0, TASKS], created  # one push created them, one found them
        assert sum(result.changed["applications"]["created"] for result in results) == TASKS // 10
        # only the push that changed something is audited
        assert AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).count() == events + 1
    assert Allocation.objects.count() == TASKS * ROUNDS
    assert Application.objects.count() == TASKS // 10 * ROUNDS


def test_removing_an_apps_last_tasks_while_another_push_adds_one_keeps_the_new_task(partition):
    """One push removes every task of some applications (which then go too); another, at the
    same instant, adds a task to each of them. Either order is fine: the added tasks survive
    with their application, and neither push fails (a foreign-key error or a deadlock)."""
    ingest_cluster_state(partition, body(0), actor=None)
    for round_ in range(ROUNDS):
        apps = range(round_ * 5, round_ * 5 + 5)
        removed = [f"r0-pod-{i:04}" for i in range(TASKS) if i // 10 in apps]
        added = [
            {"id": f"late-{round_}-{app}", "queue": "root.prod.web", "node": "n1",
             "app": f"r0-app-{app}", "resources": {"memory": "1Gi"}}
            for app in apps
        ]  # fmt: skip
        results = release_together(
            lambda removed=removed: ingest_cluster_state(
                partition, {"remove": {"allocations": removed}}, actor=None
            ),
            lambda added=added: ingest_cluster_state(partition, {"allocations": added}, actor=None),
        )
        assert all(isinstance(result, IngestResult) for result in results), results
        for item in added:
            task = Allocation.objects.select_related("application").get(external_id=item["id"])
            assert task.application.external_id == item["app"]
        assert not Allocation.objects.filter(external_id__in=removed).exists()


def test_a_victim_marked_preempting_during_a_push_stays_preempting(partition):
    """The push changes every task's priority but names no state; the enforcement marks half of
    them preempting at the same moment. Whatever the interleaving, no victim is set back."""
    ingest_cluster_state(partition, body(0), actor=None)
    victims = [f"r0-pod-{i:04}" for i in range(0, TASKS, 2)]
    for round_ in range(1, ROUNDS + 1):
        Allocation.objects.update(state=AllocationState.RUNNING)

        def mark() -> int:
            return Allocation.objects.filter(external_id__in=victims).update(
                state=AllocationState.PREEMPTING
            )

        results = release_together(
            lambda r=round_: ingest_cluster_state(partition, body(0, priority=r), actor=None),
            mark,
        )
        assert isinstance(results[0], IngestResult) and results[1] == len(victims), results
        assert set(
            Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
        ) == {AllocationState.PREEMPTING}, f"round {round_}"
        assert set(Allocation.objects.values_list("priority", flat=True)) == {round_}


def wait_for_a_lock_wait() -> None:
    """Until some session of this database waits for a row lock (the push, blocked)."""
    with connection.cursor() as cursor:
        for _ in range(2000):
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            threading.Event().wait(0.01)
    raise AssertionError("the push never waited for the victims' rows")


def test_a_push_that_read_a_victim_as_running_does_not_write_running_back(partition):
    ingest_cluster_state(partition, body(0), actor=None)
    victims = [f"r0-pod-{i:04}" for i in range(0, TASKS, 2)]
    locked = threading.Event()

    def enforce() -> None:
        try:
            with transaction.atomic():
                list(Allocation.objects.select_for_update().filter(external_id__in=victims))
                locked.set()
                wait_for_a_lock_wait()
                Allocation.objects.filter(external_id__in=victims).update(
                    state=AllocationState.PREEMPTING
                )
        finally:
            locked.set()
            connection.close()

    thread = threading.Thread(target=enforce)
    thread.start()
    locked.wait()
    result = ingest_cluster_state(partition, body(0, priority=7), actor=None)
    thread.join()
    assert result.changed["allocations"]["updated"] == TASKS
    assert set(
        Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
    ) == {AllocationState.PREEMPTING}
    assert set(Allocation.objects.values_list("priority", flat=True)) == {7}
