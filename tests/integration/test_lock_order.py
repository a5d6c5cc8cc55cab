"""``scheduler_admin.base.lock_order``: a write PostgreSQL ends as a deadlock victim is run again
(never an error for the caller), and an error that outlives every attempt is a 503 in the API,
never a 500.

The deadlock is a real one: two writers each lock one partition row and then wait for the
other's (the opposite of the one order every product write follows), released by a barrier;
PostgreSQL kills one after its ``deadlock_timeout`` (1 s by default).
"""

from __future__ import annotations

import threading
from collections import Counter

import psycopg
import pytest
from django.db import OperationalError, transaction
from django.db.models import F
from rest_framework.test import APIRequestFactory

from scheduler_admin.base.api.errors import exception_handler
from scheduler_admin.base.lock_order import is_write_conflict, lock_partition, retry_on_conflict
from scheduler_admin.queues.models import Partition
from tests.support.racing import release_together


@pytest.mark.django_db(transaction=True)
def test_a_write_that_meets_a_deadlock_is_run_again_and_both_writes_land() -> None:
    first = Partition.objects.create(name="first").pk
    second = Partition.objects.create(name="second").pk
    both_hold_one = threading.Barrier(2)
    attempts: Counter[str] = Counter()

    def write(name: str, locks: tuple[int, int]) -> None:
        @retry_on_conflict
        def attempt() -> None:
            attempts[name] += 1
            with transaction.atomic():
                lock_partition(locks[0], exclusive=True)
                if attempts[name] == 1:
                    both_hold_one.wait(timeout=30)
                lock_partition(locks[1], exclusive=True)
                Partition.objects.filter(pk=locks[0]).update(version=F("version") + 1)

        attempt()

    results = release_together(
        lambda: write("a", (first, second)), lambda: write("b", (second, first))
    )
    assert results == [None, None], results  # neither caller saw the deadlock
    assert sorted(attempts.values()) == [1, 2], attempts  # the victim ran once more
    assert set(Partition.objects.values_list("version", flat=True)) == {2}


def deadlock_error() -> OperationalError:
    """What Django raises when PostgreSQL ends a transaction as a deadlock victim."""
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


def test_only_deadlocks_and_serialization_failures_count_as_conflicts() -> None:
    assert is_write_conflict(deadlock_error())
    serialization = OperationalError("could not serialize access")
    serialization.__cause__ = psycopg.errors.SerializationFailure("could not serialize")
    assert is_write_conflict(serialization)
    other = OperationalError("connection refused")
    other.__cause__ = psycopg.errors.ConnectionException("connection refused")
    assert not is_write_conflict(other)
    assert not is_write_conflict(ValueError("deadlock"))


def test_a_write_that_keeps_meeting_conflicts_gives_up_and_the_api_answers_503() -> None:
    calls: list[int] = []

    @retry_on_conflict
    def always_a_victim() -> None:
        calls.append(1)
        raise deadlock_error()

    with pytest.raises(OperationalError) as raised:
        always_a_victim()
    assert len(calls) == 5  # WRITE_ATTEMPTS
    request = APIRequestFactory().post("/api/v1/runs/1/abort")
    response = exception_handler(raised.value, {"request": request})
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.data["code"] == "busy"


def test_the_lock_order_names_the_partition_models_table() -> None:
    """The base names the partition table instead of importing the model (it knows no app)."""
    from scheduler_admin.base.lock_order import PARTITION_TABLE

    assert Partition._meta.db_table == PARTITION_TABLE
