"""Single sign-on through OpenID Connect (issue 16, part "auth"), on when ``OIDC_RP_CLIENT_ID``
is set (settings "optional single sign-on").

mozilla-django-oidc runs the authorization-code flow (with PKCE): ``/oidc/authenticate/`` sends
the browser to the provider, ``/oidc/callback/`` takes the code back, exchanges it for tokens and
checks the ID token's signature against the provider's keys (JWKS) and its nonce. This module
adds what the product needs on top:

- the ID token's issuer must be ``OIDC_OP_ISSUER`` and its audience our client id (mozilla
  checks neither); the user info must be about the same subject;
- the role comes from the groups claim (``OIDC_GROUPS_CLAIM``) through ``OIDC_ROLE_GROUPS``, and
  queue grants through ``OIDC_GRANT_GROUPS``, at every sign-in: a person moved to another group
  at the provider has the new role and grants at their next sign-in (grants their groups no
  longer give are revoked; grants an admin gave stay), and one whose groups map to neither a
  role nor a grant is refused with a message saying so (and loses what single sign-on gave).
  A person whose groups give grants only is a tenant account: no global role, their subtrees;
- accounts are linked to the provider's (issuer, subject), created at the first sign-in with the
  ``preferred_username`` (``OIDC_USERNAME_CLAIM``) and no usable password; an existing local
  account with that name is never taken over, and a deactivated account stays out.

Every creation, role change, grant change and refusal is audited (``user.created``,
``user.role_changed``, ``grant.*``, ``signin.refused``).
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db import IntegrityError, transaction
from django.urls import path
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from scheduler_admin.accounts import grants, permissions, services
from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.identities import OidcIdentity
from scheduler_admin.accounts.oidc_config import grants_for, role_for
from scheduler_admin.accounts.roles import ROLES, role_of
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event
from scheduler_admin.base.limits import USERNAME_MAX_LENGTH

logger = logging.getLogger(__name__)


class SignInRefused(Exception):
    """The provider vouched for the person, but the product does not let them in (why: the
    message, shown on the sign-in page)."""


class RoleMappingOIDCBackend(OIDCAuthenticationBackend):
    """mozilla's backend, with the issuer and audience checked and accounts linked by subject
    and given the role their groups map to (module docstring)."""

    def authenticate(self, request: Any, **kwargs: Any) -> AbstractUser | None:
        """mozilla's flow; an answer of the provider that fails a check (signature, nonce,
        issuer, audience) or an unreachable provider is a refused sign-in with a message on the
        sign-in page, audited, not an error page."""
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, requests.RequestException) as exc:
            provider = settings.OIDC_PROVIDER_NAME
            logger.warning("sign-in with %s failed: %s", provider, exc)
            record_event(
                AuditKind.SIGNIN_REFUSED,
                actor=None,
                at=timezone.now(),
                object_type="signin",
                object_id="?",
                summary=f"Sign-in with {provider} refused: its answer failed a check ({exc})",
                data={"reason": str(exc)[:500]},
            )
            if request is not None:
                messages.error(
                    request,
                    f"Signing in with {provider} failed: its answer could not be verified. "
                    f"Ask an admin to check the single sign-on settings.",
                )
            return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload = super().verify_token(token, **kwargs)
        if payload.get("iss") != settings.OIDC_OP_ISSUER:
            raise SuspiciousOperation(f"ID token issuer {payload.get('iss')!r} is not ours")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token was not issued to this client")
        return payload

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> AbstractUser | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        if claims.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("user info is about another subject than the ID token")
        # Groups may come in the user info or only in the ID token, depending on the provider.
        groups = claims.get(settings.OIDC_GROUPS_CLAIM, payload.get(settings.OIDC_GROUPS_CLAIM))
        try:
            return sign_in_identity(
                issuer=payload["iss"],
                subject=str(payload["sub"]),
                username=str(claims.get(settings.OIDC_USERNAME_CLAIM) or ""),
                email=str(claims.get("email") or ""),
                groups=[str(g) for g in groups] if isinstance(groups, list) else [],
            )
        except SignInRefused as refused:
            messages.error(self.request, str(refused))
            return None


NO_ROLE = "no group mapped to a role or a queue grant"


def sign_in_identity(
    *, issuer: str, subject: str, username: str, email: str, groups: list[str]
) -> AbstractUser:
    """The account the provider's (issuer, subject) signs in to, created or updated: its role
    and its single sign-on grants from ``groups``. Raises ``SignInRefused`` (audited) when it
    may not sign in: no group maps to a role or to a grant on a queue that exists."""
    role = role_for(groups, settings.OIDC_ROLE_BY_GROUP)
    wanted = grants.existing_grants(grants_for(groups, settings.OIDC_GRANTS_BY_GROUP))
    has_access = role is not None or bool(wanted)
    now = timezone.now()
    refusal: str | None = None
    user: AbstractUser | None = None
    with transaction.atomic():
        identity = (
            OidcIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:
            refusal = NO_ROLE if not has_access else _username_problem(username)
            if refusal is None:
                user = _create(username, email, issuer, subject, now, role, wanted)
                if user is None:
                    refusal = "the account was being created at the same time: try again"
        else:
            user = identity.user
            if not user.is_active:
                refusal = "the account is deactivated"
            elif not has_access:
                _take_role_away(user)  # committed: the refusal below does not undo it
                refusal = NO_ROLE
            else:
                identity.last_sign_in_at = now
                identity.save(update_fields=["last_sign_in_at"])
                if email and user.email != email:
                    user.email = email
                    user.save(update_fields=["email"])
    via = f"at the sign-in of {user.get_username() if user else username} with " + (
        settings.OIDC_PROVIDER_NAME
    )
    if refusal is not None:
        if refusal == NO_ROLE and user is not None:
            grants.sync_single_sign_on_grants(user, [], via=via)
        name = user.get_username() if user is not None else (username or subject)
        _refuse(name, subject, groups, refusal)
    if user is None or not has_access:  # every path above set both or refused
        raise RuntimeError("single sign-on reached no account and no refusal")
    if role_of(user) != role:
        try:
            services.change_role(user, role, actor=None)
        except services.AccountError as exc:  # the last active admin keeps the role
            logger.warning("%s keeps the role %s: %s", user.get_username(), role_of(user), exc)
    grants.sync_single_sign_on_grants(user, wanted, via=via)
    permissions.forget(user)
    logger.info(
        "%s signed in with %s as %s, grants %s",
        user.get_username(),
        settings.OIDC_PROVIDER_NAME,
        role or "no global role",
        ", ".join(str(spec) for spec in wanted) or "none",
    )
    return user


def _username_problem(username: str) -> str | None:
    """Why an account cannot be made with this name, or None."""
    user_model = get_user_model()
    if not username:
        return f"the provider sent no {settings.OIDC_USERNAME_CLAIM}"
    if len(username) > USERNAME_MAX_LENGTH:
        return f"the user name is longer than {USERNAME_MAX_LENGTH} characters"
    try:
        user_model.username_validator(username)
    except ValidationError:
        return f"{username!r} is not a valid user name here"
    if services.username_taken(username):
        return f"an account named {username!r} exists here and is not linked to the provider"
    return None


def _create(
    username: str,
    email: str,
    issuer: str,
    subject: str,
    now: Any,
    role: str | None,
    wanted: list[GrantSpec],
) -> AbstractUser | None:
    """A new account for the identity, with no usable password (the role and grants are given
    next); audited. None when the name (in any letter case: the database's unique index) or the
    identity was created at the same moment."""
    user = get_user_model()(username=username, email=email)
    user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
            OidcIdentity.objects.create(
                user=user, issuer=issuer, subject=subject, created_at=now, last_sign_in_at=now
            )
    except IntegrityError:
        return None
    holds = f"the {role} role" if role is not None else "no global role"
    if wanted:
        holds += " and the queue grants " + ", ".join(spec.words for spec in wanted)
    record_event(
        AuditKind.USER_CREATED,
        actor=None,
        at=now,
        object_type="user",
        object_id=username,
        summary=f"User {username} created at their first sign-in with "
        f"{settings.OIDC_PROVIDER_NAME}, with {holds} from their groups there",
        data={
            "user": username,
            "user_id": user.pk,
            "source": "oidc",
            "subject": subject,
            "role": role,
            "grants": [str(spec) for spec in wanted],
        },
    )
    return user


def _take_role_away(user: AbstractUser) -> None:
    """The provider no longer puts them in a mapped group: no role until it does again."""
    before = role_of(user)
    if before is None:
        return
    user.groups.remove(*[group for group in user.groups.all() if group.name in ROLES])
    user.is_staff = user.is_superuser = False
    user.save(update_fields=["is_staff", "is_superuser"])
    record_event(
        AuditKind.USER_ROLE_CHANGED,
        actor=None,
        at=timezone.now(),
        object_type="user",
        object_id=user.get_username(),
        summary=f"Role of {user.get_username()} changed from {before} to none: their groups at "
        f"{settings.OIDC_PROVIDER_NAME} map to no role or grant",
        data={"user": user.get_username(), "from": before, "to": None, "source": "oidc"},
    )


def _refuse(name: str, subject: str, groups: list[str], why: str) -> None:
    """Audit ``signin.refused`` and raise with the message the person reads."""
    provider = settings.OIDC_PROVIDER_NAME
    record_event(
        AuditKind.SIGNIN_REFUSED,
        actor=None,
        at=timezone.now(),
        object_type="signin",
        object_id=name,
        summary=f"Sign-in of {name!r} with {provider} refused: {why}",
        data={"username": name, "subject": subject, "groups": groups, "reason": why},
    )
    if why == NO_ROLE:
        message = (
            f"You signed in at {provider}, but none of your groups there gives a role or a "
            f"queue grant in Scheduler Admin, so you have no access. Ask an admin to map one "
            f"of your groups to a role (OIDC_ROLE_GROUPS) or to queue grants "
            f"(OIDC_GRANT_GROUPS), or to put you in a mapped group."
        )
    else:
        message = f"Signing in with {provider} was refused: {why}. Ask an admin."
    raise SignInRefused(message)


# --- URLs ---------------------------------------------------------------------------------------
# Included by scheduler_admin/urls.py when OIDC is configured. Both views are reached before
# signing in, so they are exempt from LoginRequiredMiddleware.
urlpatterns = [
    path(
        "authenticate/",
        login_not_required(OIDCAuthenticationRequestView.as_view()),
        name="oidc_authentication_init",
    ),
    path(
        "callback/",
        login_not_required(OIDCAuthenticationCallbackView.as_view()),
        name="oidc_authentication_callback",
    ),
]
