"""The only code that writes partitions, queues and config revisions.

Every use case ends in ``_save_config``, which in one transaction:

1. locks the partition row (``select_for_update``; on SQLite the IMMEDIATE transaction already
   holds the single write lock), so two concurrent edits of a partition are serialised;
2. refuses the change when the caller's ``version`` / ``expected_revision`` is stale;
3. validates the whole resulting partition (every broken rule listed at once);
4. applies the differences to the queue rows, bumping the version of each queue it changes;
5. writes the revision (whole snapshot) and the audit event.

Nothing is half-saved: any refusal raises before the first write, and any later failure rolls the
transaction back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig, diff_configs
from preemption.hierarchy import ConfigError, ConfigErrors, validate_config
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.enforcement.timers import apply_config_change
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue, RevisionKind


class StaleVersion(Exception):
    """The caller edited an older version than the one saved now (HTTP 409)."""

    def __init__(self, message: str, *, current: int) -> None:
        super().__init__(message)
        self.current = current


class NotFound(Exception):
    """A partition, queue or revision that does not exist (HTTP 404)."""


@dataclass(frozen=True)
class SaveResult:
    """What a save did. ``revision`` is None when the new config equals the saved one."""

    partition: Partition
    revision: ConfigRevision | None

    @property
    def changed(self) -> bool:
        return self.revision is not None


_KIND_EVENTS = {
    RevisionKind.CHANGE: AuditKind.CONFIG_CHANGED,
    RevisionKind.IMPORT: AuditKind.CONFIG_IMPORTED,
    RevisionKind.REVERT: AuditKind.CONFIG_REVERTED,
}


def save_partition_config(
    config: PartitionConfig,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    kind: RevisionKind = RevisionKind.CHANGE,
    expected_revision: int | None = None,
    expected_queue_versions: Mapping[str, int] | None = None,
    reverted_from: int | None = None,
) -> SaveResult:
    """Replace a partition's whole config (creating the partition if it is new).

    ``expected_revision`` is the partition version the caller read (None: don't check);
    ``expected_queue_versions`` maps queue paths to the versions the caller read.
    """
    _require_comment(comment)
    with transaction.atomic():
        return _save_config(
            config,
            actor=actor,
            comment=comment.strip(),
            kind=kind,
            expected_revision=expected_revision,
            expected_queue_versions=expected_queue_versions or {},
            reverted_from=reverted_from,
        )


def import_partition_configs(
    configs: list[PartitionConfig], *, actor: AbstractBaseUser | None, comment: str
) -> list[SaveResult]:
    """Save several partitions from one ``queues.yaml`` as one all-or-nothing change."""
    _require_comment(comment)
    with transaction.atomic():
        return [
            _save_config(
                config,
                actor=actor,
                comment=comment.strip(),
                kind=RevisionKind.IMPORT,
                expected_revision=None,
                expected_queue_versions={},
                reverted_from=None,
            )
            for config in configs
        ]


def update_queue(
    partition_name: str,
    path: str,
    *,
    version: int,
    actor: AbstractBaseUser | None,
    comment: str,
    guaranteed: Mapping[str, int] | None = None,
    max: Mapping[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
) -> SaveResult:
    """Change some of one queue's ``guaranteed``, ``max`` and ``properties`` (each replaced whole
    when given), refusing the change if the queue's ``version`` moved since the caller read it."""
    current = get_partition(partition_name).current_config()
    queue = queue_from_config(current, path)
    changes: dict[str, Any] = {}
    if guaranteed is not None:
        changes["guaranteed"] = dict(guaranteed)
    if max is not None:
        changes["max"] = dict(max)
    if properties is not None:
        changes["properties"] = dict(properties)
    return save_partition_config(
        current.with_queue(replace(queue, **changes)),
        actor=actor,
        comment=comment,
        expected_queue_versions={path: version},
    )


def revert_config(
    partition_name: str, *, to_number: int, actor: AbstractBaseUser | None, comment: str = ""
) -> SaveResult:
    """Make revision ``to_number`` the current config again, as a new revision.

    The old snapshot is validated like any change (the rules may have tightened since). When the
    current config already equals it, nothing is written.
    """
    partition = get_partition(partition_name)
    try:
        revision = partition.revisions.get(number=to_number)
    except ConfigRevision.DoesNotExist:
        raise NotFound(f"partition {partition_name!r} has no revision {to_number}") from None
    return save_partition_config(
        revision.config(),
        actor=actor,
        comment=comment.strip() or f"Revert to revision {to_number}",
        kind=RevisionKind.REVERT,
        reverted_from=to_number,
    )


def get_partition(name: str) -> Partition:
    if "\x00" in name:  # PostgreSQL text cannot hold NUL: no partition can have this name
        raise NotFound(f"partition {name!r} does not exist")
    try:
        return Partition.objects.get(name=name)
    except Partition.DoesNotExist:
        raise NotFound(f"partition {name!r} does not exist") from None


def settings_for_import(name: str) -> PartitionSettings:
    """The product's own settings of a partition (kept when a ``queues.yaml`` is imported, since
    the file does not carry them), or the defaults for a new partition."""
    partition = Partition.objects.filter(name=name).first()
    return partition.settings_config() if partition else PartitionSettings(name=name)


def _require_comment(comment: str) -> None:
    if not comment or not comment.strip():
        raise ConfigErrors([ConfigError(None, "", "a comment is required", at="comment")])


