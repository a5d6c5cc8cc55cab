"""Which changes need another admin's approval, and holding them as change requests (SPEC 6
"Approvals").

The save service (``queues.services._save_config``) asks ``needs_approval`` once the change is
validated, under the partition lock, with the config as saved and the config it would save. The
partition's ``approval`` setting *as saved* decides (a config PUT that also switches approval
off is still judged by the setting it would replace):

- ``none``: nothing is held;
- ``decreases``: a change that, on any queue and resource type, lowers a max or adds one where
  there was none (unlimited -> limited), or lowers a guarantee (a guarantee removed lowers it to
  0). Removing a max is an increase. A new queue with a max adds one; a removed queue counts as
  a decrease (its guarantee and its tasks' room go away);
- ``all``: every change to the queues (their resources, properties and kept keys, new and
  removed queues).

Changes to partition settings alone are never held: they are admin-only already, and the
``approval`` setting itself is one of them (turning approval off is an audited admin act, like
switching enforcement). A held change writes no revision: ``hold`` writes the request and its
audit event in the save's transaction, and the save answers with the request instead.

The request stores *edits* (the fields it names, per queue; ``edits_between``), not the finished
config: ``apply_edits`` replays them onto the config as it is when the request is approved or
previewed. This module is imported by ``services``; what decides a request (approve, reject,
withdraw) is in ``change_requests``, which imports ``services``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from preemption.config import FieldChange, PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import ConfigError, ConfigErrors
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.queues.models import ApprovalMode, Partition
from scheduler_admin.queues.request_models import ChangeRequest, RequestStatus

#: The queue fields an edit may name (``QueueConfig``'s besides path, parent and name).
QUEUE_FIELDS = ("guaranteed", "max", "properties", "extra")


@dataclass(frozen=True)
class Approval:
    """Saving an approved request: the revision's author is the request's author, the acting
    user (``actor`` of the save) its approver."""

    request_id: int
    author: AbstractBaseUser | None
    author_name: str


def needs_approval(mode: str, before: PartitionConfig, after: PartitionConfig) -> bool:
    """Whether the partition's ``approval`` setting ``mode`` holds the change ``before`` ->
    ``after`` for approval (module docstring)."""
    if mode == ApprovalMode.ALL:
        return bool(changed_queue_paths(before, after))
    if mode == ApprovalMode.DECREASES:
        return bool(decreased_queues(before, after))
    return False


def changed_queue_paths(before: PartitionConfig, after: PartitionConfig) -> list[str]:
    """Every queue added, removed or changed (any field), sorted."""
    old, new = before.queues_by_path(), after.queues_by_path()
    return sorted(
        path
        for path in old.keys() | new.keys()
        if old.get(path) is not new.get(path) and old.get(path) != new.get(path)
    )


def decreased_queues(before: PartitionConfig, after: PartitionConfig) -> list[str]:
    """The queues whose change is a decrease (module docstring), sorted."""
    old, new = before.queues_by_path(), after.queues_by_path()
    found = []
    for path in changed_queue_paths(before, after):
        was, now = old.get(path), new.get(path)
        if now is None or _lowers(was, now):
            found.append(path)
    return found


def _lowers(was: QueueConfig | None, now: QueueConfig) -> bool:
    old_max = dict(was.max) if was is not None else {}
    old_guaranteed = dict(was.guaranteed) if was is not None else {}
    for kind, amount in now.max.items():
        if kind not in old_max or amount < old_max[kind]:
            return True
    return any(now.guaranteed.get(kind, 0) < amount for kind, amount in old_guaranteed.items())


def edits_between(before: PartitionConfig, after: PartitionConfig) -> dict[str, Any]:
    """The fields ``after`` names differently from ``before``: changed settings, and per queue
    the changed fields (each whole), a new queue whole, or its removal (``ChangeRequest``)."""
    old_settings, new_settings = before.settings.to_json(), after.settings.to_json()
    settings = {
        key: value
        for key, value in new_settings.items()
        if key != "name" and old_settings.get(key) != value
    }
    old, new = before.queues_by_path(), after.queues_by_path()
    queues: dict[str, dict[str, Any]] = {}
    for path in changed_queue_paths(before, after):
        was, now = old.get(path), new.get(path)
        if now is None:
            queues[path] = {"remove": True}
        elif was is None:
            queues[path] = {"add": now.to_json()}
        else:
            queues[path] = {
                "set": {
                    name: dict(getattr(now, name))
                    for name in QUEUE_FIELDS
                    if getattr(now, name) != getattr(was, name)
                }
            }
    added = [queue.path for queue in after.queues if queues.get(queue.path, {}).get("add")]
    return {"settings": settings, "queues": queues, "added": added}


def apply_edits(current: PartitionConfig, edits: dict[str, Any]) -> PartitionConfig:
    """``edits`` replayed onto ``current`` (the config as it is now): settings named are set,
    removed queues removed, changed queues get the fields named, new queues are added (parents
    first). ``ConfigErrors`` naming the queue when a changed queue is gone or a new one exists
    already; every other rule is the validator's, which the save runs on the result."""
    config = current
    settings = edits.get("settings") or {}
    if settings:
        merged = {**config.settings.to_json(), **settings, "name": config.name}
        config = replace(config, settings=PartitionSettings.from_json(merged))
    queues: dict[str, dict[str, Any]] = edits.get("queues") or {}
    problems: list[ConfigError] = []
    for path in sorted((p for p, e in queues.items() if e.get("remove")), key=_depth):
        config = config.without_subtree(path)
    for path, edit in sorted(queues.items()):
        if "set" not in edit:
            continue
        queue = config.queue(path)
        if queue is None:
            problems.append(ConfigError(path, "", f"{path} no longer exists"))
            continue
        config = config.with_queue(replace(queue, **{k: dict(v) for k, v in edit["set"].items()}))
    for path in edits.get("added") or []:
        if config.queue(path) is not None:
            problems.append(ConfigError(path, "", f"{path} exists already"))
            continue
        config = config.with_queue(QueueConfig.from_json(queues[path]["add"]))
    if problems:
        raise ConfigErrors(problems)
    return config


