"""First heartbeats of one new agent name racing each other, on PostgreSQL: threads released at
the same instant by a barrier, each with its own connection, repeated with a new name each
round. Every heartbeat succeeds, one row holds the name, and exactly one ``agent.registered``
event is written (and one ``agent.config_applied`` for the revision the cluster runs).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.queues.models import Partition
from tests.support.racing import release_together

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 12
THREADS = 4


def test_first_heartbeats_of_a_new_name_racing_register_it_once() -> None:
    partition = Partition.objects.create(name="default")
    for round_ in range(ROUNDS):
        name = f"agent-{round_}"
        beats = [
            Heartbeat(
                name=name,
                started_at=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
                cluster="kind-dev",
                lag_seconds=float(thread),
                running_revision=7,
                publishing=True,
            )
            for thread in range(THREADS)
        ]
        results = release_together(
            *[lambda beat=beat: record_heartbeat(partition, beat, actor=None) for beat in beats]
        )
        failures = [result for result in results if isinstance(result, BaseException)]
        assert not failures, failures
        assert {result.pk for result in results} == {ClusterAgent.objects.get(name=name).pk}
        for kind in (AuditKind.AGENT_REGISTERED, AuditKind.AGENT_CONFIG_APPLIED):
            assert AuditEvent.objects.filter(kind=kind, object_id=name).count() == 1, (
                f"round {round_}: {kind}"
            )
    assert ClusterAgent.objects.count() == ROUNDS
