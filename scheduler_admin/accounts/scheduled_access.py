"""Who may cancel a scheduled change, and whose rights a change is applied with (SPEC 6).

Composed here, above queues, because the scheduled changes are queues' and the rights are
accounts': ``queues.scheduled`` takes the checks as callables (``queues.authorize``).

- **Cancel**: its author, always (their own change: the in-write check only makes sure the
  account is still active and may read the queue); anyone else needs ``CANCEL_SCHEDULED`` on
  the change's queue (a global admin, or a tenant admin inside their subtree), and on the whole
  partition for a whole-config change (global admins only).
- **Apply**: with the submitter's rights as they are at its time, as if they saved it then
  (``EDIT_QUEUE`` on the queue, ``ADMINISTER`` for a whole config): a submitter deactivated or
  whose role or grant was taken away meanwhile no longer changes the config.
"""

from __future__ import annotations

from scheduler_admin.accounts.permissions import (
    ADMINISTER,
    CANCEL_SCHEDULED,
    EDIT_QUEUE,
    READ,
    Decision,
    User,
    authorizer,
    can,
)
from scheduler_admin.queues.authorize import Authorize
from scheduler_admin.queues.models import ScheduledChange


def is_author(user: User | None, change: ScheduledChange) -> bool:
    return (
        user is not None
        and user.is_authenticated
        and change.author_id is not None
        and change.author_id == user.pk
    )


def _path(change: ScheduledChange) -> str | None:
    return change.queue_path or None


def may_cancel(user: User | None, change: ScheduledChange) -> Decision:
    """Whether ``user`` may cancel ``change`` (read-time answer: buttons, the API's 403)."""
    if is_author(user, change):
        return can(user, READ, change.partition, _path(change))
    return can(user, CANCEL_SCHEDULED, change.partition, _path(change))


def cancel_authorizer(user: User | None, change: ScheduledChange) -> Authorize:
    """The in-write check of a cancel, by the rule of ``may_cancel``."""
    action = READ if is_author(user, change) else CANCEL_SCHEDULED
    return authorizer(user, action, _path(change))


def submitter_authorizer(change: ScheduledChange) -> Authorize:
    """The in-write check a change is applied under: its submitter's rights at its time."""
    action = EDIT_QUEUE if change.queue_path else ADMINISTER
    return authorizer(change.author, action, _path(change))
