"""A run preempts its victims in chunks, one transaction each
(``runs.execution._preempt_chunk``): killed between two chunks it is resumed with exactly the
victims not yet preempted, and a victim that another run already evicts is skipped inside its
chunk without failing it.

The team partition (``tests/support/team.py``) with root.team lowered to 100G: three victims.
Time moves with time-machine; the reaper and the claims take ``now``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from scheduler_admin.audit import services as audit_services
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    RunStatus,
    RunVictim,
)
from scheduler_admin.enforcement.runs import execution
from tests.integration.test_run_failures import partition, start_team_run  # noqa: F401
from tests.support.team import START

pytestmark = pytest.mark.django_db


class WorkerKilled(BaseException):
    """Stands for SIGKILL: not an ``Exception``, so the run's error handling never sees it."""


def preempted_events(run_id: int) -> list[AuditEvent]:
    return [
        event
        for event in AuditEvent.objects.filter(kind=AuditKind.VICTIM_PREEMPTED).order_by("id")
        if event.data["run"] == run_id
    ]


def test_a_worker_killed_between_chunks_is_resumed_with_the_victims_left(
    partition,  # noqa: F811
    settings,
    monkeypatch,
):
    settings.RUN_EVICTION_BATCH = 2
    settings.RUN_LEASE_SECONDS = 10
    monkeypatch.setattr(audit_services, "_ARRAYS_FROM", 1)  # the events go as arrays
    run_id = start_team_run()
    chunk = execution._preempt_chunk
    calls = []

    def dies_before_the_second_chunk(run, victims, token):
        calls.append([victim.allocation_id for victim in victims])
        if len(calls) == 2:
            raise WorkerKilled
        return chunk(run, victims, token)

    monkeypatch.setattr(execution, "_preempt_chunk", dies_before_the_second_chunk)
    clock = START + timedelta(seconds=3)
    with time_machine.travel(clock, tick=False), pytest.raises(WorkerKilled):
        runs.execute_run(run_id, worker="doomed")
    run = PreemptionRun.objects.get(pk=run_id)
    planned = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
    assert len(planned) == 3 and calls == [planned[:2], planned[2:]]
    # The first chunk committed whole; the second wrote nothing.
    assert run.status == RunStatus.RUNNING
    first = dict(
        run.victims.filter(preempted_at__isnull=False).values_list("allocation_id", "preempted_at")
    )
    assert sorted(first) == sorted(planned[:2])
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == sorted(
        planned[:2]
    )

    monkeypatch.setattr(execution, "_preempt_chunk", chunk)
    clock += timedelta(seconds=11)  # past the lease
    with time_machine.travel(clock, tick=False):
        assert runs.reap_stale_runs() == [run_id]
        run = runs.execute_run(run_id, worker="rescuer")
    assert run is not None and run.status == RunStatus.FINISHED and run.attempt == 2
    # Every victim preempted exactly once; the first chunk's were not touched again.
    again = dict(run.victims.values_list("allocation_id", "preempted_at"))
    assert all(again[victim] == first[victim] for victim in planned[:2])
    assert again[planned[2]] == clock
    orders = list(EvictionOrder.objects.order_by("id").values_list("allocation_id", "run_id"))
    assert orders == [(victim, run_id) for victim in planned]
    assert set(
        Allocation.objects.filter(external_id__in=planned).values_list("state", flat=True)
    ) == {AllocationState.PREEMPTING}
    # One audit event per victim, as when each victim was its own transaction.
    events = preempted_events(run_id)
    assert [event.object_id for event in events] == planned
    last = events[-1]
    order = EvictionOrder.objects.get(allocation_id=planned[2])
    victim = RunVictim.objects.get(run=run, allocation_id=planned[2])
    assert last.summary == (
        f"Run {run_id} preempted {planned[2]} on n1 (eviction order {order.pk})"
    )
    assert last.data == {
        "run": run_id, "allocation": planned[2], "order": order.pk, "position": 2,
        "resources": victim.resources, "fence_token": run.fence_token,
    }  # fmt: skip
    assert last.queue_path == victim.queue_path and last.object_type == "allocation"
    assert AuditEvent.objects.filter(kind=AuditKind.RUN_RESUMED).count() == 1


def test_a_victim_another_run_already_evicts_is_skipped_inside_its_chunk(partition):  # noqa: F811
    run_id = start_team_run()
    clock = START + timedelta(seconds=3)
    with time_machine.travel(clock, tick=False):
        token = runs.claim_run(run_id, worker="w")
        run = PreemptionRun.objects.select_related("partition").get(pk=run_id)
        execution._plan_run(run, token)
        planned = list(run.victims.order_by("position").values_list("allocation_id", flat=True))
        taken = planned[1]  # in the middle of the (only) chunk
        # Another run ordered the eviction of that task after this one planned.
        other = PreemptionRun.objects.create(
            partition=partition, policy="priority", queue_path="root.team.a", trigger="ask",
            trigger_id="ask9", created_at=clock, status=RunStatus.FINISHED, planned=True,
        )  # fmt: skip
        stolen = RunVictim.objects.create(
            run=other, position=0, allocation_id=taken, queue_path="root.team.b", node_name="n1"
        )
        EvictionOrder.objects.create(
            partition=partition, run=other, victim=stolen, allocation_id=taken,
            node_name="n1", created_at=clock,
        )  # fmt: skip
        execution._preempt_victims(run, token)
        execution._finish_run(run, token)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    # Every victim is marked (none is tried again on a resume); the taken one keeps the other
    # run's order, and this run ordered and audited the other two only.
    assert not run.victims.filter(preempted_at__isnull=True).exists()
    assert EvictionOrder.objects.get(allocation_id=taken).run_id == other.pk
    mine = EvictionOrder.objects.filter(run=run).values_list("allocation_id", flat=True)
    assert sorted(mine) == sorted(v for v in planned if v != taken)
    assert [event.object_id for event in preempted_events(run_id)] == [
        v for v in planned if v != taken
    ]
    states = dict(Allocation.objects.values_list("external_id", "state"))
    assert states[taken] == AllocationState.RUNNING  # the other run's business
    assert {states[v] for v in planned if v != taken} == {AllocationState.PREEMPTING}
