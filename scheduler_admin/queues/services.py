"""The only code that writes partitions, queues and config revisions.

Every use case ends in ``_save_config``, which in one transaction:

0. runs the caller's in-write authorization (``authorize``: the account checked again under
   its row locks, then the partition row locked, then the role and grants as they are now),
   first, in the order of ``scheduler_admin.base.lock_order``;
1. locks the partition row (``select_for_update``; on SQLite the IMMEDIATE transaction already
   holds the single write lock), so two concurrent edits of a partition are serialised;
2. refuses the change when the caller's ``version`` / ``expected_revision`` is stale;
3. reads the partition's config as saved now and applies the caller's edit to it;
4. validates the whole resulting partition (every broken rule listed at once);
5. applies the differences to the queue rows, bumping the version of each queue it changes;
6. writes the revision (whole snapshot) and the audit event.

Why the edit is a function and not a finished config: an edit of one queue or of the partition
settings must be applied to the config *as it is under the lock*. A caller that read the config
first and saved its own copy would silently revert whatever another admin saved in between
(two PATCHes to different queues, or a queue PATCH racing a settings PATCH: both answered 200 and
one change was lost). Only a whole-config replacement (PUT, import, revert) is a finished
config, and those either name the version they replace or mean to replace whatever is there.

Nothing is half-saved: any refusal raises before the first write, and any later failure rolls the
transaction back; a transaction PostgreSQL ends as a deadlock victim is run again whole
(``lock_order.retry_on_conflict``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.utils import timezone

from preemption.config import ROOT, PartitionConfig, PartitionSettings, QueueConfig, diff_configs
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
from scheduler_admin.base import deadlines, errors
from scheduler_admin.base.lock_order import retry_on_conflict
from scheduler_admin.queues import approval_gate
from scheduler_admin.queues.approval_gate import Approval
from scheduler_admin.queues.hooks import config_saved
from scheduler_admin.queues.models import (
    ChangeRequest,
    ConfigRevision,
    Partition,
    Queue,
    RevisionKind,
)
from scheduler_admin.queues.saved import current_config

if TYPE_CHECKING:
    from scheduler_admin.queues.authorize import Authorize


class StaleVersion(errors.Stale):
    """The caller edited an older version than the one saved now (HTTP 409)."""


class NotFound(errors.NotFound):
    """A partition, queue or revision that does not exist (HTTP 404)."""


@dataclass(frozen=True)
class SaveResult:
    """What a save did. ``revision`` is None when the new config equals the saved one, or when
    the change was held for approval: ``change_request`` is then the request (SPEC 6)."""

    partition: Partition
    revision: ConfigRevision | None
    change_request: ChangeRequest | None = None

    @property
    def changed(self) -> bool:
        return self.revision is not None


#: An edit: the config as saved now (read under the partition lock) -> the config to save.
ConfigEdit = Callable[[PartitionConfig], PartitionConfig]
# ``authorize`` (every write below takes one): the check a caller wants made first in the
# transaction, before anything is written (it raises to refuse): the console and the API pass
# ``accounts.permissions.authorizer(...)``, so a token revoked, a role lowered, a user
# deactivated or a queue grant revoked meanwhile is seen (each revocation takes a lock this
# check holds). It is given the partition (None: one this write creates) and locks its row.

#: The product's own partition settings. ``queues.yaml`` does not carry them, so an import keeps
#: the values saved at the moment it is written (not those read when the file was parsed).
PRODUCT_SETTINGS = (
    "miss_percent",
    "default_preemption_delay",
    "daemonset_preemption_delay",
    "ask_policy",
    "victim_strategy",
    "deviation_percent",
    "max_victims",
    "soft_eviction",
    "enforcement",
    "max_evictions_per_minute",
    "approval",
)

_KIND_EVENTS = {
    RevisionKind.CHANGE: AuditKind.CONFIG_CHANGED,
    RevisionKind.IMPORT: AuditKind.CONFIG_IMPORTED,
    RevisionKind.REVERT: AuditKind.CONFIG_REVERTED,
}


@retry_on_conflict
def save_partition_config(
    config: PartitionConfig,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    kind: RevisionKind = RevisionKind.CHANGE,
    expected_revision: int | None = None,
    expected_queue_versions: Mapping[str, int] | None = None,
    reverted_from: int | None = None,
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> SaveResult:
    """Replace a partition's whole config (creating the partition if it is new).

    ``expected_revision`` is the partition version the caller read (None: don't check);
    ``expected_queue_versions`` maps queue paths to the versions the caller read.
    ``request_approval``: a change the partition's ``approval`` setting holds becomes a change
    request (``SaveResult.change_request``) instead of a revision (``approval_gate``).
    """
    _require_comment(comment)
    with transaction.atomic():
        return _save_config(
            config.name,
            lambda _current: config,
            actor=actor,
            comment=comment.strip(),
            kind=kind,
            expected_revision=expected_revision,
            expected_queue_versions=expected_queue_versions or {},
            reverted_from=reverted_from,
            create=True,
            authorize=authorize,
            gated=request_approval,
        )


@retry_on_conflict
def edit_partition_config(
    partition_name: str,
    edit: ConfigEdit,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    expected_revision: int | None = None,
    expected_queue_versions: Mapping[str, int] | None = None,
    authorize: Authorize | None = None,
    request_approval: bool = False,
    approval: Approval | None = None,
) -> SaveResult:
    """Apply ``edit`` to the partition's config as saved at the moment of writing (under the
    partition lock), so concurrent edits of other queues or settings are kept, not reverted.

    ``edit`` may raise ``ConfigErrors`` or ``NotFound`` (e.g. its queue is gone); nothing is
    written then. The partition must exist. ``authorize`` runs first in the transaction.
    ``request_approval`` as for ``save_partition_config``; ``approval``: the save of an approved
    change request (``change_requests.approve_request``), never held again.
    """
    _require_comment(comment)
    with transaction.atomic():
        return _save_config(
            partition_name,
            edit,
            actor=actor,
            comment=comment.strip(),
            kind=RevisionKind.CHANGE,
            expected_revision=expected_revision,
            expected_queue_versions=expected_queue_versions or {},
            reverted_from=None,
            create=False,
            authorize=authorize,
            gated=request_approval and approval is None,
            approval=approval,
        )


@retry_on_conflict
def import_partition_configs(
    configs: list[PartitionConfig],
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    expected_revisions: Mapping[str, int | None] | None = None,
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> list[SaveResult]:
    """Save several partitions from one ``queues.yaml`` as one all-or-nothing change.

    Each partition keeps the product's own settings (``PRODUCT_SETTINGS``) as saved when the
    import is written. ``expected_revisions`` maps a partition name to the version the caller
    previewed the import against (None: the partition did not exist then); a partition that
    changed since is refused with ``StaleVersion`` and nothing of the import is saved.
    ``request_approval``: a partition whose change needs approval gets a change request (its
    result's ``change_request``) while the others are saved.
    """
    _require_comment(comment)
    expected = dict(expected_revisions or {})
    with transaction.atomic():
        results = []
        for config in configs:
            created_meanwhile = (
                config.name in expected
                and expected[config.name] is None
                and Partition.objects.filter(name=config.name).exists()
            )
            if created_meanwhile:
                raise StaleVersion(
                    f"partition {config.name!r} was created after the preview", current=1
                )
            results.append(
                _save_config(
                    config.name,
                    lambda current, imported=config: _keep_product_settings(imported, current),
                    actor=actor,
                    comment=comment.strip(),
                    kind=RevisionKind.IMPORT,
                    expected_revision=expected.get(config.name),
                    expected_queue_versions={},
                    reverted_from=None,
                    create=True,
                    authorize=authorize,
                    gated=request_approval,
                )
            )
        return results


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
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> SaveResult:
    """Change some of one queue's ``guaranteed``, ``max`` and ``properties`` (each replaced whole
    when given), refusing the change if the queue's ``version`` moved since the caller read it.
    ``request_approval`` as for ``save_partition_config``."""
    changes = queue_changes(guaranteed=guaranteed, max=max, properties=properties)
    return edit_partition_config(
        partition_name,
        lambda current: current.with_queue(replace(queue_from_config(current, path), **changes)),
        actor=actor,
        comment=comment,
        expected_queue_versions={path: version},
        authorize=authorize,
        request_approval=request_approval,
    )


def queue_changes(
    *,
    guaranteed: Mapping[str, int] | None = None,
    max: Mapping[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The fields of a queue edit that were given, as ``QueueConfig`` takes them."""
    changes: dict[str, Any] = {}
    if guaranteed is not None:
        changes["guaranteed"] = dict(guaranteed)
    if max is not None:
        changes["max"] = dict(max)
    if properties is not None:
        changes["properties"] = dict(properties)
    return changes


