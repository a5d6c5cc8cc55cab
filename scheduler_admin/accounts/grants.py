"""Giving and revoking queue grants, and the groups a user belongs to: the only code that writes
``QueueGrant`` rows and tenant groups. The Users page and ``/api/v1/grants/`` both call it.

Each function is one transaction with its audit event. Giving or revoking a grant locks the
partition's row first, the lock every config save and every authorised write of a grant holder
takes (``permissions.authorizer``): a save racing a revocation is decided on one side of it,
never on a grant that is already gone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AbstractUser, Group
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from preemption.config import text_problem
from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.models import GrantRole, GrantSource, QueueGrant
from scheduler_admin.accounts.roles import ROLES
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.base.errors import Invalid, NotFound
from scheduler_admin.base.limits import (
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from scheduler_admin.queues.models import Partition, Queue

logger = logging.getLogger(__name__)

#: The longest group name Django stores.
GROUP_NAME_MAX_LENGTH = Group._meta.get_field("name").max_length or 150


class GrantError(Invalid):
    """A refused change; ``field`` names the input at fault (empty: the change itself)."""


class GrantNotFound(NotFound):
    """No grant with that id (HTTP 404)."""


@dataclass(frozen=True)
class GrantResult:
    """The grant as saved and what happened: ``created``, ``changed`` (its role) or neither."""

    grant: QueueGrant
    created: bool
    changed: bool


def grants() -> QuerySet[QueueGrant]:
    """Every grant with what lists show, by partition, queue path and holder."""
    return QueueGrant.objects.select_related("partition", "queue", "user", "group").order_by(
        "partition__name", "queue__path", "user__username", "group__name", "id"
    )


def grants_applying_to(user: AbstractBaseUser) -> QuerySet[QueueGrant]:
    """The grants ``user`` holds, their own and through their groups."""
    return grants().filter(Q(user_id=user.pk) | Q(group__user=user.pk)).distinct()


def give_grant(
    *,
    partition: str,
    queue_path: str,
    role: str,
    actor: AbstractBaseUser | None,
    user: str = "",
    group: str = "",
    source: str = GrantSource.MANUAL,
    via: str = "",
) -> GrantResult:
    """Give ``role`` on ``queue_path`` (and below) to the user or the group named.

    Steps: check the role and that exactly one holder is named (an existing user; an existing
    group that is not a role group); lock the partition; find the queue; create the grant, or
    change the role of the holder's grant on that queue; audit ``grant.created`` or
    ``grant.changed``. Giving a holder the role they hold changes nothing.

    ``source`` says who keeps the grant (``GrantSource``): an admin's grant given again by an
    admin becomes theirs to keep (``manual``) even if single sign-on gave it first; single sign-on
    never takes over, nor changes, a grant an admin gave. ``via`` replaces "by <actor>" in the
    audit summary (single sign-on says at whose sign-in).
    """
    if role not in GrantRole.values:
        raise GrantError(f"Unknown role {role!r}: choose operator or admin.", field="role")
    holder_user, holder_group = _holder(user, group)
    _check_text(partition, "partition", PARTITION_NAME_MAX_LENGTH)
    _check_text(queue_path, "queue", QUEUE_PATH_MAX_LENGTH)
    by = via or f"by {actor_name(actor)}"
    with transaction.atomic():
        part = _locked_partition(partition)
        queue = Queue.objects.filter(partition=part, path=queue_path).first()
        if queue is None:
            raise GrantError(f"Partition {part.name} has no queue {queue_path}.", field="queue")
        existing = (
            QueueGrant.objects.select_for_update()
            .filter(queue=queue, user=holder_user, group=holder_group)
            .first()
        )
        now = timezone.now()
        if existing is not None:
            keeps = source == GrantSource.SINGLE_SIGN_ON and existing.source == GrantSource.MANUAL
            if keeps or (existing.role == role and existing.source == source):
                return GrantResult(_loaded(existing), created=False, changed=False)
            before, before_source = existing.role, existing.source
            existing.role, existing.source = role, source
            existing.save(update_fields=["role", "source"])
            grant = _loaded(existing)
            was = f"was {before}" + (
                ", from single sign-on" if before_source == GrantSource.SINGLE_SIGN_ON else ""
            )
            _record(
                AuditKind.GRANT_CHANGED,
                grant,
                actor,
                f"{grant.holder_text.capitalize()} is now {role} of {queue_path} in "
                f"{part.name} ({was}), {by}",
                {"from": before, "to": role, "source": source},
            )
            return GrantResult(grant, created=False, changed=True)
        try:
            with transaction.atomic():
                created = QueueGrant.objects.create(
                    partition=part, queue=queue, user=holder_user, group=holder_group,
                    role=role, source=source, created_at=now, created_by_name=actor_name(actor),
                )  # fmt: skip
        except IntegrityError:  # unreachable while the partition is locked; kept honest
            raise GrantError("That holder was given a grant on this queue meanwhile.") from None
        grant = _loaded(created)
        _record(
            AuditKind.GRANT_CREATED,
            grant,
            actor,
            f"{grant.holder_text.capitalize()} made {role} of {queue_path} in {part.name} {by}",
            {"role": role, "source": source},
        )
        return GrantResult(grant, created=True, changed=True)


def revoke_grant(grant_id: int, *, actor: AbstractBaseUser | None, via: str = "") -> QueueGrant:
    """Delete a grant (audited ``grant.revoked``); returns it as it was. ``GrantNotFound``
    when there is none.

    The partition row is locked before the grant is deleted, as every authorised save of the
    grant's holder locks it before it checks the grant (``permissions.authorizer``).
    """
    with transaction.atomic():
        found = grants().filter(pk=grant_id).first()
        if found is None:
            raise GrantNotFound(f"no grant {grant_id}")
        Partition.objects.select_for_update().filter(pk=found.partition_id).values_list(
            "pk"
        ).first()
        grant = grants().select_for_update(of=("self",)).filter(pk=grant_id).first()
        if grant is None:  # revoked (or its queue deleted) while we waited for the lock
            raise GrantNotFound(f"no grant {grant_id}")
        grant_pk = grant.pk
        grant.delete()
        grant.pk = grant_pk  # the caller may still name it
        _record(
            AuditKind.GRANT_REVOKED,
            grant,
            actor,
            f"{grant.role.capitalize()} of {grant.queue.path} in {grant.partition.name} "
            f"revoked from {grant.holder_text} {via or f'by {actor_name(actor)}'}",
            {"role": grant.role},
        )
    return grant


def existing_grants(specs: Iterable[GrantSpec]) -> list[GrantSpec]:
    """The grants among ``specs`` whose partition and queue exist, in order."""
    return [
        spec
        for spec in specs
        if Queue.objects.filter(partition__name=spec.partition, path=spec.queue).exists()
    ]


def sync_single_sign_on_grants(
    user: AbstractUser, wanted: Iterable[GrantSpec], *, via: str
) -> list[GrantSpec]:
    """Make the grants single sign-on keeps for ``user`` exactly ``wanted`` (their provider
    groups' grants, ``OIDC_GRANT_GROUPS``): give or change what is missing, revoke what their
    groups no longer give. Grants an admin gave are left alone. A wanted grant on a queue that
    does not exist is skipped (logged). Returns the grants given or kept. Each change is one
    audited ``give_grant``/``revoke_grant``; ``via`` names the sign-in in the audit."""
    by_queue: dict[tuple[str, str], str] = {}
    for spec in wanted:
        key = (spec.partition, spec.queue)
        if by_queue.get(key) != GrantRole.ADMIN:  # the highest role wins
            by_queue[key] = spec.role
    held = grants().filter(user=user, source=GrantSource.SINGLE_SIGN_ON)
    for grant in held:
        if (grant.partition.name, grant.queue.path) not in by_queue:
            with contextlib.suppress(GrantNotFound):  # revoked meanwhile
                revoke_grant(grant.pk, actor=None, via=via)
    kept = []
    for (partition, queue), role in sorted(by_queue.items()):
        try:
            give_grant(
                partition=partition, queue_path=queue, role=role, actor=None,
                user=user.get_username(), source=GrantSource.SINGLE_SIGN_ON, via=via,
            )  # fmt: skip
        except GrantError as exc:
            logger.warning("single sign-on grant %s:%s:%s skipped: %s", partition, queue, role, exc)
            continue
        kept.append(GrantSpec(partition, queue, role))
    return kept


def tenant_groups(user: AbstractUser) -> list[str]:
    """The user's groups other than the role groups, by name."""
    return sorted(g.name for g in user.groups.all() if g.name not in ROLES)


def set_groups(user: AbstractUser, names: list[str], *, actor: AbstractBaseUser | None) -> bool:
    """Make ``names`` the user's tenant groups (their role group is kept), creating groups
    that do not exist yet; audited ``user.groups_changed``. False when nothing changed.

    Membership decides which group grants a user holds; the change holds from the user's next
    request (a save already past its check under the partition lock finishes).
    """
    wanted = sorted({name.strip() for name in names if name.strip()})
    for name in wanted:
        _check_group_name(name, field="groups")
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        before = tenant_groups(user)
        if before == wanted:
            return False
        keep = [g for g in user.groups.all() if g.name in ROLES]
        groups = [Group.objects.get_or_create(name=name)[0] for name in wanted]
        user.groups.set([*keep, *groups])
        record_event(
            AuditKind.USER_GROUPS_CHANGED,
            actor=actor,
            at=timezone.now(),
            object_type="user",
            object_id=user.get_username(),
            summary=f"Groups of {user.get_username()} changed from "
            f"{', '.join(before) or 'none'} to {', '.join(wanted) or 'none'} "
            f"by {actor_name(actor)}",
            data={"user": user.get_username(), "user_id": user.pk, "from": before,
                  "to": wanted},
        )  # fmt: skip
    return True


def _holder(user: str, group: str) -> tuple[AbstractUser | None, Group | None]:
    user, group = user.strip(), group.strip()
    if bool(user) == bool(group):
        message = "Name a user or a group (one of them)."
        raise GrantError(message, field="group" if user and group else "user")
    if user:
        _check_text(user, "user", USERNAME_MAX_LENGTH)
        found = get_user_model().objects.filter(username=user).first()
        if found is None:
            raise GrantError(f"No user named {user!r}.", field="user")
        return found, None
    _check_group_name(group, field="group")
    found_group = Group.objects.filter(name=group).first()
    if found_group is None:
        raise GrantError(
            f"No group named {group!r}: add a user to it first (Users page, Groups).",
            field="group",
        )
    return None, found_group


def _check_group_name(name: str, *, field: str) -> None:
    _check_text(name, field, GROUP_NAME_MAX_LENGTH)
    if name in ROLES:
        raise GrantError(
            f"{name} is a role group: give the {name} role itself instead.", field=field
        )
    if "," in name:
        raise GrantError("A group name cannot contain a comma.", field=field)


def _check_text(value: str, field: str, limit: int) -> None:
    if not value:
        raise GrantError("This field is required.", field=field)
    if len(value) > limit:
        raise GrantError(f"At most {limit} characters.", field=field)
    problem = text_problem(value)
    if problem:
        raise GrantError(problem, field=field)


def _locked_partition(name: str) -> Partition:
    partition = Partition.objects.select_for_update().filter(name=name).first()
    if partition is None:
        raise GrantError(f"No partition named {name!r}.", field="partition")
    return partition


def _loaded(grant: QueueGrant) -> QueueGrant:
    return grants().get(pk=grant.pk)


def _record(
    kind: AuditKind,
    grant: QueueGrant,
    actor: AbstractBaseUser | None,
    summary: str,
    data: dict[str, Any],
) -> None:
    """Holder and queue kept as text: the event reads the same after either is deleted."""
    record_event(
        kind,
        actor=actor,
        at=timezone.now(),
        partition_name=grant.partition.name,
        queue_path=grant.queue.path,
        object_type="grant",
        object_id=str(grant.pk),
        summary=summary,
        data={
            "grant": grant.pk,
            "user": grant.user.get_username() if grant.user_id else None,
            "group": grant.group.name if grant.group_id else None,
            **data,
        },
    )
