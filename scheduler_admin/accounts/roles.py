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
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    held = role_of(user)
    return held is not None and _RANK[held] >= _RANK[role]
