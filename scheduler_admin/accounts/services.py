"""Managing console users: create, change role, deactivate, reactivate, issue and revoke API
tokens. The only code that writes users; ``manage.py create_user`` and the Users page both call
it, so their rules and audit events are the same.

Each function is one transaction with its audit event (actor ``None`` is the system, e.g. the
command). A role is exactly one of the groups viewer, operator, admin (``accounts.roles``); the
admin role also makes the account staff and superuser, so the "Django admin" link admins see
works for them, and leaving the role takes both away again (otherwise a demoted superuser would
still count as an admin).

Nobody can lock the console out: an admin cannot deactivate or demote their own account, and
the last active admin cannot be deactivated or demoted by anyone (the command included). The
admin group's row is locked while that is checked, so two admins demoting each other at once
cannot both succeed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import AbstractBaseUser, AbstractUser, Group
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from rest_framework.authtoken.models import Token

from scheduler_admin.accounts.roles import ADMIN, ROLES, role_of
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.limits import USERNAME_MAX_LENGTH

#: Lower number, fewer rights: a change to a lower rank is a downgrade (asks for confirmation).
RANK = {role: rank for rank, role in enumerate(ROLES)}


class AccountError(Exception):
    """A refused account change. ``field`` names the input at fault (``username``, ``role``,
    ``password``, ``email``), or is empty when the change itself is refused (lock-out rules)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class CreatedUser:
    """A new account and its password, when generated (to be shown once, then forgotten)."""

    user: AbstractUser
    generated_password: str | None


def users() -> QuerySet[AbstractUser]:
    """Every account, with what the Users page shows (roles and token) fetched up front."""
    return (
        get_user_model()
        .objects.order_by("username")
        .prefetch_related("groups")
        .select_related("auth_token")
    )


def token_of(user: AbstractUser) -> Token | None:
    """The user's API token, or None (DRF's reverse one-to-one raises when there is none)."""
    try:
        return user.auth_token
    except Token.DoesNotExist:
        return None


def generate_password() -> str:
    """16 URL-safe characters (96 random bits): passes every configured password validator."""
    return secrets.token_urlsafe(12)


def create_user(
    username: str,
    *,
    role: str,
    actor: AbstractBaseUser | None,
    email: str = "",
    password: str | None = None,
) -> CreatedUser:
    """Create an active account holding ``role``.

    Steps: check the name (Django's username rules, not taken in any letter case), the role,
    the email and the password (the configured validators; none given: one is generated);
    create the account with its role; audit ``user.created``.
    """
    username = username.strip()
    _check_role(role)
    _check_username(username)
    email = _checked_email(email.strip())
    generated = None
    if not password:
        password = generated = generate_password()
    user = get_user_model()(username=username, email=email)
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages), field="password") from None
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
            _set_role(user, role)
            _record(
                AuditKind.USER_CREATED,
                user,
                actor,
                f"User {username} created with the {role} role by {actor_name(actor)}",
                {"role": role, "email": email, "password_generated": generated is not None},
            )
    except IntegrityError:  # the same name created meanwhile: the unique index refused it
        raise AccountError(_taken(username), field="username") from None
    return CreatedUser(user, generated)


def change_role(user: AbstractUser, role: str, *, actor: AbstractBaseUser | None) -> bool:
    """Give ``user`` exactly ``role``. False (nothing written) when they hold it already.

    Refused: an unknown role; an admin demoting themselves; demoting the last active admin.
    """
    _check_role(role)
    with transaction.atomic():
        user = _locked(user)
        before = role_of(user)
        if before == role:
            return False
        if before == ADMIN:
            _refuse_own_account(user, actor, "demote")
            _refuse_last_admin(user, "demote")
        _set_role(user, role)
        _record(
            AuditKind.USER_ROLE_CHANGED,
            user,
            actor,
            f"Role of {user.username} changed from {before or 'none'} to {role} "
            f"by {actor_name(actor)}",
            {"from": before, "to": role},
        )
    return True


def set_active(user: AbstractUser, active: bool, *, actor: AbstractBaseUser | None) -> bool:
    """Deactivate (``active`` False) or reactivate an account. False when it already is so.

    A deactivated user can no longer sign in (their open sessions end at the next request) and
    their API token is deleted: reactivating does not bring an old token back. Refused: an
    admin deactivating themselves; deactivating the last active admin.
    """
    with transaction.atomic():
        user = _locked(user)
        if user.is_active == active:
            return False
        revoked = False
        if not active:
            _refuse_own_account(user, actor, "deactivate")
            if role_of(user) == ADMIN:
                _refuse_last_admin(user, "deactivate")
            revoked = Token.objects.filter(user=user).delete()[0] > 0
        user.is_active = active
        user.save(update_fields=["is_active"])
        verb = "reactivated" if active else "deactivated"
        _record(
            AuditKind.USER_REACTIVATED if active else AuditKind.USER_DEACTIVATED,
            user,
            actor,
            f"User {user.username} {verb} by {actor_name(actor)}"
            + (" (API token revoked)" if revoked else ""),
            {"token_revoked": revoked} if not active else {},
        )
    return True


