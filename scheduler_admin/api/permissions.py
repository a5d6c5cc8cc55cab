"""The API's permission class: it asks ``accounts.permissions.can`` what a view declares.

A view names the action of each request (``accounts.permissions`` lists them):

- ``read_action`` for GET/HEAD/OPTIONS (default ``READ``) and ``write_action`` for the other
  methods (default ``ADMINISTER``); ``action_access`` maps a viewset's actions
  (``{"cancel": CANCEL_TIMER}``); or a ``permission_action(request)`` method decides;
- where the action applies: ``queue_kwarg`` names the URL argument holding the queue path (the
  decision is then exact: a queue grant's holder gets 403 with the reason outside their
  subtrees); ``scoped = True`` says the view narrows by itself (its lists are filtered with
  ``read_scope``, its objects checked with ``can``), so the request passes when the user may
  act in at least one queue of the partition; neither: the partition as a whole, which only
  a global role covers.

Anonymous requests get 401 (DRF raises it before this check when no credentials came); a
signed-in user the decision refuses gets 403 with the decision's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

if TYPE_CHECKING:  # importing views here would load DRF's settings while they are loading
    from rest_framework.views import APIView

from scheduler_admin.accounts.permissions import (
    ABORT_RUN,
    ADMINISTER,
    CANCEL_TIMER,
    CREATE_QUEUE,
    DELETE_QUEUE,
    EDIT_QUEUE,
    OPERATE_CLUSTER,
    PREVIEW,
    READ,
    SIMULATE,
    can,
)


def action_of(request: Request, view: APIView) -> str:
    """The ``accounts.permissions`` action this request asks for."""
    decide = getattr(view, "permission_action", None)
    if decide is not None:
        return decide(request)
    mapping = getattr(view, "action_access", {})
    name = getattr(view, "action", None)
    if name in mapping:
        return mapping[name]
    if request.method in SAFE_METHODS:
        return getattr(view, "read_action", READ)
    return getattr(view, "write_action", ADMINISTER)


class RolePermission(BasePermission):
    """Asks ``can(user, action, partition, queue_path)`` for every request (module docstring)."""

    message = "Your role does not allow this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            return False
        kwargs = getattr(view, "kwargs", None) or {}
        queue_kwarg = getattr(view, "queue_kwarg", None)
        queue_path = kwargs.get(queue_kwarg) if queue_kwarg else None
        decision = can(
            user,
            action_of(request, view),
            kwargs.get("partition"),
            queue_path,
            anywhere=queue_path is None and getattr(view, "scoped", False),
        )
        if not decision:
            raise PermissionDenied(decision.reason)
        return True


__all__ = [
    "ABORT_RUN",
    "ADMINISTER",
    "CANCEL_TIMER",
    "CREATE_QUEUE",
    "DELETE_QUEUE",
    "EDIT_QUEUE",
    "OPERATE_CLUSTER",
    "PREVIEW",
    "READ",
    "SIMULATE",
    "RolePermission",
    "action_of",
]
