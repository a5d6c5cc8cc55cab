"""Managing console users: create, change role, deactivate, reactivate, issue and revoke API
tokens (several per user, each named, stored hashed: ``accounts.tokens``). The only code that
writes users; ``manage.py create_user`` and the Users page both call it, so their rules and
audit events are the same.

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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import AbstractBaseUser, AbstractUser, Group
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Prefetch, Q, QuerySet, Value
from django.db.models.functions import Lower
from django.utils import timezone

from preemption.config import text_problem
from scheduler_admin.accounts import tokens
from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.grants import GrantError, give_grant
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.accounts.roles import ADMIN, ROLES, role_of
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.base.errors import Invalid
from scheduler_admin.base.limits import USERNAME_MAX_LENGTH

#: Lower number, fewer rights: a change to a lower rank is a downgrade (asks for confirmation).
RANK = {role: rank for rank, role in enumerate(ROLES)}


class AccountError(Invalid):
    """A refused account change. ``field`` names the input at fault (``username``, ``role``,
    ``password``, ``email``), or is empty when the change itself is refused (lock-out rules)."""


@dataclass(frozen=True)
class CreatedUser:
    """A new account and its password, when generated (to be shown once, then forgotten)."""

    user: AbstractUser
    generated_password: str | None


def users() -> QuerySet[AbstractUser]:
    """Every account, with what the Users page shows (roles, own queue grants and tokens)
    fetched up front."""
    own_grants = QueueGrant.objects.select_related("partition", "queue").order_by(
        "partition__name", "queue__path"
    )
    return (
        get_user_model()
        .objects.order_by("username")
        .prefetch_related(
            "groups",
            Prefetch("api_tokens", ApiToken.objects.order_by("name")),
            Prefetch("queue_grants", own_grants),
        )
    )


def tokens_of(user: AbstractUser) -> list[ApiToken]:
    """The user's API tokens by name (never their keys: those are not stored)."""
    return list(ApiToken.objects.filter(user=user).order_by("name"))


def generate_password() -> str:
    """16 URL-safe characters (96 random bits): passes every configured password validator."""
    return secrets.token_urlsafe(12)


def create_user(
    username: str,
    *,
    role: str | None,
    actor: AbstractBaseUser | None,
    email: str = "",
    password: str | None = None,
    grants: Sequence[GrantSpec] = (),
) -> CreatedUser:
    """Create an active account holding ``role`` and/or the queue ``grants``.

    ``role`` None makes a tenant account: no global role, only the subtrees of its grants
    (``accounts.permissions``), so it needs at least one grant. Steps: check the name (Django's
    username rules, not taken in any letter case), the role, the email and the password (the
    configured validators; none given: one is generated); then in one transaction create the
    account with its role, audit ``user.created``, and give each grant (``grants.give_grant``,
    each audited ``grant.created``). A grant that cannot be given (no such partition or queue)
    undoes it all: no account without the grants asked for.

    Two requests creating names that differ only in letter case at the same moment: the
    database's unique index on the lower-cased name (migration
    ``0005_username_unique_regardless_of_case``) refuses the second insert, reported as the
    name being taken.
    """
    username = username.strip()
    if role is not None:
        _check_role(role)
    elif not grants:
        raise AccountError(
            "Give a role, or at least one queue grant: an account with neither can do nothing.",
            field="role",
        )
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
    given = ", ".join(spec.words for spec in grants)
    what = f"the {role} role" if role is not None else "no global role"
    try:
        with transaction.atomic():
            user.save()
            if role is not None:
                _set_role(user, role)
            _record(
                AuditKind.USER_CREATED,
                user,
                actor,
                f"User {username} created with {what}"
                + (f" and the queue grants {given}" if given else "")
                + f" by {actor_name(actor)}",
                {
                    "role": role,
                    "email": email,
                    "password_generated": generated is not None,
                    "grants": [str(spec) for spec in grants],
                },
            )
            for spec in grants:
                _give(user, spec, actor)
    except IntegrityError:
        if username_taken(username):  # created meanwhile: the unique index refused this one
            raise AccountError(_taken(username), field="username") from None
        raise
    return CreatedUser(user, generated)


def _give(user: AbstractUser, spec: GrantSpec, actor: AbstractBaseUser | None) -> None:
    """One grant of a new account; a refusal names the grant asked for (field ``grants``)."""
    try:
        give_grant(
            partition=spec.partition, queue_path=spec.queue, role=spec.role,
            user=user.get_username(), actor=actor,
        )  # fmt: skip
    except GrantError as exc:
        raise AccountError(f"Queue grant {spec}: {exc}", field="grants") from None


