"""Who may see and decide a change request (SPEC 6 "Approvals").

A request may touch several queues (a whole-config PUT, an import) and partition settings. A
right over it is a right over *every* queue it touches: a tenant admin (an ``admin`` queue
grant) approves or rejects only requests inside their subtrees, and a request that changes
partition settings concerns the whole partition, which only a global admin covers. Seeing a
request is ``READ`` on each of its queues, in the same way.

``request_authorizer`` is the in-write check the decision services (``queues.change_requests``)
run first in their transaction, in the lock order (``base.lock_order``): the account, then the
partition row, then the rights as they are now over each of the request's queues.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_admin.accounts.permissions import (
    APPROVE_CHANGE,
    READ,
    Decision,
    User,
    can,
    recheck_identity,
    require,
)
from scheduler_admin.base.lock_order import lock_partition
from scheduler_admin.queues.authorize import Authorize
from scheduler_admin.queues.models import ChangeRequest, Partition


def request_scope(request: ChangeRequest) -> list[str | None]:
    """What a right over ``request`` must cover: each outermost queue it touches, and None (the
    whole partition) when it changes partition settings or touches no queue."""
    paths = sorted(request.queue_paths, key=lambda path: path.count("."))
    outermost: list[str | None] = []
    for path in paths:
        if not any(top is not None and (path + ".").startswith(top + ".") for top in outermost):
            outermost.append(path)
    if request.settings_edits() or not outermost:
        outermost.append(None)
    return outermost


def can_on_request(
    user: User | None, action: str, request: ChangeRequest, *, fresh: bool = False
) -> Decision:
    """``can`` over every part of ``request``'s scope: the first refusal, or allowed."""
    for path in request_scope(request):
        decision = can(user, action, request.partition, path, fresh=fresh)
        if not decision:
            return decision
    return Decision(True)


def may_read(user: User | None, request: ChangeRequest) -> bool:
    return bool(can_on_request(user, READ, request))


def may_decide(user: User | None, request: ChangeRequest) -> Decision:
    """May ``user`` approve or reject ``request`` as far as rights go (its author never may:
    the service says so)."""
    return can_on_request(user, APPROVE_CHANGE, request)


@dataclass(frozen=True)
class RequestAuthorization:
    """``request_authorizer``'s check."""

    user: User | None
    action: str
    scope: tuple[str | None, ...]

    def __call__(self, partition: Partition | None, /, *, exclusive: bool = True) -> None:
        recheck_identity(self.user)  # lock order level 1: the account
        if partition is None:
            return
        lock_partition(partition.pk, exclusive=exclusive)  # level 2: the partition row
        for path in self.scope:
            require(self.user, self.action, partition.name, path, fresh=True)


def request_authorizer(user: User | None, action: str, request: ChangeRequest) -> Authorize:
    """The in-write check of a decision on ``request`` (module docstring)."""
    return RequestAuthorization(user, action, tuple(request_scope(request)))
