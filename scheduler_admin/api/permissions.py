"""Role checks for the API: viewer reads, operator edits quotas and drives the live loop, admin
does everything. Roles are Django groups (``scheduler_admin.accounts.roles``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

if TYPE_CHECKING:  # importing views here would load DRF's settings while they are loading
    from rest_framework.views import APIView

from scheduler_admin.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role


class RolePermission(BasePermission):
    """Reads need ``viewer``; writes need the view's ``write_role`` (default ``admin``).

    A view may set ``read_role`` / ``write_role``, or ``action_roles`` for per-action roles
    (``{"cancel": OPERATOR}``). A signed-in user without any role gets 403; anonymous gets 401
    (raised by DRF before this check, since authentication comes first).
    """

    message = "Your role does not allow this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        action = getattr(view, "action", None)
        action_roles = getattr(view, "action_roles", {})
        if action in action_roles:
            return has_role(request.user, action_roles[action])
        if request.method in SAFE_METHODS:
            return has_role(request.user, getattr(view, "read_role", VIEWER))
        return has_role(request.user, getattr(view, "write_role", ADMIN))


__all__ = ["ADMIN", "OPERATOR", "VIEWER", "RolePermission"]