def change_role(user: AbstractUser, role: str | None, *, actor: AbstractBaseUser | None) -> bool:
    """Give ``user`` exactly ``role`` (None: no global role, their queue grants only). False
    (nothing written) when they hold it already.

    Refused: an unknown role; an admin demoting themselves; demoting the last active admin.
    """
    if role is not None:
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
            f"Role of {user.username} changed from {before or 'none'} to {role or 'none'} "
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
            revoked = ApiToken.objects.filter(user=user).delete()[0] > 0
        user.is_active = active
        user.save(update_fields=["is_active"])
        verb = "reactivated" if active else "deactivated"
        _record(
            AuditKind.USER_REACTIVATED if active else AuditKind.USER_DEACTIVATED,
            user,
            actor,
            f"User {user.username} {verb} by {actor_name(actor)}"
            + (" (API tokens revoked)" if revoked else ""),
            {"token_revoked": revoked} if not active else {},
        )
    return True


def set_email(user: AbstractUser, email: str, *, actor: AbstractBaseUser | None) -> bool:
    """Set an account's e-mail address, or clear it with ``""``: where the e-mail notifications
    it subscribes to go. The caller decides who may (the user themselves, or an admin). Audited
    ``user.email_changed`` with both addresses. False when it was already so."""
    email = _checked_email(email.strip())
    with transaction.atomic():
        user = _locked(user)
        if user.email == email:
            return False
        old, user.email = user.email, email
        user.save(update_fields=["email"])
        _record(
            AuditKind.USER_EMAIL_CHANGED,
            user,
            actor,
            f"E-mail address of {user.username} "
            + (f"set to {email}" if email else "cleared")
            + f" by {actor_name(actor)}",
            {"old": old, "new": email},
        )
    return True


def change_password(
    user: AbstractUser, *, old_password: str, new_password: str, actor: AbstractBaseUser | None
) -> None:
    """The user changes their own password: the current one must be given, the new one pass
    the configured validators. Audited ``user.password_changed`` (never the password). Their
    other sessions end (Django ties a session to the password); the caller keeps the current
    one (``update_session_auth_hash``). Refused for an account that signs in with single sign-on
    only (no usable password: the provider keeps it)."""
    with transaction.atomic():
        user = _locked(user)
        if not user.has_usable_password():
            raise AccountError(
                "You sign in with single sign-on: your password is kept by your provider.",
                field="old_password",
            )
        if not user.check_password(old_password):
            raise AccountError("That is not your current password.", field="old_password")
        _set_password(user, new_password)
        _record(
            AuditKind.USER_PASSWORD_CHANGED,
            user,
            actor,
            f"Password of {user.username} changed by {actor_name(actor)}",
            {"reset": False},
        )


def reset_password(user: AbstractUser, *, actor: AbstractBaseUser | None) -> str:
    """An admin gives ``user`` a new generated password, returned to be shown once; their
    sessions end. Audited ``user.password_changed`` (``reset``). Refused: the admin's own
    account (change it with the current one instead), an account that signs in with single
    sign-on only (a password would open a second way in)."""
    if actor is not None and actor.pk == user.pk:
        raise AccountError(
            "Change your own password on your Password page: it asks for the current one."
        )
    with transaction.atomic():
        user = _locked(user)
        if not user.has_usable_password():
            raise AccountError(
                f"{user.username} signs in with single sign-on: their password is kept by the "
                "provider."
            )
        password = generate_password()
        _set_password(user, password)
        _record(
            AuditKind.USER_PASSWORD_CHANGED,
            user,
            actor,
            f"Password of {user.username} reset by {actor_name(actor)} (a new one generated)",
            {"reset": True},
        )
    return password


def set_password_at_the_server(user: AbstractUser, new_password: str) -> None:
    """Someone with a shell on the server sets ``user``'s password (``manage.py changepassword``,
    which replaces Django's own so that no password changes unaudited). Nobody is signed in, so
    the actor is ``system``; the new password must pass the validators. The user's sessions end.
    Audited ``user.password_changed`` with ``data.at_the_server``. Refused for a single sign-on
    account (a password would open a second way in)."""
    with transaction.atomic():
        user = _locked(user)
        if not user.has_usable_password():
            raise AccountError(
                f"{user.username} signs in with single sign-on: their password is kept by the "
                "provider."
            )
        _set_password(user, new_password)
        _record(
            AuditKind.USER_PASSWORD_CHANGED,
            user,
            None,
            f"Password of {user.username} set at the server (manage.py changepassword)",
            {"reset": True, "at_the_server": True},
        )


