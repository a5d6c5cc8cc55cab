"""A scheduled change on the real stack (SPEC 6 "Scheduled changes", SPEC 5 beat): a real Celery
worker and beat (``test_live_loop.LiveLoop``), PostgreSQL and Redis, no clock moved.

In the ``live-loop`` xdist group (``tests/conftest.py``): its timing assertions are against
beat's 5 s sweeps, so it never runs beside the other live-loop tests.
"""

from __future__ import annotations

import math
import time
from datetime import timedelta

from django.utils import timezone

from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import ConfigRevision, Queue, ScheduledChange, ScheduledStatus
from tests.integration.test_live_loop import (  # noqa: F401 - ``live`` is the fixture
    SLACK,
    SWEEP_PERIOD,
    LiveLoop,
    live,
    make_partition,
)
from tests.support.factories.users import user_with_role
from tests.support.processes import wait_until
from tests.support.team import GB, TEAM_TASKS, team_config

TASK = "scheduler_admin.accounts.tasks.apply_scheduled_changes"


def test_a_scheduled_change_survives_a_restart_and_applies_within_one_sweep_of_its_time(
    live: LiveLoop,  # noqa: F811 - the fixture imported above
) -> None:
    """Submitted while worker and beat run, which then stop and start again before its time:
    the change is kept in the database, not in a process, so the restarted beat applies it no
    earlier than ``apply_at`` and within one sweep period (plus slack) after it, as a revision
    by its submitter that starts the quota timer like any save.

    Over 20 s: two starts of worker and beat (seconds each on a loaded machine) and a wait
    until ``apply_at``, which is 12 s or three times the first start, so the stop and the
    second start fit before it."""
    make_partition(team_config("60s"), TEAM_TASKS)
    started = time.monotonic()
    before = [live.worker("worker"), live.beat("beat")]
    delay = max(12, math.ceil(3 * (time.monotonic() - started)))
    author = user_with_role("planner", "operator")
    apply_at = timezone.now() + timedelta(seconds=delay)
    queue = Queue.objects.get(path="root.team")
    change = scheduled.schedule_queue_change(
        "default", "root.team", version=queue.version, actor=author, comment="evening quota",
        apply_at=apply_at, max={"memory": 100 * GB},
    )  # fmt: skip
    revisions = ConfigRevision.objects.count()

    live.stop(before)
    worker = live.worker("worker-restarted")
    live.beat("beat-restarted")
    assert timezone.now() < apply_at, "the restart took too long to come back before apply_at"
    change.refresh_from_db()
    assert change.status == ScheduledStatus.PENDING
    assert ConfigRevision.objects.count() == revisions

    wait_until(
        lambda: (
            ScheduledChange.objects.filter(pk=change.pk)
            .exclude(status=ScheduledStatus.PENDING)
            .exists()
        ),
        (apply_at - timezone.now()).total_seconds() + SWEEP_PERIOD + SLACK + 10,
        message="the scheduled change was never applied",
        watch=live.running(),
    )
    change.refresh_from_db()
    assert change.status == ScheduledStatus.APPLIED, change.reason
    assert change.finished_at >= apply_at
    late = (change.finished_at - apply_at).total_seconds()
    assert late < SWEEP_PERIOD + SLACK, f"applied {late:.2f} s after its time"
    revision = ConfigRevision.objects.get(number=change.revision_number)
    assert revision.author == author and "Scheduled change" in revision.comment
    assert Queue.objects.get(path="root.team").max == {"memory": 100 * GB}
    timer = QuotaTimer.objects.get(queue_path="root.team", status=TimerStatus.PENDING)
    assert timer.revision_number == revision.number
    # The restarted worker applied it (beat's entry, this test sent no task).
    assert f"{TASK}[" in worker.log_text()
