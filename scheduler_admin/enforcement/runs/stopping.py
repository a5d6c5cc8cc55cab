"""Stopping a run that is no longer needed (SPEC 5 "A run stops when it is no longer needed",
step 5 of ``runs``).

Before each chunk of victims, under the chunk's locks (``lock_order`` level 2: a config save
either committed before the check or waits for the chunk), the run checks again whether it is
still needed: a quota run whose queue is back within its max on every type of its target, or for
which quota preemption is no longer in force; an ask's or a job's run whose ask is no longer
pending. It then ends ``stopped`` with the reason (``end_stopped``) and preempts nothing more;
the victims already preempted stay preempted.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import JSONField, OuterRef, Subquery

from preemption import model as engine
from preemption import timers as engine_timers
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.base import metrics
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, AskState
from scheduler_admin.cluster.usage import ENGINE_STATES, leaf_usage
from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.enforcement.runs.events import run_event
from scheduler_admin.queues.models import EnforcementMode, Partition
from scheduler_admin.queues.saved import current_tree

#: The ``outcome`` label a stopped run is counted under in the metrics.
STOPPED_OUTCOME = "stopped"


def no_longer_needed(run: PreemptionRun) -> str:
    """Why the run should stop before its next chunk (SPEC 5 "A run stops when it is no longer
    needed"), "" while it is still needed. Called under the chunk's locks: a config save takes
    the partition row exclusive, so it either committed before this check (which sees the new
    max or switch) or waits for the chunk to commit (``lock_order`` level 2). A run that
    enforces stops too when its partition was switched to observe only."""
    mode = Partition.objects.filter(pk=run.partition_id).values_list("enforcement", flat=True)
    if not run.observe and mode.first() == EnforcementMode.OBSERVE:
        return "the partition was switched to observe only"
    if run.policy == engine.PolicyName.QUOTA:
        return _quota_no_longer_needed(run)
    return _ask_no_longer_pending(run)


def _quota_no_longer_needed(run: PreemptionRun) -> str:
    """The quota run's queue as it is now (``timers.quota_run_stop_reason``): the partition's
    switch and the config as saved now, the queue's usage as the engine counts it (running
    tasks of its configured subtree), less the victims this run preempted whose tasks still
    count as running (the cluster reported them running again before it evicted them)."""
    partition = Partition.objects.get(pk=run.partition_id)  # its settings as saved now
    _config, hierarchy = current_tree(partition)
    path = run.queue_path
    target = {name: value for name, value in (run.subject.get("target") or {}).items() if value}
    types = set(target) or {name for amounts in run.targets.values() for name in amounts}
    usage: dict[str, int] = {}
    if path in hierarchy.queues:
        subtree = [queue for queue in hierarchy.queues if _within(queue, path)]
        for summed in leaf_usage(
            partition, names=types, paths=subtree, states=ENGINE_STATES, grouped=False
        ):
            usage = dict(summed.resources)
        for resources in _preempted_but_running(run):
            for name, value in resources.items():
                usage[name] = usage.get(name, 0) - value
    return engine_timers.quota_run_stop_reason(
        hierarchy, path, usage, types, planned_max=run.subject.get("max")
    )


def _preempted_but_running(run: PreemptionRun) -> list[dict[str, int]]:
    """Resources of the tasks of this run's preempted victims that still count as running.

    Walked from the victims, one lookup of each victim's task by its unique id (a scalar
    subquery in the select list, which PostgreSQL always runs as such): as a join or ``IN``
    the planner may choose the order, and on a table just loaded without statistics it chose
    to scan every victim for every running task (5,000 x 200,000 comparisons before each
    chunk, minutes instead of milliseconds)."""
    task = Allocation.objects.filter(
        partition_id=run.partition_id,
        external_id=OuterRef("allocation_id"),
        state=AllocationState.RUNNING,
    ).values("resources")[:1]
    found = (
        run.victims.filter(preempted_at__isnull=False)
        .annotate(running=Subquery(task, output_field=JSONField()))
        .values_list("running", flat=True)
    )
    return [resources for resources in found if resources is not None]


def _ask_no_longer_pending(run: PreemptionRun) -> str:
    """An ask's run stops when its ask is no longer pending (scheduled, removed); a job's when
    none of the job's asks is."""
    pending = Ask.objects.filter(partition_id=run.partition_id, state=AskState.PENDING)
    if run.trigger == "job":
        if not pending.filter(job=run.trigger_id).exists():
            return f"job {run.trigger_id} has no pending ask any more"
    elif run.trigger == "ask" and not pending.filter(external_id=run.trigger_id).exists():
        return f"ask {run.trigger_id} is no longer pending"
    return ""


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + ".")


def end_stopped(run: PreemptionRun, now: datetime, reason: str, token: int) -> None:
    """End the run ``stopped`` with ``reason`` (inside the chunk's fenced transaction): its
    queue and relatives are free again, the victims already preempted stay preempted."""
    preempted = run.victims.filter(preempted_at__isnull=False).count()
    total = run.victims.count()
    PreemptionRun.objects.filter(pk=run.pk).update(
        status=RunStatus.STOPPED, finished_at=now, lease_expires_at=None, stop_reason=reason
    )
    metrics.run_ended(run, outcome=STOPPED_OUTCOME, ended_at=now)
    run_event(
        AuditKind.RUN_STOPPED,
        run,
        at=now,
        summary=f"Run {run.pk} of {run.queue_path} stopped after {preempted} of {total} "
        f"victims, no longer needed: {reason}",
        data={
            "run": run.pk, "reason": reason, "preempted": preempted, "victims": total,
            "fence_token": token,
        },
    )  # fmt: skip
