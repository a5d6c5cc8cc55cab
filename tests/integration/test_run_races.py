"""An admin's abort racing the worker that executes the run, on real PostgreSQL.

Released by a barrier, 10 trials with the abort landing before the claim, between evictions and
after the end: the abort either lands (the run ends failed, and the worker stops writing at
once: every eviction order belongs to a victim preempted before the abort) or finds the run
already finished; nothing else may happen, and neither side may fail with an error.

Both sides lock the run's row and the queue's fencing-token row, in the same order
(``runs._check_token``); in the opposite order each could hold one and wait for the other until
PostgreSQL killed one as a deadlock. That window is a few microseconds wide, so this test checks
the outcomes of the race rather than claiming to hit the deadlock itself.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import time_machine

from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from tests.integration.test_sweep_races import TRIALS, make_partition
from tests.support.racing import release_together_or_raise
from tests.support.team import START

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_abort_racing_the_executing_worker_ends_the_run_cleanly_every_time(settings) -> None:
    """The worker paces its four evictions 50 ms apart and each trial aborts a little later
    (0 to 270 ms), so the aborts land before the claim, between evictions and after the end."""
    settings.EVICTION_PACING_SECONDS = 0.05
    outcomes = []
    for trial in range(TRIALS):
        name = f"abort{trial}"
        make_partition(name)
        clock = START + timedelta(seconds=2)
        with time_machine.travel(clock, tick=False):
            [run_id] = [
                run_id
                for run_id in runs.sweep_due_quota_timers(clock)
                if PreemptionRun.objects.get(pk=run_id).queue_path == "root.team.b"
            ]

            def abort(run_id: int = run_id, delay: float = 0.03 * trial) -> str:
                time.sleep(delay)
                try:
                    runs.abort_run(run_id, actor=None, reason="race")
                except runs.RunNotActive:
                    return "already ended"
                return "aborted"

            executed, aborted = release_together_or_raise(
                lambda run_id=run_id: runs.execute_run(run_id, worker="w"), abort
            )
        run = PreemptionRun.objects.get(pk=run_id)
        orders = EvictionOrder.objects.filter(run=run).count()
        preempted = run.victims.filter(preempted_at__isnull=False).count()
        assert orders == preempted, (trial, orders, preempted)
        if aborted == "aborted":
            assert run.status == RunStatus.FAILED and run.error == "Aborted by system: race"
        else:
            assert run.status == RunStatus.FINISHED and orders == run.victims.count() == 4
        # A worker that lost the race returns None (fenced off); one that won returns the run.
        assert executed is None or executed.pk == run_id
        outcomes.append((aborted, preempted))
    # The trials did spread over the run: some aborts landed mid-run.
    assert any(aborted == "aborted" and 0 < preempted < 4 for aborted, preempted in outcomes), (
        outcomes
    )
