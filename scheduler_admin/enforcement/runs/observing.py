"""Observe mode (SPEC 5 "Enforcement mode"): runs that plan and record, and evict nothing.

A partition whose ``enforcement`` setting is ``observe`` keeps its live loop running as it would
enforce: the sweeps create runs for due quota timers and waiting asks, each run plans on the
live state and stores its victims and every candidate with its facts and reason (``record``),
with the same audit events. Then, instead of its chunks of victims, the run ends ``observed``
(``end_observed``): no eviction order, no task or ask changed. The run page reads "would have
evicted"; the metrics count its victims apart (``scheduler_admin_victims_observed``).

Whether a run observes is fixed when the sweep creates it (``PreemptionRun.observe``, read under
the run-creation lock: ``observes_now``), so a run resumed by another worker does the same.
A partition switched to ``observe`` while a run enforces stops that run before its next chunk
(``stopping.no_longer_needed``).

Switching back to ``enforce`` (``judge_observed_again``, inside the config save): the queues
whose last quota run was observed and are not timed get a quota timer due at once, and the
partition's waiting asks are planned again at the next sweep. Their delay already ran while the
partition observed; the sweep judges each again on the state of that moment (a queue back
within max gets no run).
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from preemption.config import PartitionConfig
from preemption.model import PolicyName
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_events
from scheduler_admin.base import metrics
from scheduler_admin.base.lock_order import retry_on_conflict
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.enforcement.runs.events import run_event
from scheduler_admin.enforcement.runs.fencing import fence
from scheduler_admin.enforcement.timers import timer_event
from scheduler_admin.queues.models import EnforcementMode, Partition

#: The ``outcome`` label an observed run is counted under in ``scheduler_admin_runs``.
OBSERVED_OUTCOME = "observed"


def observes_now(partition: Partition) -> bool:
    """Whether the partition only observes, as saved now (read again: a sweep's partition row
    was read before the run-creation lock, and a save may have switched the mode since)."""
    mode = Partition.objects.filter(pk=partition.pk).values_list("enforcement", flat=True).first()
    return mode == EnforcementMode.OBSERVE


@retry_on_conflict
def end_observed(run: PreemptionRun, token: int) -> None:
    """End a planned run of an observing partition ``observed`` (fenced like every write of its
    worker): nothing is evicted; the victims it would have taken are counted apart."""
    now = timezone.now()
    with transaction.atomic():
        fence(run, token, now)
        PreemptionRun.objects.filter(pk=run.pk).update(
            status=RunStatus.OBSERVED, finished_at=now, lease_expires_at=None
        )
        victims = list(run.victims.all())
        run.refresh_from_db(fields=["outcome"])
        metrics.victims_observed(run, victims)
        metrics.run_ended(run, outcome=OBSERVED_OUTCOME, ended_at=now)
        run_event(
            AuditKind.RUN_OBSERVED,
            run,
            at=now,
            summary=f"Run {run.pk} of {run.queue_path} observed: {run.outcome}, would have "
            f"evicted {len(victims)} victims (the partition only observes)",
            data={
                "run": run.pk,
                "outcome": run.outcome,
                "would_have_evicted": [victim.allocation_id for victim in victims],
                "fence_token": token,
            },
        )


def judge_observed_again(
    partition: Partition,
    before: PartitionConfig,
    after: PartitionConfig,
    *,
    at: datetime,
    actor: AbstractBaseUser | None,
    revision_number: int,
) -> list[str]:
    """On a save that switches the partition from ``observe`` to ``enforce`` (inside the save's
    transaction, after its timers were written): start a quota timer due at ``at`` on each
    queue whose latest quota run was observed and that has no pending timer (quota preemption
    on, the queue still configured), and clear the waiting asks' retry times. Returns the
    queues timed."""
    if not (
        before.settings.enforcement == EnforcementMode.OBSERVE
        and after.settings.enforcement == EnforcementMode.ENFORCE
    ):
        return []
    Ask.objects.filter(partition=partition, state=AskState.PENDING).update(retry_after=None)
    if not after.settings.quota_preemption_enabled:
        return []
    latest = PreemptionRun.objects.filter(
        partition=partition, policy=PolicyName.QUOTA, queue_path=OuterRef("queue_path")
    ).order_by("-created_at", "-id")
    observed = set(
        PreemptionRun.objects.filter(partition=partition, policy=PolicyName.QUOTA)
        .annotate(latest=Subquery(latest.values("status")[:1]))
        .filter(latest=RunStatus.OBSERVED)
        .values_list("queue_path", flat=True)
    )
    timed = set(
        QuotaTimer.objects.filter(partition=partition, status=TimerStatus.PENDING).values_list(
            "queue_path", flat=True
        )
    )
    configured = set(after.queues_by_path())
    paths = sorted((observed & configured) - timed)
    rows = QuotaTimer.objects.bulk_create(
        QuotaTimer(
            partition=partition,
            queue_path=path,
            started_at=at,
            due_at=at,
            delay_seconds=0,
            revision_number=revision_number,
        )
        for path in paths
    )
    record_events(
        timer_event(
            AuditKind.TIMER_STARTED,
            row,
            at=at,
            actor=actor,
            summary=f"Quota timer of {row.queue_path} started, due at once: the partition "
            "enforces again and its last run here was only observed",
            data={"timer": row.pk, "due_at": at.isoformat(), "delay_seconds": 0},
        )
        for row in rows
    )
    return paths
