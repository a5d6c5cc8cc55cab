"""Scheduled changes (SPEC 6): submit, cancel and, at their time, apply them.

A queue change or a whole config may carry ``apply_at``, a future time. Then:

1. **Submission** (``schedule_queue_change``, ``schedule_config``) checks it exactly as a save
   would (the in-write authorization, the versions the caller read, the edit applied to the
   config as saved now and the whole result validated) and keeps it as a ``ScheduledChange``
   with a ``scheduled.created`` audit event. Nothing else is written: no revision, no timer.
2. **Cancellation** (``cancel_scheduled_change``) by its author or an admin (who may is the
   interface's decision; the service re-checks the account and locks in the lock order).
3. **Application** (``apply_due_changes``, beat's ``apply_scheduled_changes`` every 5 s) saves
   each due change through ``queues.services`` like any save: the named fields are applied to
   the config as it is then and validated again; its revision's author is the submitter and
   its comment says it was scheduled. A change the rules now refuse (another edit made it
   invalid, the queue is gone, the submitter lost the right) is saved not at all: it ends
   ``failed`` with the reason and a ``scheduled.failed`` audit event.

Why the named fields and not a finished config: an admin who schedules "max 40G at 18:00" means
that field; guarantees or properties someone edits before 18:00 must survive it.

Locks (``scheduler_admin.base.lock_order``): the account (level 1), the partition row (level 2),
then the scheduled change's row (level 2a), then whatever the save takes after (timers, level
4). The partition comes first even though the row is what is claimed: the save needs the
partition lock anyway, and taking it after the row would invert the order against a cancel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from preemption.config import PartitionConfig
from preemption.hierarchy import (
    ConfigError,
    ConfigErrors,
    is_validated,
    normalized_config,
    validate_config,
    with_settings,
)
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.base import errors
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.queues import approval_gate, services
from scheduler_admin.queues.models import (
    Partition,
    ScheduledChange,
    ScheduledKind,
    ScheduledStatus,
)
from scheduler_admin.queues.saved import current_config

if TYPE_CHECKING:
    from scheduler_admin.queues.authorize import Authorize

logger = logging.getLogger(__name__)

#: Due changes applied by one sweep at most (each in its own transaction); the rest next time.
SWEEP_BATCH = 50
APPLY_AT = "apply_at"


class ScheduledNotFound(errors.NotFound):
    """No such scheduled change in the partition (HTTP 404)."""


class NotPending(errors.Conflict):
    """The scheduled change was already applied, failed or cancelled (HTTP 409)."""

    code = "not_pending"


def check_apply_at(apply_at: datetime | None, now: datetime) -> datetime:
    """``apply_at`` when it is a time with an offset after ``now``; ``Invalid`` naming the
    field otherwise (a past time would be applied at once, which a plain save does better)."""
    if apply_at is None or timezone.is_naive(apply_at):
        raise errors.Invalid("must be a time with an offset, e.g. 2026-12-01T18:00:00+01:00",
                             field=APPLY_AT)  # fmt: skip
    if apply_at <= now:
        raise errors.Invalid(
            f"must be in the future (it is now {now:%Y-%m-%d %H:%M:%S} UTC)", field=APPLY_AT
        )
    return apply_at


@retry_on_conflict
def schedule_queue_change(
    partition_name: str,
    path: str,
    *,
    version: int,
    actor: AbstractBaseUser | None,
    comment: str,
    apply_at: datetime,
    guaranteed: Mapping[str, int] | None = None,
    max: Mapping[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
    authorize: Authorize | None = None,
    now: datetime | None = None,
) -> ScheduledChange:
    """Keep a change of some of one queue's fields for ``apply_at``, after checking it as
    ``services.update_queue`` would save it now (``StaleVersion``, ``ConfigErrors``, ...)."""
    now = now or timezone.now()
    check_apply_at(apply_at, now)
    changes = services.queue_changes(guaranteed=guaranteed, max=max, properties=properties)
    with transaction.atomic():
        partition = _checked(
            partition_name,
            queue_edit(path, changes),
            comment=comment,
            expected_queue_versions={path: version},
            authorize=authorize,
        )
        return _keep(
            partition, ScheduledKind.QUEUE, path, changes, apply_at=apply_at, actor=actor,
            comment=comment, now=now,
        )  # fmt: skip


@retry_on_conflict
def schedule_config(
    config: PartitionConfig,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    apply_at: datetime,
    expected_revision: int | None,
    authorize: Authorize | None = None,
    now: datetime | None = None,
    kind: ScheduledKind = ScheduledKind.CONFIG,
) -> ScheduledChange:
    """Keep a whole config for ``apply_at``, after checking it as
    ``services.save_partition_config`` would save it now (``kind`` IMPORT: as
    ``services.import_partition_configs`` would, keeping the product's own settings). The
    partition must exist (a new one is created by a plain save)."""
    now = now or timezone.now()
    check_apply_at(apply_at, now)
    with transaction.atomic():
        partition = _checked(
            config.name,
            (lambda current: _as_import(config, current))
            if kind == ScheduledKind.IMPORT
            else (lambda _current: config),
            comment=comment,
            expected_revision=expected_revision,
            authorize=authorize,
        )
        return _keep(
            partition, kind, "", normalized_config(config).to_json(),
            apply_at=apply_at, actor=actor, comment=comment, now=now,
        )  # fmt: skip


@retry_on_conflict
def cancel_scheduled_change(
    partition_name: str,
    change_id: int,
    *,
    actor: AbstractBaseUser | None,
    authorize: Authorize | None = None,
    now: datetime | None = None,
) -> ScheduledChange:
    """Cancel a pending scheduled change (``NotPending`` once it was applied, failed or
    cancelled). Who may is decided by the caller's ``authorize`` (its author, an admin)."""
    now = now or timezone.now()
    with transaction.atomic():
        partition = services.get_partition(partition_name)
        if authorize is not None:
            authorize(partition, exclusive=False)  # levels 1 and 2 (shared: no config changes)
        else:
            lock_partition(partition.pk, exclusive=False)
        # Level 2a. A sweep applying this change holds the partition exclusively, so it has
        # committed (the row is no longer pending) or not begun when this lock is granted.
        change = (
            ScheduledChange.objects.select_for_update()
            .filter(partition=partition, pk=change_id)
            .first()
        )
        if change is None:
            raise ScheduledNotFound(
                f"partition {partition.name!r} has no scheduled change {change_id}"
            )
        if change.status != ScheduledStatus.PENDING:
            raise NotPending(f"scheduled change {change_id} is {change.status}, not pending")
        change.status = ScheduledStatus.CANCELLED
        change.finished_at = now
        change.cancelled_by = actor_name(actor)
        change.save(update_fields=["status", "finished_at", "cancelled_by"])
        record_event(
            AuditKind.SCHEDULED_CANCELLED,
            actor=actor,
            at=now,
            partition_name=partition.name,
            queue_path=change.queue_path,
            object_type="scheduled_change",
            object_id=str(change.pk),
            summary=f"Cancelled scheduled change {change.pk} by {change.author_name} "
            f"({describe(change)}, due {change.apply_at:%Y-%m-%d %H:%M} UTC)",
            data={"scheduled_change": change.pk, "author": change.author_name},
        )
        return change


#: Builds the in-write authorization of a change's submitter at its time (the accounts app's
#: ``authorizer``, passed by the task so queues does not import accounts); it is given the change.
AuthorizerFor = Callable[[ScheduledChange], "Authorize"]


def apply_due_changes(
    *, authorizer_for: AuthorizerFor | None = None, now: datetime | None = None
) -> list[ScheduledChange]:
    """Apply every pending change whose ``apply_at`` has come (up to ``SWEEP_BATCH``, soonest
    first), each in its own transaction; returns the changes this call ended (applied or
    failed). A change another worker holds or ended meanwhile is skipped."""
    now = now or timezone.now()
    due = list(
        ScheduledChange.objects.filter(status=ScheduledStatus.PENDING, apply_at__lte=now)
        .order_by("apply_at", "id")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    ended = []
    for change_id in due:
        change = apply_change(change_id, authorizer_for=authorizer_for, now=now)
        if change is not None:
            ended.append(change)
    return ended


@retry_on_conflict
def apply_change(
    change_id: int, *, authorizer_for: AuthorizerFor | None = None, now: datetime | None = None
) -> ScheduledChange | None:
    """Apply one due change (see the module docstring); None when it is not ours to apply
    (another worker holds it, or it is no longer pending or not due)."""
    now = now or timezone.now()
    found = ScheduledChange.objects.select_related("partition", "author").filter(pk=change_id)
    change = found.first()
    if change is None or change.status != ScheduledStatus.PENDING or change.apply_at > now:
        return None
    with transaction.atomic():
        refused = ""
        by_system = change.author_id is None and change.author_name == actor_name(None)
        if authorizer_for is not None and not by_system:
            if change.author is None:
                refused = "its author's account no longer exists"
            else:
                try:  # levels 1 and 2: the submitter's account, then the partition row
                    authorizer_for(change)(change.partition)
                except errors.Forbidden as exc:
                    refused = f"its author may no longer make it: {exc.reason}"
        lock_partition(change.partition_id, exclusive=True)  # level 2 (held already if authorized)
        # Level 2a. skip_locked: a row another worker holds is that worker's to apply (two
        # workers sweeping at once never apply one change twice); the status is read again
        # under the lock, so a change ended meanwhile (applied, cancelled) is left alone.
        claimed = (
            ScheduledChange.objects.select_for_update(skip_locked=True)
            .filter(pk=change_id, status=ScheduledStatus.PENDING)
            .values_list("pk", flat=True)
            .first()
        )
        if claimed is None:
            return None
        if refused:
            return _fail(change, refused, now=now)
        try:
            held = _held_now(change)
            if held:
                return _fail(change, held, now=now)
            result = _save(change)
        except ConfigErrors as exc:
            return _fail(change, "; ".join(str(error) for error in exc.errors), now=now)
        except (errors.NotFound, errors.Stale, errors.Invalid, errors.Conflict) as exc:
            return _fail(change, str(exc), now=now)
        return _applied(change, result, now=now)


def queue_edit(path: str, changes: Mapping[str, Any]) -> services.ConfigEdit:
    """The edit of a queue change: its named fields onto the queue as saved then."""

    def edit(current: PartitionConfig) -> PartitionConfig:
        return current.with_queue(replace(services.queue_from_config(current, path), **changes))

    return edit


def describe(change: ScheduledChange) -> str:
    """What a change sets, in a few words ("root.a: max, guaranteed"; "the whole config")."""
    if change.kind != ScheduledKind.QUEUE:
        return "the whole config"
    return f"{change.queue_path}: {', '.join(sorted(change.change)) or 'nothing'}"


def visible_to(queryset: Any, scope: Any) -> Any:
    """``queryset`` narrowed to a grant holder's ``scope`` (``accounts.permissions.Scope``;
    None: everything). Whole-config changes concern the whole partition: never in a scope."""
    if scope is None:
        return queryset
    return queryset.exclude(queue_path="").filter(scope.q("partition__name", "queue_path"))


# ---- inside ---------------------------------------------------------------------------------
def _as_import(imported: PartitionConfig, current: PartitionConfig) -> PartitionConfig:
    """``imported`` with the product's own settings of ``current``, as an import saves it
    (``services.PRODUCT_SETTINGS``: ``queues.yaml`` does not carry them)."""
    kept = {key: getattr(current.settings, key) for key in services.PRODUCT_SETTINGS}
    return with_settings(imported, replace(imported.settings, **kept))


def _checked(
    name: str,
    edit: services.ConfigEdit,
    *,
    comment: str,
    expected_revision: int | None = None,
    expected_queue_versions: Mapping[str, int] | None = None,
    authorize: Authorize | None = None,
) -> Partition:
    """Refuse the change as ``services._save_config`` would refuse it now, writing nothing:
    the comment, the caller's rights (in-write, shared partition lock: this writes no config),
    the versions read, and the edit applied to the saved config and validated whole."""
    if not comment or not comment.strip():
        raise ConfigErrors([ConfigError(None, "", "a comment is required", at="comment")])
    partition = services.get_partition(name)
    if authorize is not None:
        authorize(partition, exclusive=False)
    else:
        lock_partition(partition.pk, exclusive=False)
    partition.refresh_from_db()  # its version as of the lock (a save waits for it now)
    if expected_revision is not None and expected_revision != partition.version:
        raise services.StaleVersion(
            f"partition {partition.name!r} is at version {partition.version}, "
            f"not {expected_revision}",
            current=partition.version,
        )
    for path, version in (expected_queue_versions or {}).items():
        current = partition.queues.filter(path=path).values_list("version", flat=True).first()
        if current is None:
            raise services.NotFound(f"queue {path!r} does not exist in partition {name!r}")
        if current != version:
            raise services.StaleVersion(
                f"queue {path!r} is at version {current}, not {version}", current=current
            )
    before = current_config(partition)
    config = normalized_config(edit(before))
    if config.name != partition.name:
        raise ValueError(f"an edit of {partition.name!r} returned partition {config.name!r}")
    found = validate_config(config, base=before if is_validated(before) else None)
    if found:
        raise ConfigErrors(found)
    held = approval_needed(partition.approval, before, config)
    if held:
        raise ConfigErrors([ConfigError(None, "", held, at="apply_at")])
    return partition


def approval_needed(mode: str, before: PartitionConfig, after: PartitionConfig) -> str:
    """Why the partition's approval setting holds this change, or "" when it does not.

    A change that needs another admin's approval is not scheduled: scheduling it would save
    it at its time without that approval. It is refused when submitted (send it without
    ``apply_at``: it becomes a change request), and a scheduled change that the setting holds
    by its time (the setting was raised meanwhile) fails then, with this reason."""
    if not approval_gate.needs_approval(mode, before, after):
        return ""
    return (
        f"the partition's approval setting ({mode}) holds this change for another admin's "
        "approval, and a change that needs approval cannot be scheduled: send it without "
        "apply_at to make a change request"
    )


def _keep(
    partition: Partition,
    kind: ScheduledKind,
    path: str,
    change: dict[str, Any],
    *,
    apply_at: datetime,
    actor: AbstractBaseUser | None,
    comment: str,
    now: datetime,
) -> ScheduledChange:
    row = ScheduledChange.objects.create(
        partition=partition,
        kind=kind,
        queue_path=path,
        change=change,
        apply_at=apply_at,
        author=actor if actor is not None and actor.is_authenticated else None,
        author_name=actor_name(actor),
        comment=comment.strip(),
        created_at=now,
    )
    record_event(
        AuditKind.SCHEDULED_CREATED,
        actor=actor,
        at=now,
        partition_name=partition.name,
        queue_path=path,
        object_type="scheduled_change",
        object_id=str(row.pk),
        summary=f"Scheduled {describe(row)} in {partition.name} for "
        f"{apply_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
        data={"scheduled_change": row.pk, "apply_at": apply_at.isoformat(), "comment": row.comment,
              "kind": kind, "change": change},
    )  # fmt: skip
    return row


def revision_comment(change: ScheduledChange) -> str:
    """The comment of the revision a scheduled change becomes: scheduled, by whom, when."""
    return (
        f"Scheduled change {change.pk} by {change.author_name}, submitted "
        f"{change.created_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC for "
        f"{change.apply_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC: {change.comment}"
    )


def _held_now(change: ScheduledChange) -> str:
    """``approval_needed`` for the change as it would be saved now (the partition is locked)."""
    partition = Partition.objects.get(pk=change.partition_id)
    before = current_config(partition)
    if change.kind == ScheduledKind.IMPORT:
        after = _as_import(PartitionConfig.from_json(change.change), before)
    elif change.kind == ScheduledKind.CONFIG:
        after = PartitionConfig.from_json(change.change)
    else:
        after = queue_edit(change.queue_path, change.change)(before)
    return approval_needed(partition.approval, before, normalized_config(after))


def _save(change: ScheduledChange) -> services.SaveResult:
    """Save the change through the one save service, inside the claim's transaction (its
    ``atomic`` is a savepoint here: a refusal rolls back to it and the claim stays usable)."""
    comment = revision_comment(change)
    if change.kind == ScheduledKind.IMPORT:
        [result] = services.import_partition_configs(
            [PartitionConfig.from_json(change.change)], actor=change.author, comment=comment
        )
        return result
    if change.kind == ScheduledKind.CONFIG:
        return services.save_partition_config(
            PartitionConfig.from_json(change.change), actor=change.author, comment=comment
        )
    return services.edit_partition_config(
        change.partition.name,
        queue_edit(change.queue_path, change.change),
        actor=change.author,
        comment=comment,
    )


def _applied(
    change: ScheduledChange, result: services.SaveResult, *, now: datetime
) -> ScheduledChange:
    change.status = ScheduledStatus.APPLIED
    change.finished_at = now
    change.revision_number = result.revision.number if result.revision is not None else None
    change.save(update_fields=["status", "finished_at", "revision_number"])
    what = (
        f"as revision {change.revision_number}"
        if change.revision_number is not None
        else "(nothing to change: the config already held it)"
    )
    record_event(
        AuditKind.SCHEDULED_APPLIED,
        actor=change.author,
        at=now,
        partition_name=change.partition.name,
        queue_path=change.queue_path,
        object_type="scheduled_change",
        object_id=str(change.pk),
        summary=f"Applied scheduled change {change.pk} by {change.author_name} "
        f"({describe(change)}) {what}",
        data={"scheduled_change": change.pk, "revision": change.revision_number},
    )
    logger.info("scheduled change %s applied %s", change.pk, what)
    return change


def _fail(change: ScheduledChange, reason: str, *, now: datetime) -> ScheduledChange:
    change.status = ScheduledStatus.FAILED
    change.finished_at = now
    change.reason = reason
    change.save(update_fields=["status", "finished_at", "reason"])
    record_event(
        AuditKind.SCHEDULED_FAILED,
        actor=None,
        at=now,
        partition_name=change.partition.name,
        queue_path=change.queue_path,
        object_type="scheduled_change",
        object_id=str(change.pk),
        summary=f"Scheduled change {change.pk} by {change.author_name} ({describe(change)}) "
        f"was not applied: {reason}",
        data={"scheduled_change": change.pk, "reason": reason, "author": change.author_name},
    )
    logger.warning("scheduled change %s failed: %s", change.pk, reason)
    return change
