"""Roles are Django groups: viewer (read), operator (edit quotas, cancel timers, ingest state),
admin (everything). Each role includes the ones below it; a superuser is an admin."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {role: rank for rank, role in enumerate(ROLES)}


def role_of(user: AbstractBaseUser | AnonymousUser) -> str | None:
    """The highest role the user holds, or None (signed in but given no role yet)."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return ADMIN
    # ``groups.all()`` rather than a ``values_list`` query: a list of users fetched with
    # ``prefetch_related("groups")`` (the Users page) then costs no query per user.
    names = {group.name for group in user.groups.all()}
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    held = role_of(user)
    return held is not None and _RANK[held] >= _RANK[role]
