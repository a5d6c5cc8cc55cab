"""The audit events of a run's steps (started, planned, resumed, stopped, finished, failed,
aborted): written the same way by every room of ``runs``, naming the run, its partition and its
queue as text, so the record survives the run's deletion."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import new_event
from scheduler_admin.enforcement.models import PreemptionRun


def run_event(
    kind: AuditKind,
    run: PreemptionRun,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> None:
    """Audit one step of a run (``actor`` None: the system acts; names stored as text)."""
    run_event_row(kind, run, at=at, summary=summary, data=data, actor=actor).save(force_insert=True)


def run_event_row(
    kind: AuditKind,
    run: PreemptionRun,
    *,
    at: datetime,
    summary: str,
    data: dict,
    actor: AbstractBaseUser | None = None,
) -> AuditEvent:
    """The event ``run_event`` writes, not yet saved (for ``record_events``)."""
    return new_event(
        kind,
        actor=actor,
        at=at,
        partition_name=run.partition.name,
        queue_path=run.queue_path,
        object_type="run",
        object_id=str(run.pk),
        summary=summary,
        data=data,
    )
