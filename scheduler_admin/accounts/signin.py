"""Failed sign-ins are throttled per user and per address (django-axes), wherever a password is
checked: the console's sign-in (which the browsable API sends visitors to), the Django admin's,
and ``POST /api/v1/auth/token/``.

How it works: axes counts failures in the database (``axes.AccessAttempt``, one row per user
name, address and user agent, incremented under a row lock so concurrent failures are all
counted). Once the failures of one user name (from any address) or of one address (for any user
name) reach ``SIGNIN_FAILURE_LIMIT`` within ``SIGNIN_LOCKOUT_MINUTES``, sign-in is refused for
that user name or address, right password or not, until the period has passed since the last
failure or an admin unlocks it. A success does not reset the count: axes would reset the
address's failures too, letting anyone with one account guess others' passwords from there.

This module holds the pieces axes is configured with (settings ``AXES_*``): the backend, the
client address, the user name as stored, the lockout answer; the audit of lockouts; and the
unlock used by ``manage.py unlock_signin`` and the Users page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.limits import USERNAME_MAX_LENGTH

logger = logging.getLogger(__name__)


def lockout_minutes() -> int:
    return settings.SIGNIN_LOCKOUT_MINUTES


def lockout_message() -> str:
    """What a locked-out person reads (the same whether the user name exists or not)."""
    minutes = lockout_minutes()
    return (
        f"Too many failed sign-ins for this user name or from your address: signing in is "
        f"blocked for {minutes} minute{'s' if minutes != 1 else ''} after the last attempt. "
        f"Wait, or ask an admin to unlock it (Users page, or manage.py unlock_signin)."
    )


class SigninThrottleBackend(AxesStandaloneBackend):
    """axes' check, first in ``AUTHENTICATION_BACKENDS``: a locked-out user name or address is
    refused before any password is compared.

    A call without a request (``Client.login`` in tests, ``manage.py`` commands) is not an HTTP
    sign-in and has no address: it is let through to the next backend instead of raising, as
    axes' own backend would. Every HTTP sign-in of the product passes its request.
    """

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def client_address(request: HttpRequest) -> str | None:
    """The address failures are counted under: ``REMOTE_ADDR``, or with
    ``SIGNIN_TRUSTED_PROXIES`` = N > 0 the N-th address from the right of ``X-Forwarded-For``
    (what the nearest trusted proxy saw). Never the left-most entry: a client writes that."""
    proxies = settings.SIGNIN_TRUSTED_PROXIES
    if proxies:
        forwarded = [
            part.strip()
            for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")


def client_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The user name failures are counted under: as typed, cut to the longest user name (the
    forms refuse longer ones first; this keeps axes' column safe whatever calls it)."""
    if credentials is not None:
        name = credentials.get("username")
    else:
        name = getattr(request, "POST", {}).get("username")
    if not isinstance(name, str):
        return None
    return name.replace("\x00", "")[:USERNAME_MAX_LENGTH]


def lockout_response(
    request: HttpRequest, original: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """429 with the message: the API's error body under ``/api/``, the sign-in page (with the
    message in place of the form's errors) elsewhere."""
    message = lockout_message()
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {"detail": message, "code": "signin_locked", "errors": {}}, status=429
        )
    else:
        context = {"locked_out": message, "next": request.POST.get("next", "")}
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(lockout_minutes() * 60)
    return response


# --- Audit --------------------------------------------------------------------------------------


def on_locked_out(
    sender: Any, request: HttpRequest, username: str | None, ip_address: str | None, **_: Any
) -> None:
    """Audit ``signin.locked_out`` once per lockout of a user name or an address: axes signals
    every refused attempt while locked, so an event is written only when none was for the same
    user name (or address) since the lockout period began."""
    since = timezone.now() - timedelta(minutes=lockout_minutes())
    user_failures = (
        AccessAttempt.objects.filter(username=username).aggregate(n=Sum("failures_since_start"))[
            "n"
        ]
        if username
        else 0
    )
    kind, subject = (
        ("user", username)
        if username and (user_failures or 0) >= settings.SIGNIN_FAILURE_LIMIT
        else ("address", ip_address or "?")
    )
    if AuditEvent.objects.filter(
        kind=AuditKind.SIGNIN_LOCKED_OUT,
        object_id=subject,
        data__locked=kind,
        created_at__gte=since,
    ).exists():
        return
    failures = getattr(request, "axes_failures_since_start", None)
    what = f"user name {username!r}" if kind == "user" else f"address {ip_address}"
    record_event(
        AuditKind.SIGNIN_LOCKED_OUT,
        actor=None,
        at=timezone.now(),
        object_type="signin",
        object_id=subject or "",
        summary=f"Sign-in locked for {what} after {failures or 'repeated'} failed attempts "
        f"(last: user name {username!r} from {ip_address} at {request.path})",
        data={
            "locked": kind,
            "username": username,
            "address": ip_address,
            "failures": failures,
            "path": request.path,
            "minutes": lockout_minutes(),
        },
    )
    logger.warning("sign-in locked out: %s (user name %r, address %s)", what, username, ip_address)


# --- Current lockouts and unlocking -------------------------------------------------------------


@dataclass(frozen=True)
class Lockout:
    """A user name or an address whose failures reached the limit; ``until`` is when it ends
    by itself (the lockout period after the last failure)."""

    kind: str  # "user" or "address"
    value: str
    failures: int
    until: datetime


def current_lockouts() -> list[Lockout]:
    """Every user name and address locked out now, user names first."""
    limit = settings.SIGNIN_FAILURE_LIMIT
    period = timedelta(minutes=lockout_minutes())
    recent = AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - period)
    found = []
    for kind, field in (("user", "username"), ("address", "ip_address")):
        rows = (
            recent.exclude(**{f"{field}__isnull": True})
            .values(field)
            .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
            .filter(failures__gte=limit)
            .order_by(field)
        )
        found += [Lockout(kind, row[field], row["failures"], row["last"] + period) for row in rows]
    return found


def unlock(
    *, username: str | None = None, address: str | None = None, actor: AbstractBaseUser | None
) -> int:
    """Forget the failures of ``username`` and/or ``address`` (both None: of everyone), so they
    may sign in again at once. Returns how many counters were removed; audited when any was."""
    removed = AxesProxyHandler.reset_attempts(username=username, ip_address=address)
    if removed:
        what = " and ".join(
            part
            for part in (
                f"user name {username!r}" if username is not None else "",
                f"address {address}" if address is not None else "",
            )
            if part
        )
        record_event(
            AuditKind.SIGNIN_UNLOCKED,
            actor=actor,
            at=timezone.now(),
            object_type="signin",
            object_id=username or address or "*",
            summary=f"Sign-in unlocked for {what or 'everyone'} by {actor_name(actor)}",
            data={"username": username, "address": address, "counters_removed": removed},
        )
    return removed