def _depth(path: str) -> int:
    return path.count(".")


def hold(
    partition: Partition,
    before: PartitionConfig,
    after: PartitionConfig,
    changes: Iterable[FieldChange],
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    kind: str,
    base_revision: int,
) -> ChangeRequest:
    """Write the change request for ``before`` -> ``after`` and its audit event, in the save's
    transaction (the caller holds the partition lock)."""
    now = timezone.now()
    paths = changed_queue_paths(before, after)
    request = ChangeRequest.objects.create(
        partition=partition,
        status=RequestStatus.PENDING,
        kind=kind,
        author=actor if actor is not None and actor.is_authenticated else None,
        author_name=actor_name(actor),
        created_at=now,
        comment=comment,
        base_revision=base_revision,
        queue_paths=paths,
        edits=edits_between(before, after),
        diff=[change.to_json() for change in changes],
    )
    record_request_event(
        request, AuditKind.CHANGE_REQUESTED, actor=actor, at=now,
        summary=f"Requested a change of {partition.name} (request {request.pk}): "
        f"{described(paths)}",
    )  # fmt: skip
    return request


def record_request_event(
    request: ChangeRequest,
    kind: AuditKind,
    *,
    actor: AbstractBaseUser | None,
    at: Any,
    summary: str,
    **data: Any,
) -> None:
    """The audit event of a step of ``request`` (requested, approved, rejected, withdrawn)."""
    record_event(
        kind,
        actor=actor,
        at=at,
        partition_name=request.partition.name,
        queue_path=common_subtree(request.queue_paths),
        object_type="change_request",
        object_id=str(request.pk),
        summary=summary,
        data={
            "change_request": request.pk,
            "comment": request.comment,
            "author": request.author_name,
            "queues": list(request.queue_paths),
            "changes": list(request.diff),
            **data,
        },
    )


def common_subtree(paths: list[str]) -> str:
    """The queue whose subtree holds every path, or "" (as the save's audit events file them,
    so a queue grant's holder sees the events of their subtree)."""
    if not paths:
        return ""
    top = min(paths, key=_depth)
    return top if all(p == top or p.startswith(top + ".") for p in paths) else ""


def described(paths: list[str]) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return shown or "partition settings"