def _set_password(user: AbstractUser, password: str) -> None:
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages), field="new_password") from None
    user.set_password(password)
    user.save(update_fields=["password"])


def issue_token(
    user: AbstractUser,
    *,
    actor: AbstractBaseUser | None,
    name: str = tokens.DEFAULT_NAME,
    expires_at: datetime | None = None,
    no_expiry: bool = False,
) -> str:
    """A new API token named ``name`` for ``user``; a token of theirs with the same name is
    replaced (it stops working at once). Returns the key, to be shown once: only its digest is
    stored.

    ``expires_at`` None means the default expiry (``API_TOKEN_EXPIRY_DAYS``; 0: none);
    ``no_expiry`` asks for a token that never expires. Refused: a deactivated account, an empty
    or too long name, an expiry in the past.
    """
    name = _checked_token_name(name)
    now = timezone.now()
    if no_expiry:
        expires_at = None
    elif expires_at is None:
        expires_at = tokens.default_expiry(now)
    elif expires_at <= now:
        raise AccountError("The expiry must be in the future.", field="expires_at")
    with transaction.atomic():
        user = _locked(user)
        if not user.is_active:
            raise AccountError(f"{user.username} is deactivated: reactivate the account first.")
        replaced = ApiToken.objects.filter(user=user, name=name).delete()[0] > 0
        token, key = tokens.create_token(user, name=name, expires_at=expires_at, now=now)
        expiry = f"expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "no expiry"
        _record(
            AuditKind.TOKEN_ISSUED,
            user,
            actor,
            f"API token {name!r} ({token.prefix}…, {expiry}) "
            f"{'replaced' if replaced else 'issued'} for {user.username} by {actor_name(actor)}",
            {
                "replaced": replaced,
                "token": name,
                "prefix": token.prefix,
                "expires_at": expires_at.isoformat() if expires_at else None,
            },
        )
    return key


def revoke_token(
    user: AbstractUser, *, actor: AbstractBaseUser | None, token_id: int | None = None
) -> bool:
    """Delete one of ``user``'s API tokens (``token_id``), or all of them (None): requests with
    them get 401. False when there was nothing to delete."""
    with transaction.atomic():
        user = _locked(user)
        doomed = ApiToken.objects.filter(user=user)
        if token_id is not None:
            doomed = doomed.filter(pk=token_id)
        gone = list(doomed.order_by("name").values_list("name", "prefix"))
        if not gone:
            return False
        doomed.delete()
        names = ", ".join(f"{name!r} ({prefix}…)" for name, prefix in gone)
        _record(
            AuditKind.TOKEN_REVOKED,
            user,
            actor,
            f"API token{'s' if len(gone) > 1 else ''} {names} of {user.username} revoked by "
            f"{actor_name(actor)}",
            {"tokens": [{"token": name, "prefix": prefix} for name, prefix in gone]},
        )
    return True


def is_downgrade(user: AbstractUser, role: str | None) -> bool:
    """True when ``role`` (None: no global role) gives ``user`` fewer rights than they hold
    (the page confirms it)."""
    before = role_of(user)
    if before is None:
        return False
    return role is None or (role in RANK and RANK[role] < RANK[before])


def existing_user(username: str) -> AbstractUser | None:
    """The account with this name in any letter case, compared as the database's unique index
    compares them (``LOWER``), or None."""
    return (
        get_user_model()
        .objects.alias(folded=Lower("username"))
        .filter(folded=Lower(Value(username.strip())))
        .first()
    )


def username_taken(username: str) -> bool:
    return existing_user(username) is not None


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
    if username_taken(username):
        raise AccountError(_taken(username), field="username")


def _checked_token_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise AccountError("A token needs a name (the script or agent using it).", field="name")
    if len(name) > tokens.NAME_MAX_LENGTH:
        raise AccountError(
            f"A token name has at most {tokens.NAME_MAX_LENGTH} characters.", field="name"
        )
    problem = text_problem(name)
    if problem:
        raise AccountError(f"A token name {problem}.", field="name")
    return name


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


def _set_role(user: AbstractUser, role: str | None) -> None:
    """Exactly one role group (none for None), the user's tenant groups kept; staff and
    superuser exactly when the role is admin."""
    tenant = [group for group in user.groups.all() if group.name not in ROLES]
    role_groups = [Group.objects.get_or_create(name=role)[0]] if role is not None else []
    user.groups.set([*tenant, *role_groups])
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
