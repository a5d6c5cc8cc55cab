"""Runs that cannot finish: failed attempts, the admin's abort, and the reaper (SPEC 5, step 7
of ``runs``).

An attempt that raises records its error and hands the run back (``attempt_failed``: its lease
ends, so the reaper re-enqueues it); a worker that dies mid-run leaves its lease to expire, and
``reap_stale_runs`` re-enqueues it. After ``RUN_MAX_ATTEMPTS`` claims the run ends ``failed``
(``end_failed``), which releases its queue (and its relatives' timers) instead of blocking them
forever. An admin can also abort an active run (``abort_run``). Either way the queue's fencing
token is raised (``fencing.raise_token``), so a worker still holding the run writes nothing
more; victims already preempted stay preempted (their eviction orders stand).

Every write here takes its locks in the order ``scheduler_admin.base.lock_order`` writes down (the
partition row, the run's row, the queue's fencing token).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scheduler_admin.accounts.permissions import Authorize
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name
from scheduler_admin.base import metrics
from scheduler_admin.base.errors import Conflict, NotFound
from scheduler_admin.base.lock_order import retry_on_conflict
from scheduler_admin.enforcement import dispatch
from scheduler_admin.enforcement.models import ACTIVE_RUN_STATUSES, PreemptionRun, RunStatus
from scheduler_admin.enforcement.runs.events import run_event
from scheduler_admin.enforcement.runs.fencing import fence, lock_run, raise_token
from scheduler_admin.queues.models import Partition

logger = logging.getLogger(__name__)


class RunNotFound(NotFound):
    """No run with that id (HTTP 404)."""


class RunNotActive(Conflict):
    """The run already ended, so it cannot be aborted (HTTP 409, code ``run_not_active``)."""

    code = "run_not_active"


#: Longest error text stored on a run (the full traceback goes to the worker's log).
ERROR_MAX_LENGTH = 2000


@retry_on_conflict
def attempt_failed(run: PreemptionRun, token: int, error: str) -> None:
    """Record a failed attempt (fenced: only the run's owner may). The last allowed attempt
    ends the run ``failed``; an earlier one gives the run back with an expired lease, so the
    reaper hands it to a worker again (which resumes from the stored victims)."""
    now = timezone.now()
    error = error[:ERROR_MAX_LENGTH]
    with transaction.atomic():
        fence(run, token, now)
        run.refresh_from_db(fields=["attempt"])
        if run.attempt >= settings.RUN_MAX_ATTEMPTS:
            raise_token(run)
            message = f"Failed on attempt {run.attempt} of {settings.RUN_MAX_ATTEMPTS}: {error}"
            end_failed(run, now, message, kind=AuditKind.RUN_FAILED, actor=None)
            return
        PreemptionRun.objects.filter(pk=run.pk).update(error=error, lease_expires_at=now)
        run_event(
            AuditKind.RUN_ATTEMPT_FAILED,
            run,
            at=now,
            summary=f"Run {run.pk} attempt {run.attempt} of {settings.RUN_MAX_ATTEMPTS} "
            f"failed ({error[:200]}); it will be retried",
            data={"run": run.pk, "attempt": run.attempt, "error": error},
        )


def end_failed(
    run: PreemptionRun,
    now: datetime,
    error: str,
    *,
    kind: AuditKind,
    actor: AbstractBaseUser | None,
) -> None:
    """End an active run ``failed`` (inside a transaction that raised the token): its queue
    and its relatives are free again. Victims already preempted stay preempted."""
    error = error[:ERROR_MAX_LENGTH]
    PreemptionRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, finished_at=now, lease_expires_at=None, error=error
    )
    preempted = run.victims.filter(preempted_at__isnull=False).count()
    verb = "aborted" if kind == AuditKind.RUN_ABORTED else "failed"
    metrics.run_ended(run, outcome=verb, ended_at=now)
    run_event(
        kind,
        run,
        actor=actor,
        at=now,
        summary=f"Run {run.pk} of {run.queue_path} {verb} after {preempted} victims: {error}",
        data={"run": run.pk, "error": error, "attempt": run.attempt, "preempted": preempted},
    )


@retry_on_conflict
def abort_run(
    run_id: int,
    *,
    actor: AbstractBaseUser | None,
    reason: str = "",
    authorize: Authorize | None = None,
) -> PreemptionRun:
    """An admin ends an active run: it is marked ``failed`` with who aborted it and why, its
    queue's fencing token is raised (a worker still executing it writes nothing more), and its
    queue is free again. Victims already preempted stay preempted. Raises ``RunNotFound`` or
    ``RunNotActive`` (already ended).

    Locks in the order of ``lock_order``, the order of every write of the worker executing the
    run: ``authorize`` (the in-write authorization) first, on the run's partition (the account,
    then the partition row, shared), then the run's row, then the queue's fencing token. The
    worker's chunk in flight, if any, holds the run's row: the abort waits for it to commit,
    and every later chunk finds the run ended and writes nothing. So once the abort has
    answered, no victim is preempted (SPEC 5: "An admin's abort takes effect before the next
    victim")."""
    now = timezone.now()
    with transaction.atomic():
        partition = Partition.objects.filter(runs__pk=run_id).first()
        if partition is None:
            raise RunNotFound(f"no run {run_id}")
        if authorize is not None:
            authorize(partition, exclusive=False)
        run = lock_run(run_id)
        if run is None:
            raise RunNotFound(f"no run {run_id}")
        if run.status not in ACTIVE_RUN_STATUSES:
            raise RunNotActive(f"run {run_id} already ended ({run.status})")
        raise_token(run)
        reason = " ".join(reason.split())
        error = f"Aborted by {actor_name(actor)}" + (f": {reason}" if reason else "")
        end_failed(run, now, error, kind=AuditKind.RUN_ABORTED, actor=actor)
    run.refresh_from_db()
    return run


# --------------------------------------------------------------------------------------------
# Reaping
# --------------------------------------------------------------------------------------------


def reap_stale_runs(now: datetime | None = None) -> list[int]:
    """Re-enqueue runs whose worker went away: running with an expired lease, or pending for
    longer than a lease (their task message was lost). The claim decides who continues."""
    now = now or timezone.now()
    lease = timedelta(seconds=settings.RUN_LEASE_SECONDS)
    stale = list(
        PreemptionRun.objects.filter(
            Q(status=RunStatus.RUNNING, lease_expires_at__lt=now)
            | Q(status=RunStatus.PENDING, created_at__lt=now - lease)
        ).values_list("pk", flat=True)
    )
    for run_id in stale:
        logger.warning("run %s: lease expired or never claimed; re-enqueueing", run_id)
        dispatch.enqueue_run(run_id)
    return stale