def _save_config(
    config: PartitionConfig,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    kind: RevisionKind,
    expected_revision: int | None,
    expected_queue_versions: Mapping[str, int],
    reverted_from: int | None,
) -> SaveResult:
    partition, created = _lock_or_create_partition(config.settings.name)
    if expected_revision is not None and expected_revision != partition.version:
        raise StaleVersion(
            f"partition {partition.name!r} is at version {partition.version}, "
            f"not {expected_revision}",
            current=partition.version,
        )
    rows = {queue.path: queue for queue in partition.queues.all()}
    for path, version in expected_queue_versions.items():
        row = rows.get(path)
        if row is None:
            raise NotFound(f"queue {path!r} does not exist in partition {partition.name!r}")
        if row.version != version:
            raise StaleVersion(
                f"queue {path!r} is at version {row.version}, not {version}", current=row.version
            )

    errors = validate_config(config)
    if errors:
        raise ConfigErrors(errors)
    before = partition.current_config()
    changes = diff_configs(before, config)
    if not created and not changes and before.sibling_order() == config.sibling_order():
        return SaveResult(partition=partition, revision=None)

    now = timezone.now()
    _apply_settings(partition, config.settings, bump=not created)
    changed_paths = _apply_queues(partition, rows, config)
    number = (
        partition.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    ) + 1
    revision = ConfigRevision.objects.create(
        partition=partition,
        number=number,
        kind=kind,
        created_at=now,
        author=actor if actor is not None and actor.is_authenticated else None,
        author_name=actor_name(actor),
        comment=comment,
        reverted_from=reverted_from,
        snapshot=config.to_json(),
    )
    # Quota timers start, reset or stop with the change, in the same transaction (SPEC 4.1).
    apply_config_change(partition, before, config, at=now, actor=actor, revision_number=number)
    record_event(
        _KIND_EVENTS[RevisionKind(kind)],
        actor=actor,
        at=now,
        partition_name=partition.name,
        queue_path=changed_paths[0] if len(changed_paths) == 1 else "",
        object_type="revision",
        object_id=str(number),
        summary=_summary(partition.name, number, kind, changed_paths, created, reverted_from),
        data={
            "revision": number,
            "comment": comment,
            "created_partition": created,
            "changed_queues": changed_paths,
            "changes": [change.to_json() for change in changes],
        },
    )
    return SaveResult(partition=partition, revision=revision)


def _lock_or_create_partition(name: str) -> tuple[Partition, bool]:
    """Lock the partition row for the rest of the transaction, creating it when it is new.

    Two requests creating the same partition race on the unique name: the loser's savepoint rolls
    back and it locks the winner's row instead.
    """
    partition = Partition.objects.select_for_update().filter(name=name).first()
    if partition is not None:
        return partition, False
    try:
        with transaction.atomic():
            return Partition.objects.create(name=name), True
    except IntegrityError:
        return Partition.objects.select_for_update().get(name=name), False


def _apply_settings(partition: Partition, settings: PartitionSettings, *, bump: bool) -> None:
    for key in (
        "preemption_enabled",
        "quota_preemption_enabled",
        "miss_percent",
        "default_preemption_delay",
        "daemonset_preemption_delay",
        "ask_policy",
        "extra",
    ):
        setattr(partition, key, getattr(settings, key))
    if bump:
        partition.version += 1
    partition.save()


def _apply_queues(
    partition: Partition, rows: dict[str, Queue], config: PartitionConfig
) -> list[str]:
    """Make the queue rows match ``config``; returns the paths that were added, changed or
    removed. Removed subtrees go first (children before parents), then queues are created or
    updated parents first, so every parent row exists before its children are written."""
    wanted = config.queues_by_path()
    changed: list[str] = []
    for path in sorted(set(rows) - set(wanted), key=lambda p: p.count("."), reverse=True):
        rows.pop(path).delete()
        changed.append(path)

    positions: dict[str | None, int] = {}
    for queue in config.queues:
        position = positions.get(queue.parent, 0)
        positions[queue.parent] = position + 1
        values = {
            "name": queue.name,
            "parent": rows[queue.parent] if queue.parent is not None else None,
            "depth": queue.path.count("."),
            "position": position,
            "guaranteed": dict(queue.guaranteed),
            "max": dict(queue.max),
            "properties": dict(queue.properties),
            "extra": dict(queue.extra),
        }
        row = rows.get(queue.path)
        if row is None:
            rows[queue.path] = Queue.objects.create(partition=partition, path=queue.path, **values)
            changed.append(queue.path)
            continue
        content_changed = row.to_config() != queue
        if content_changed or row.position != position:
            for key, value in values.items():
                setattr(row, key, value)
            if content_changed:
                row.version += 1
                changed.append(queue.path)
            row.save()
    return changed


def _summary(
    partition: str,
    number: int,
    kind: RevisionKind,
    changed: list[str],
    created: bool,
    reverted_from: int | None,
) -> str:
    if created:
        return f"Created partition {partition} with {len(changed)} queues (revision {number})"
    what = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    what = what or "partition settings"
    if kind == RevisionKind.REVERT:
        return f"Reverted {partition} to revision {reverted_from} (revision {number}): {what}"
    verb = "Imported" if kind == RevisionKind.IMPORT else "Changed"
    return f"{verb} {partition} (revision {number}): {what}"


def queue_from_config(config: PartitionConfig, path: str) -> QueueConfig:
    queue = config.queue(path)
    if queue is None:
        raise NotFound(f"queue {path!r} does not exist in partition {config.name!r}")
    return queue
