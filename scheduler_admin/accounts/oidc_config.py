"""Which provider groups give what (read by the settings, so no model or app import here).

``OIDC_ROLE_GROUPS``: global roles. Format ``role=group,group;role=group`` with the roles
viewer, operator and admin, e.g. ``viewer=staff;operator=sre,batch-ops;admin=platform-admins``.
A user in groups of several roles gets the highest; a group named twice is refused (it would
be ambiguous).

``OIDC_GRANT_GROUPS``: queue grants (tenant accounts). Format
``PARTITION:QUEUE:ROLE=group,group;PARTITION:QUEUE:ROLE=group``, e.g.
``default:root.team-a:admin=team-a-admins;default:root.team-a:operator=team-a``. A group may
give several grants; a user gets every grant of every group they are in, the highest role when
two give the same queue. Such a user needs no global role: they see and change only their
subtrees.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from scheduler_admin.accounts.grant_specs import GrantSpec

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


def parse_grant_groups(text: str) -> dict[str, tuple[GrantSpec, ...]]:
    """Group name -> the grants it gives, from ``OIDC_GRANT_GROUPS``; a malformed value stops
    start-up naming the part at fault. Whether the partitions and queues exist is seen at each
    sign-in (they come and go with configs): a grant on a missing queue is skipped then."""
    by_group: dict[str, list[GrantSpec]] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        grant, sep, groups = part.rpartition("=")
        if not sep:
            raise ImproperlyConfigured(
                f"OIDC_GRANT_GROUPS: {part.strip()!r} must read "
                f"PARTITION:QUEUE:ROLE=GROUP[,GROUP...]"
            )
        try:
            spec = GrantSpec.parse(grant)
        except ValueError as exc:
            raise ImproperlyConfigured(f"OIDC_GRANT_GROUPS: {exc}") from None
        names = [g.strip() for g in groups.split(",") if g.strip()]
        if not names:
            raise ImproperlyConfigured(f"OIDC_GRANT_GROUPS: {part.strip()!r} names no group")
        for group in names:
            by_group.setdefault(group, []).append(spec)
    if not by_group:
        raise ImproperlyConfigured("OIDC_GRANT_GROUPS names no group: nobody could sign in")
    return {group: tuple(specs) for group, specs in by_group.items()}


def grants_for(groups: list[str], by_group: dict[str, tuple[GrantSpec, ...]]) -> list[GrantSpec]:
    """Every grant ``groups`` give, one per queue (the highest role), sorted."""
    best: dict[tuple[str, str], GrantSpec] = {}
    for group in groups:
        for spec in by_group.get(group, ()):
            key = (spec.partition, spec.queue)
            if key not in best or (best[key].role != "admin" and spec.role == "admin"):
                best[key] = spec
    return sorted(best.values())