def create_queue(
    partition_name: str,
    *,
    parent: str,
    name: str,
    actor: AbstractBaseUser | None,
    comment: str,
    guaranteed: Mapping[str, int] | None = None,
    max: Mapping[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> tuple[SaveResult, str]:
    """Add a queue under ``parent``; returns the result and the new queue's path. The parent
    must exist and the name must be free at the moment of writing (field errors otherwise).
    ``request_approval`` as for ``save_partition_config``."""
    queue = QueueConfig.child_of(
        parent, name, **queue_changes(guaranteed=guaranteed or {}, max=max or {},
                                      properties=properties or {}),
    )  # fmt: skip

    def add(current: PartitionConfig) -> PartitionConfig:
        if current.queue(parent) is None:
            raise ConfigErrors([ConfigError(None, "", f"no queue {parent!r}", at="parent")])
        if current.queue(queue.path) is not None:
            raise ConfigErrors([ConfigError(None, "", f"{queue.path} already exists", at="name")])
        return current.with_queue(queue)

    result = edit_partition_config(
        partition_name, add, actor=actor, comment=comment, authorize=authorize,
        request_approval=request_approval,
    )  # fmt: skip
    return result, queue.path


def delete_queue(
    partition_name: str,
    path: str,
    *,
    version: int,
    actor: AbstractBaseUser | None,
    comment: str,
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> SaveResult:
    """Remove a queue and its subtree, refusing if the queue's ``version`` moved. The grants on
    the removed queues go with their rows (``accounts.models.QueueGrant``).
    ``request_approval`` as for ``save_partition_config``."""
    if path == ROOT:
        raise ConfigErrors([ConfigError(None, "", "the root queue cannot be deleted", at="path")])

    def remove(current: PartitionConfig) -> PartitionConfig:
        queue_from_config(current, path)
        return current.without_subtree(path)

    return edit_partition_config(
        partition_name,
        remove,
        actor=actor,
        comment=comment,
        expected_queue_versions={path: version},
        authorize=authorize,
        request_approval=request_approval,
    )


def update_partition_settings(
    partition_name: str,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    expected_revision: int | None = None,
    authorize: Authorize | None = None,
    **settings: Any,
) -> SaveResult:
    """Change some partition settings (``PartitionSettings`` fields), keeping the queues and
    every other setting as saved at the moment of writing."""
    return edit_partition_config(
        partition_name,
        lambda current: replace(current, settings=replace(current.settings, **settings)),
        actor=actor,
        comment=comment,
        expected_revision=expected_revision,
        authorize=authorize,
    )


def revert_config(
    partition_name: str,
    *,
    to_number: int,
    actor: AbstractBaseUser | None,
    expected_revision: int,
    comment: str = "",
    authorize: Authorize | None = None,
    request_approval: bool = False,
) -> SaveResult:
    """Make revision ``to_number`` the current config again, as a new revision.

    The old snapshot is validated like any change (the rules may have tightened since). When the
    current config already equals it, nothing is written. ``expected_revision``, the partition
    version the caller read, is required, as for a whole-config replacement: a revert replaces
    the whole config, and one made without it silently undid any change saved since the caller
    looked (``StaleVersion`` when it moved; compared under the lock like any other write).
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
        expected_revision=expected_revision,
        reverted_from=to_number,
        authorize=authorize,
        request_approval=request_approval,
    )


def get_partition(name: str, *, lock: bool = False) -> Partition:
    """The partition called ``name`` (``NotFound`` if none); with ``lock``, its row is locked
    for the rest of the transaction."""
    if "\x00" in name:  # PostgreSQL text cannot hold NUL: no partition can have this name
        raise NotFound(f"partition {name!r} does not exist")
    partitions = Partition.objects.select_for_update() if lock else Partition.objects
    partition = partitions.filter(name=name).first()
    if partition is None:
        raise NotFound(f"partition {name!r} does not exist")
    return partition


def newest_revision_number(partition: Partition) -> int | None:
    """The number of the partition's newest config revision (None before the first): the
    config the cluster should run, as ``config.yaml`` answers it in ``X-Config-Revision``."""
    return partition.revisions.order_by("-number").values_list("number", flat=True).first()


def settings_for_import(name: str) -> PartitionSettings:
    """The product's own settings of a partition (kept when a ``queues.yaml`` is imported, since
    the file does not carry them), or the defaults for a new partition."""
    partition = Partition.objects.filter(name=name).first()
    return partition.settings_config() if partition else PartitionSettings(name=name)


def _require_comment(comment: str) -> None:
    if not comment or not comment.strip():
        raise ConfigErrors([ConfigError(None, "", "a comment is required", at="comment")])


def _save_config(
    name: str,
    edit: ConfigEdit,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    kind: RevisionKind,
    expected_revision: int | None,
    expected_queue_versions: Mapping[str, int],
    reverted_from: int | None,
    create: bool,
    authorize: Authorize | None = None,
    gated: bool = False,
    approval: Approval | None = None,
) -> SaveResult:
    if authorize is not None:
        # First, before any lock of this transaction and any write (``lock_order``): the
        # account, then the partition row (exclusive, as below), then the rights as they are now.
        existing = Partition.objects.filter(name=name).first() if "\x00" not in name else None
        if existing is None and not create:
            raise NotFound(f"partition {name!r} does not exist")
        authorize(existing)
    if create:
        partition, created = _lock_or_create_partition(name)
    else:
        partition, created = get_partition(name, lock=True), False
    if expected_revision is not None and expected_revision != partition.version:
        raise StaleVersion(
            f"partition {partition.name!r} is at version {partition.version}, "
            f"not {expected_revision}",
            current=partition.version,
        )
    versions = dict(
        partition.queues.filter(path__in=list(expected_queue_versions)).values_list(
            "path", "version"
        )
        if expected_queue_versions
        else ()
    )
    for path, version in expected_queue_versions.items():
        current = versions.get(path)
        if current is None:
            raise NotFound(f"queue {path!r} does not exist in partition {partition.name!r}")
        if current != version:
            raise StaleVersion(
                f"queue {path!r} is at version {current}, not {version}", current=current
            )

    # Read under the lock: the edit applies to what is saved now, never to an earlier read.
    # The newest revision holds what the rows hold (both are written below, in one
    # transaction), parsed once per process (``queues.saved``), so only the rows that change
    # are read.
    before = current_config(partition)
    # Durations are saved with their unit (60 -> 60s) whichever way the change came in.
    config = normalized_config(edit(before))
    if config.name != partition.name:
        raise ValueError(f"an edit of {partition.name!r} returned partition {config.name!r}")
    # An edit of some queues re-checks only around them when ``before`` was validated already
    # (e.g. by the dry run that preceded the save); otherwise validating ``before`` first
    # would be wasted, as the next change is made to the config saved here.
    errors = validate_config(config, base=before if is_validated(before) else None)
    if errors:
        raise ConfigErrors(errors)
    # The last point to stop at the request's deadline: nothing is written yet, and the
    # transaction rolls back whatever was read under it (scheduler_admin.base.deadlines).
    deadlines.check("validating the config")
    changes = diff_configs(before, config)
    if not created and not changes and before.sibling_order() == config.sibling_order():
        return SaveResult(partition=partition, revision=None)
    newest = newest_revision_number(partition) or 0
    if gated and not created and approval_gate.needs_approval(partition.approval, before, config):
        # Held for another admin (SPEC 6 "Approvals"): the request instead of the revision.
        held = approval_gate.hold(
            partition, before, config, changes, actor=actor, comment=comment, kind=kind,
            base_revision=newest,
        )  # fmt: skip
        return SaveResult(partition=partition, revision=None, change_request=held)

    now = timezone.now()
    _apply_settings(partition, config.settings, bump=not created)
    changed_paths = _apply_queues(partition, before, config)
    number = newest + 1
    acting = actor if actor is not None and actor.is_authenticated else None
    revision = ConfigRevision.objects.create(
        partition=partition,
        number=number,
        kind=kind,
        created_at=now,
        # An approved request's revision names both: its author and the approver (the actor).
        author=approval.author if approval is not None else acting,
        author_name=approval.author_name if approval is not None else actor_name(actor),
        approved_by=acting if approval is not None else None,
        approved_by_name=actor_name(actor) if approval is not None else "",
        comment=comment,
        reverted_from=reverted_from,
        snapshot=config.to_json(),
    )
    # Quota timers start, reset or stop with the change, in the same transaction (SPEC 4.1):
    # enforcement's receiver (``queues.hooks`` says why a hook and not an import).
    config_saved(partition, before, config, at=now, actor=actor, revision_number=number)
    record_event(
        _KIND_EVENTS[RevisionKind(kind)],
        actor=actor,
        at=now,
        partition_name=partition.name,
        queue_path=_subtree_of(changed_paths),
        object_type="revision",
        object_id=str(number),
        summary=_summary(partition.name, number, kind, changed_paths, created, reverted_from),
        data={
            "revision": number,
            "comment": comment,
            "created_partition": created,
            "changed_queues": changed_paths,
            "changes": [change.to_json() for change in changes],
            **_approval_data(approval),
        },
    )
    return SaveResult(partition=partition, revision=revision)


def _approval_data(approval: Approval | None) -> dict[str, Any]:
    """What the audit event of an approved request's save adds: the request and its author."""
    if approval is None:
        return {}
    return {"change_request": approval.request_id, "requested_by": approval.author_name}


def _subtree_of(paths: list[str]) -> str:
    """The changed queue whose subtree holds every change (one queue edited, created, or a
    subtree deleted), or "" when the changes are spread (the event concerns the partition).
    The audit list's queue filters, and what a queue grant's holder sees of the audit log,
    read this column."""
    if not paths:
        return ""
    top = min(paths, key=lambda path: path.count("."))
    inside = all(path == top or path.startswith(top + ".") for path in paths)
    return top if inside else ""


def _keep_product_settings(imported: PartitionConfig, current: PartitionConfig) -> PartitionConfig:
    """``imported`` with the product's own settings of ``current`` (a new partition's
    ``current`` is empty with the built-in defaults, which the parsed file already has)."""
    kept = {key: getattr(current.settings, key) for key in PRODUCT_SETTINGS}
    return with_settings(imported, replace(imported.settings, **kept))


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
    """Every setting but the name onto the partition row (its columns are named alike)."""
    for setting in fields(settings):
        if setting.name != "name":
            setattr(partition, setting.name, getattr(settings, setting.name))
    partition.victim_strategy = list(settings.victim_strategy)
    if bump:
        partition.version += 1
    partition.save()


def _apply_queues(
    partition: Partition, before: PartitionConfig, config: PartitionConfig
) -> list[str]:
    """Make the queue rows (which hold ``before``) match ``config``; returns the paths that
    were added, changed or removed. Only the rows of those queues, of queues that moved among
    their siblings and of the parents of new queues are read and written.

    In bulk, so that a whole config of tens of thousands of queues (a 5 MiB import) is written
    in seconds rather than one statement per queue: removed subtrees are deleted in one
    statement, new queues are inserted one level at a time, parents first (a child's row
    needs its parent's id), and changed rows are updated in batches."""
    old, wanted = before.queues_by_path(), config.queues_by_path()
    old_positions, positions = _sibling_positions(before), _sibling_positions(config)
    removed = sorted(set(old) - set(wanted), key=lambda p: p.count("."), reverse=True)
    written = [
        queue
        for queue in config.queues
        if old.get(queue.path) is not queue
        and (old.get(queue.path) != queue or old_positions[queue.path] != positions[queue.path])
    ]
    needed = {*removed, *(queue.path for queue in written)}
    needed.update(queue.parent for queue in written if queue.parent is not None)
    rows = {row.path: row for row in partition.queues.filter(path__in=sorted(needed))}
    changed: list[str] = list(removed)
    if removed:
        # One statement (and the cascade to grants); the children are in the same set.
        Queue.objects.filter(pk__in=[rows.pop(path).pk for path in removed]).delete()

    new_by_depth: dict[int, list[QueueConfig]] = {}
    updated: list[Queue] = []
    now = timezone.now()
    for queue in written:
        row = rows.get(queue.path)
        if row is None:
            new_by_depth.setdefault(queue.path.count("."), []).append(queue)
            changed.append(queue.path)
            continue
        content_changed = row.to_config() != queue
        position = positions[queue.path]
        if content_changed or row.position != position:
            for key, value in _row_values(queue, position).items():
                setattr(row, key, value)
            row.parent = rows[queue.parent] if queue.parent is not None else None
            row.updated_at = now
            if content_changed:
                row.version += 1
                changed.append(queue.path)
            updated.append(row)
    for depth in sorted(new_by_depth):
        created = [
            Queue(
                partition=partition,
                path=queue.path,
                parent=rows[queue.parent] if queue.parent is not None else None,
                version=1,
                created_at=now,
                updated_at=now,
                **_row_values(queue, positions[queue.path]),
            )
            for queue in new_by_depth[depth]
        ]
        _write_rows(_INSERT, created)
        # The new rows' ids, which their children's rows name (one read per level).
        ids = dict(partition.queues.filter(depth=depth).values_list("path", "pk"))
        for row in created:
            row.pk = ids[row.path]
            rows[row.path] = row
    _write_rows(_UPDATE, updated)
    return changed


#: The columns a changed queue row is written with, besides its id.
_UPDATED_FIELDS = (
    "name", "parent", "depth", "position", "guaranteed", "max", "properties", "extra", "version",
    "updated_at",
)  # fmt: skip
#: The columns of a new queue row.
_INSERTED_FIELDS = ("partition", "path", "created_at", *_UPDATED_FIELDS)
_INSERT, _UPDATE = "insert", "update"


def _write_rows(how: str, rows: list[Queue]) -> None:
    """INSERT the new ``rows`` or UPDATE the changed ones by id: one statement per row, sent
    together (``executemany``, which psycopg pipelines on PostgreSQL).

    Rather than Django's bulk helpers: ``bulk_update`` builds one CASE per column over the
    batch, which PostgreSQL evaluates row by row (minutes at 18,000 rows), and ``bulk_create``
    sends arrays that the client-side binding quotes element by element in Python (most of a
    5 MiB import's time). This takes seconds for either."""
    if not rows:
        return
    meta = Queue._meta
    names = _INSERTED_FIELDS if how == _INSERT else _UPDATED_FIELDS
    columns = [meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    if how == _INSERT:
        listed = ", ".join(quote(column.column) for column in columns)
        holes = ", ".join(["%s"] * len(columns))
        sql = f"INSERT INTO {table} ({listed}) VALUES ({holes})"  # noqa: S608 - model names
    else:
        assignments = ", ".join(f"{quote(column.column)} = %s" for column in columns)
        key = quote(meta.pk.column)
        sql = f"UPDATE {table} SET {assignments} WHERE {key} = %s"  # noqa: S608 - model names
    database = connections[DEFAULT_DB_ALIAS]  # the proxy looks it up on every access
    params = []
    for row in rows:
        values = [column.get_db_prep_save(getattr(row, column.attname), database)
                  for column in columns]  # fmt: skip
        params.append(values if how == _INSERT else [*values, row.pk])
    with database.cursor() as cursor:
        cursor.executemany(sql, params)


def _row_values(queue: QueueConfig, position: int) -> dict[str, Any]:
    """The columns of a queue row that hold ``queue`` (besides partition, path and parent)."""
    return {
        "name": queue.name,
        "depth": queue.path.count("."),
        "position": position,
        "guaranteed": dict(queue.guaranteed),
        "max": dict(queue.max),
        "properties": dict(queue.properties),
        "extra": dict(queue.extra),
    }


def _sibling_positions(config: PartitionConfig) -> dict[str, int]:
    """Each queue's place among its siblings (0 first), in configured order."""
    counts: dict[str | None, int] = {}
    positions: dict[str, int] = {}
    for queue in config.queues:
        position = counts.get(queue.parent, 0)
        counts[queue.parent] = position + 1
        positions[queue.path] = position
    return positions


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
