"""Observe mode and pacing end to end: real Celery worker and beat, PostgreSQL and Redis, the real
clock (the harness of ``test_live_loop``: nothing mocked, nothing eager).

The paced test takes a little over a minute of real time: a pace is "per 60 seconds", and what it
proves is that the worker really waits a window between its chunks (the run paused, sent again
with a countdown through Redis) rather than in a frozen clock; three victims at two a minute is
the smallest case with a wait.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues import services as config_services
from tests.integration.test_live_loop import (  # noqa: F401
    PARTITION,
    SLACK,
    SWEEP_PERIOD,
    LiveLoop,
    live,
    make_partition,
    pending_timer,
    set_max,
    victims_of,
)
from tests.support.processes import wait_until
from tests.support.team import TEAM_TASKS, team_config

pytestmark = pytest.mark.redis


def set_settings(**settings: object) -> None:
    config_services.update_partition_settings(
        PARTITION, actor=None, comment="enforcement", **settings
    )


def test_an_observing_partition_records_the_run_and_evicts_nothing_until_switched(
    live: LiveLoop,  # noqa: F811
) -> None:
    """Slow (about 30 s): real worker and beat; it waits a quota delay and sweeps twice, once
    observing and once enforcing."""
    make_partition(team_config("1s"), TEAM_TASKS)
    set_settings(enforcement="observe")
    live.worker("worker")
    live.beat()

    set_max("root.team", 100)
    timer = pending_timer("root.team")
    wait_until(
        lambda: PreemptionRun.objects.filter(timer=timer, status=RunStatus.OBSERVED).exists(),
        1 + SWEEP_PERIOD + SLACK + 10,
        message="no observed run",
        watch=live.running(),
    )
    observed = PreemptionRun.objects.get(timer=timer)
    assert victims_of(observed) == ["a2", "b2", "b1"]
    assert observed.candidates.count() == 5
    assert not EvictionOrder.objects.exists()
    assert not Allocation.objects.exclude(state=AllocationState.RUNNING).exists()

    set_settings(enforcement="enforce")
    wait_until(
        lambda: PreemptionRun.objects.filter(status=RunStatus.FINISHED).exists(),
        SWEEP_PERIOD + SLACK + 10,
        message="the switch to enforce started no run",
        watch=live.running(),
    )
    enforced = PreemptionRun.objects.get(status=RunStatus.FINISHED)
    assert not enforced.observe
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == [
        "a2", "b1", "b2",
    ]  # fmt: skip


def test_a_paced_run_waits_a_window_between_its_orders_with_a_real_worker(
    live: LiveLoop,  # noqa: F811
) -> None:
    """Slow (over a minute): a pace is a number of evictions per minute, so the test waits for a
    second minute's window with a real worker and beat."""
    make_partition(team_config("1s"), TEAM_TASKS)
    set_settings(max_evictions_per_minute=2)
    live.worker("worker")
    live.beat()

    set_max("root.team", 100)
    wait_until(
        lambda: PreemptionRun.objects.filter(status=RunStatus.FINISHED).exists(),
        60 + 1 + SWEEP_PERIOD + SLACK + 20,
        message="the paced run did not finish",
        watch=live.running(),
    )
    run = PreemptionRun.objects.get()
    assert run.attempt == 1 and run.paced_until is None
    times = sorted(EvictionOrder.objects.filter(run=run).values_list("created_at", flat=True))
    assert len(times) == 3
    # Two at once, the third once the first two left the window, not much later.
    assert times[1] - times[0] < timedelta(seconds=2)
    assert timedelta(seconds=60) <= times[2] - times[0] < timedelta(seconds=60 + SLACK + 2)
