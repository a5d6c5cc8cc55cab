"""A large cluster-state push has the tables it changed analysed once it commits, so the planner
never plans a run's eviction updates on a table it knows nothing about; a small push does not.

The statistics are PostgreSQL's own (``pg_statistic``, through the ``pg_stats`` view), removed
at the start of each test (inside the test's transaction, so the removal is rolled back too).
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from scheduler_admin.cluster.models import Allocation
from scheduler_admin.cluster.services import ANALYSE_MIN_ROWS, ingest_cluster_state
from scheduler_admin.queues.models import Partition

pytestmark = pytest.mark.django_db

TABLE = Allocation._meta.db_table


def forget_statistics() -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [TABLE])
        cursor.execute("UPDATE pg_class SET reltuples = -1 WHERE relname = %s", [TABLE])


def has_statistics() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stats WHERE tablename = %s AND attname = 'external_id'",
            [TABLE],
        )
        return cursor.fetchone()[0] > 0


def push(partition: Partition, count: int, prefix: str) -> None:
    allocations = [
        {"id": f"{prefix}-{i:05}", "queue": "root.prod.web", "node": "n1", "app": f"{prefix}-app",
         "resources": {"memory": "1Gi"}}
        for i in range(count)
    ]  # fmt: skip
    body = {"nodes": [{"name": "n1", "capacity": {"memory": "100Ti"}}], "allocations": allocations}
    ingest_cluster_state(partition, body, actor=None)


@pytest.fixture
def partition() -> Partition:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return Partition.objects.get(name="default")


def test_a_large_push_is_analysed_once_it_commits(partition, django_capture_on_commit_callbacks):
    forget_statistics()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        push(partition, ANALYSE_MIN_ROWS + 200, "big")
    assert not has_statistics()  # nothing before the commit
    for callback in callbacks:
        callback()
    assert has_statistics()


def test_a_small_push_is_not_analysed(partition, django_capture_on_commit_callbacks):
    forget_statistics()
    with django_capture_on_commit_callbacks(execute=True):
        push(partition, 50, "small")
    assert not has_statistics()
