"""``OIDC_ROLE_GROUPS``: which provider groups give which role (read by the settings, so no model
or app import here).

Format: ``role=group,group;role=group`` with the roles viewer, operator and admin, e.g.
``viewer=staff;operator=sre,batch-ops;admin=platform-admins``. A user in groups of several roles
gets the highest; a group named twice is refused (it would be ambiguous).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

ROLES = ("viewer", "operator", "admin")  # as accounts.roles.ROLES, lowest first


def parse_role_groups(text: str) -> dict[str, str]:
    """Group name -> role, from ``OIDC_ROLE_GROUPS``; a malformed value stops start-up."""
    by_group: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        role, sep, groups = part.partition("=")
        role = role.strip()
        if not sep or role not in ROLES:
            raise ImproperlyConfigured(
                f"OIDC_ROLE_GROUPS: {part.strip()!r} must read ROLE=GROUP[,GROUP...] with ROLE "
                f"one of {', '.join(ROLES)}"
            )
        for group in (g.strip() for g in groups.split(",")):
            if not group:
                continue
            if group in by_group:
                raise ImproperlyConfigured(
                    f"OIDC_ROLE_GROUPS: group {group!r} is given both {by_group[group]} and {role}"
                )
            by_group[group] = role
    if not by_group:
        raise ImproperlyConfigured("OIDC_ROLE_GROUPS names no group: nobody could sign in")
    return by_group


def role_for(groups: list[str], by_group: dict[str, str]) -> str | None:
    """The highest role any of ``groups`` maps to, or None."""
    roles = {by_group[group] for group in groups if group in by_group}
    for role in reversed(ROLES):
        if role in roles:
            return role
    return None