def issue_token(user: AbstractUser, *, actor: AbstractBaseUser | None) -> str:
    """A new API token for ``user``, replacing any they had (the old one stops working at
    once). Returns the key, to be shown once. Refused for a deactivated account."""
    with transaction.atomic():
        user = _locked(user)
        if not user.is_active:
            raise AccountError(f"{user.username} is deactivated: reactivate the account first.")
        replaced = Token.objects.filter(user=user).delete()[0] > 0
        token = Token.objects.create(user=user)
        _record(
            AuditKind.TOKEN_ISSUED,
            user,
            actor,
            f"API token {'replaced' if replaced else 'issued'} for {user.username} "
            f"by {actor_name(actor)}",
            {"replaced": replaced},
        )
    return token.key


def revoke_token(user: AbstractUser, *, actor: AbstractBaseUser | None) -> bool:
    """Delete ``user``'s API token (requests with it get 401). False when they had none."""
    with transaction.atomic():
        user = _locked(user)
        if Token.objects.filter(user=user).delete()[0] == 0:
            return False
        _record(
            AuditKind.TOKEN_REVOKED,
            user,
            actor,
            f"API token of {user.username} revoked by {actor_name(actor)}",
            {},
        )
    return True


def is_downgrade(user: AbstractUser, role: str) -> bool:
    """True when ``role`` gives ``user`` fewer rights than they hold (the page confirms it)."""
    before = role_of(user)
    return before is not None and role in RANK and RANK[role] < RANK[before]


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise AccountError(
            f"Unknown role {role!r}: choose one of {', '.join(ROLES)}.", field="role"
        )


def _check_username(username: str) -> None:
    user_model = get_user_model()
    if not username:
        raise AccountError("A user name is required.", field="username")
    if len(username) > USERNAME_MAX_LENGTH:
        raise AccountError(
            f"A user name has at most {USERNAME_MAX_LENGTH} characters.", field="username"
        )
    try:
        user_model.username_validator(username)
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages), field="username") from None
    if user_model.objects.filter(username__iexact=username).exists():
        raise AccountError(_taken(username), field="username")


def _checked_email(email: str) -> str:
    """``email`` when empty or a valid address that fits the column."""
    if not email:
        return email
    limit = get_user_model()._meta.get_field("email").max_length
    if limit is not None and len(email) > limit:
        raise AccountError(f"An email address has at most {limit} characters.", field="email")
    try:
        validate_email(email)
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages), field="email") from None
    return email


def _taken(username: str) -> str:
    return f"A user named {username!r} already exists."


def _locked(user: AbstractUser) -> AbstractUser:
    """The user's row again, locked for this transaction, with the admin group's row locked
    first: every change that could remove an admin takes that lock, so the "last active admin"
    count it makes next cannot be overtaken by another such change."""
    Group.objects.select_for_update().filter(name=ADMIN).first()
    return get_user_model().objects.select_for_update().get(pk=user.pk)


def _refuse_own_account(user: AbstractUser, actor: AbstractBaseUser | None, verb: str) -> None:
    if actor is not None and actor.pk == user.pk:
        raise AccountError(f"You cannot {verb} your own account: ask another admin.")


def _refuse_last_admin(user: AbstractUser, verb: str) -> None:
    """Refuse to take the admin role (or the account) from the last active admin."""
    others = (
        get_user_model()
        .objects.filter(Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True)
        .exclude(pk=user.pk)
        .exists()
    )
    if not others:
        raise AccountError(
            f"{user.username} is the last active admin: make another user admin before you "
            f"{verb} this one."
        )


def _set_role(user: AbstractUser, role: str) -> None:
    """Exactly one role group; staff and superuser exactly when the role is admin."""
    user.groups.set([Group.objects.get_or_create(name=role)[0]])
    user.is_staff = user.is_superuser = role == ADMIN
    user.save(update_fields=["is_staff", "is_superuser"])


def _record(
    kind: AuditKind,
    user: AbstractUser,
    actor: AbstractBaseUser | None,
    summary: str,
    data: dict[str, Any],
) -> None:
    """The target is kept by name and id, as text: the event still reads after a rename or a
    delete."""
    record_event(
        kind,
        actor=actor,
        at=timezone.now(),
        object_type="user",
        object_id=user.username,
        summary=summary,
        data={"user": user.username, "user_id": user.pk, **data},
    )
