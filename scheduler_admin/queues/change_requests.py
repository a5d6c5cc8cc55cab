"""Deciding change requests (SPEC 6 "Approvals"): approve, reject, withdraw; and whether a
request is stale.

A request is made by the save itself (``approval_gate.hold``). Here:

- **approve** (another admin, never its author): the request's edits are applied onto the
  config as it is now and saved through the one save service (validated again, its revision
  naming the author and the approver, quota timers started by the save's hook like any save).
  A request whose queues changed since it was made is *stale*; approving it needs
  ``confirm_stale`` (``RequestStale``, a 409, otherwise);
- **reject** (another admin, with a comment);
- **withdraw** (its author only).

Each step is one transaction: the caller's in-write authorization first (the account, then the
partition row locked exclusively, then the rights as they are now; ``base.lock_order``), then
the request read and checked under that lock, so two admins deciding one request are decided
one after the other and the second finds it decided (``RequestDecided``). The audit event is
written in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from preemption.config import PartitionConfig
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name
from scheduler_admin.base import errors, limits
from scheduler_admin.base.lock_order import retry_on_conflict
from scheduler_admin.queues import services
from scheduler_admin.queues.approval_gate import (
    Approval,
    apply_edits,
    described,
    record_request_event,
)
from scheduler_admin.queues.models import ChangeRequest, Partition, RequestStatus
from scheduler_admin.queues.saved import current_config

if TYPE_CHECKING:
    from scheduler_admin.queues.authorize import Authorize


class RequestNotFound(errors.NotFound):
    """No change request with that id in the partition (HTTP 404)."""


class RequestDecided(errors.Conflict):
    """The request is no longer pending (HTTP 409)."""

    code = "request_decided"


class RequestStale(errors.Conflict):
    """Its queues changed since it was made, and the approver did not confirm (HTTP 409)."""

    code = "stale_request"

    def __init__(self, message: str, *, queues: list[str]) -> None:
        super().__init__(message)
        self.queues = queues


def requests_of(partition: Partition, status: str | None = None) -> QuerySet[ChangeRequest]:
    """The partition's requests, newest first (``status``: only those)."""
    found = ChangeRequest.objects.filter(partition=partition).select_related("partition")
    if status:
        found = found.filter(status=status)
    return found.order_by("-id")


def get_request(partition: Partition, request_id: int) -> ChangeRequest:
    found = requests_of(partition).filter(pk=request_id).first()
    if found is None:
        raise RequestNotFound(f"partition {partition.name!r} has no change request {request_id}")
    return found


def stale_queues(request: ChangeRequest) -> list[str]:
    """The request's queues that a revision saved after its base revision touched (added,
    removed or changed any field of), sorted; empty when it is not stale.

    Compared revision by revision from the base on, so a queue changed and changed back still
    counts. Only the revisions after the base are read (usually none)."""
    if not request.queue_paths:
        return []
    newer = request.partition.revisions.filter(number__gte=request.base_revision)
    if not newer.filter(number__gt=request.base_revision).exists():
        return []
    wanted = set(request.queue_paths)
    touched: set[str] = set()
    previous: dict[str, Any] | None = None
    rows = newer.order_by("number").values_list("number", "snapshot")
    for _number, snapshot in rows.iterator(chunk_size=20):
        entries = {q["path"]: q for q in snapshot.get("queues", []) if q.get("path") in wanted}
        if previous is not None:
            touched.update(p for p in wanted if previous.get(p) != entries.get(p))
        previous = entries
    return sorted(touched)


def preview_config(request: ChangeRequest) -> PartitionConfig:
    """The config approving ``request`` now would save (before validation): its edits applied
    onto the config as saved now. ``ConfigErrors`` when they no longer apply."""
    return apply_edits(current_config(request.partition), request.edits)


@retry_on_conflict
def approve_request(
    partition_name: str,
    request_id: int,
    *,
    actor: AbstractBaseUser | None,
    comment: str = "",
    confirm_stale: bool = False,
    authorize: Authorize | None = None,
) -> tuple[ChangeRequest, services.SaveResult]:
    """Approve and save the request (module docstring). Refused: by its author (``Forbidden``),
    when decided (``RequestDecided``), stale without ``confirm_stale`` (``RequestStale``), or
    invalid on the config as it is now (``ConfigErrors``; the request stays pending)."""
    comment = _checked_comment(comment, required=False)
    with transaction.atomic():
        partition, request = _locked_pending(partition_name, request_id, authorize)
        if is_author(request, actor):
            raise errors.Forbidden(
                "You made this request: another admin must approve it (you may withdraw it)."
            )
        stale = stale_queues(request)
        if stale and not confirm_stale:
            raise RequestStale(
                f"The queues of change request {request.pk} changed since it was made: "
                f"{', '.join(stale)}. Look at its diff and preview again, then approve it with "
                "confirm_stale to save it anyway.",
                queues=stale,
            )
        result = services.edit_partition_config(
            partition.name,
            lambda current: apply_edits(current, request.edits),
            actor=actor,
            comment=request.comment,
            approval=Approval(request.pk, request.author, request.author_name),
        )
        now = timezone.now()
        number = result.revision.number if result.revision is not None else None
        _decide(request, RequestStatus.APPROVED, actor=actor, at=now, comment=comment)
        request.revision_number = number
        request.save()
        saved = f"revision {number}" if number is not None else "no change: already saved"
        record_request_event(
            request, AuditKind.CHANGE_APPROVED, actor=actor, at=now,
            summary=f"Approved change request {request.pk} of {partition.name} by "
            f"{request.author_name} ({saved}): {described(request.queue_paths)}",
            revision=number, decision_comment=comment, stale_queues=stale,
        )  # fmt: skip
        return request, result


@retry_on_conflict
def reject_request(
    partition_name: str,
    request_id: int,
    *,
    actor: AbstractBaseUser | None,
    comment: str,
    authorize: Authorize | None = None,
) -> ChangeRequest:
    """Reject the request with a comment (required): another admin, never its author."""
    comment = _checked_comment(comment, required=True)
    with transaction.atomic():
        partition, request = _locked_pending(partition_name, request_id, authorize)
        if is_author(request, actor):
            raise errors.Forbidden("You made this request: withdraw it instead of rejecting it.")
        now = timezone.now()
        _decide(request, RequestStatus.REJECTED, actor=actor, at=now, comment=comment)
        request.save()
        record_request_event(
            request, AuditKind.CHANGE_REJECTED, actor=actor, at=now,
            summary=f"Rejected change request {request.pk} of {partition.name} by "
            f"{request.author_name}: {comment}",
            decision_comment=comment,
        )  # fmt: skip
        return request


@retry_on_conflict
def withdraw_request(
    partition_name: str,
    request_id: int,
    *,
    actor: AbstractBaseUser | None,
    comment: str = "",
    authorize: Authorize | None = None,
) -> ChangeRequest:
    """Withdraw the request: its author only."""
    comment = _checked_comment(comment, required=False)
    with transaction.atomic():
        partition, request = _locked_pending(partition_name, request_id, authorize)
        if not is_author(request, actor):
            raise errors.Forbidden(
                f"Only the author of this request, {request.author_name}, may withdraw it."
            )
        now = timezone.now()
        _decide(request, RequestStatus.WITHDRAWN, actor=actor, at=now, comment=comment)
        request.save()
        record_request_event(
            request, AuditKind.CHANGE_WITHDRAWN, actor=actor, at=now,
            summary=f"Withdrew change request {request.pk} of {partition.name}",
            decision_comment=comment,
        )  # fmt: skip
        return request


def pending_requests(partitions: Iterable[Partition]) -> QuerySet[ChangeRequest]:
    """Every pending request of ``partitions``, oldest first (the dashboard's list)."""
    return (
        ChangeRequest.objects.filter(partition__in=list(partitions), status=RequestStatus.PENDING)
        .select_related("partition")
        .order_by("created_at", "id")
    )


def _locked_pending(
    partition_name: str, request_id: int, authorize: Authorize | None
) -> tuple[Partition, ChangeRequest]:
    """The partition locked (after ``authorize``, which locks it itself) and its pending
    request ``request_id``."""
    if authorize is not None:
        authorize(services.get_partition(partition_name))
    partition = services.get_partition(partition_name, lock=True)
    request = get_request(partition, request_id)
    if not request.is_pending:
        raise RequestDecided(f"change request {request.pk} is {request.status} already")
    return partition, request


def is_author(request: ChangeRequest, actor: AbstractBaseUser | None) -> bool:
    if actor is None or not actor.is_authenticated:
        return False
    if request.author_id is not None:
        return request.author_id == actor.pk
    return request.author_name == actor_name(actor)  # the author's account was deleted


def _decide(
    request: ChangeRequest,
    status: RequestStatus,
    *,
    actor: AbstractBaseUser | None,
    at: Any,
    comment: str,
) -> None:
    request.status = status
    request.decided_by = actor if actor is not None and actor.is_authenticated else None
    request.decided_by_name = actor_name(actor)
    request.decided_at = at
    request.decision_comment = comment


def _checked_comment(comment: str, *, required: bool) -> str:
    comment = (comment or "").strip()
    if required and not comment:
        raise errors.Invalid("a comment is required to reject a request", field="comment")
    if len(comment) > limits.COMMENT_MAX_LENGTH:
        raise errors.Invalid(
            f"must be at most {limits.COMMENT_MAX_LENGTH} characters", field="comment"
        )
    return comment
