"""Failed sign-ins are throttled so that guessing is slow and nobody innocent is locked out
(django-axes), wherever a password is checked: the console's sign-in (which the browsable API
sends visitors to), the Django admin's, and ``POST /api/v1/auth/token/``.

Two locks, both counted in the database by axes (``axes.AccessAttempt``: one row per user
name, address and user agent, incremented under a row lock so concurrent failures are all
counted), each for ``SIGNIN_LOCKOUT_MINUTES`` after the last failure:

- **the pair**: ``SIGNIN_FAILURE_LIMIT`` failures of one user name *from one address* lock that
  user name from that address only (axes' lockout parameter ``[username, ip_address]``). The
  same user signing in from anywhere else is not refused, and nobody else from that address;
- **the address**: ``SIGNIN_ADDRESS_FAILURE_LIMIT`` failures from one address, counting at most
  ``SIGNIN_FAILURE_LIMIT`` per user name, lock the address for every user name. So it takes
  failures across many names (ten with the defaults): one person mistyping their own password
  never locks their office's shared address.

There is no lock on a user name alone: five guesses at ``admin`` from anywhere would lock the
real admin out, which is what an attacker wants. So a user who signs in correctly from an
address that has not failed is never refused. A success does not reset the counts (axes would
reset the address's too, letting anyone with one account keep guessing others' passwords).

The address is the client's, not a proxy's: behind the TLS proxy a deployment needs, every
connection comes from the proxy, and counting by it would lock everyone out together.
``SIGNIN_TRUSTED_PROXIES`` lists the proxies' addresses (or networks); a request whose peer is
one of them is counted under the address the proxies appended to ``X-Forwarded-For``
(``client_address``). The API's token throttle counts by the same address.

Single sign-on is not counted here: the provider checks the password (and throttles it); a
refusal by the product is a policy answer, audited as ``signin.refused``, and must not lock out
the provider's other users behind the same address.

This module holds the pieces axes is configured with (settings ``AXES_*``): the backend, the
handler with the address lock, the client address, the user name as stored, the lockout answer;
the audit of lockouts; and the unlock used by ``manage.py unlock_signin`` and the Users page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.base.addresses import valid_address
from scheduler_admin.base.limits import USERNAME_MAX_LENGTH

logger = logging.getLogger(__name__)

#: ``Lockout.kind`` of a user name locked from one address, and of an address locked for all.
PAIR = "pair"
ADDRESS = "address"


def lockout_minutes() -> int:
    return settings.SIGNIN_LOCKOUT_MINUTES


def lockout_message() -> str:
    """What a locked-out person reads (the same whether the user name exists or not)."""
    minutes = lockout_minutes()
    return (
        f"Too many failed sign-ins for this user name from your address, or from your address "
        f"for many user names: signing in from here is blocked for {minutes} "
        f"minute{'s' if minutes != 1 else ''} after the last attempt. Wait, or ask an admin to "
        f"unlock it (Users page, or manage.py unlock_signin)."
    )


class SigninThrottleBackend(AxesStandaloneBackend):
    """axes' check, first in ``AUTHENTICATION_BACKENDS``: a locked-out pair or address is
    refused before any password is compared.

    A call without a request (``Client.login`` in tests, ``manage.py`` commands) is not an HTTP
    sign-in and has no address: it is let through to the next backend instead of raising, as
    axes' own backend would. Every HTTP sign-in of the product passes its request.
    """

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


class SigninAttemptHandler(AxesDatabaseHandler):
    """axes' database handler (``AXES_HANDLER``), which counts and locks the pair (user name,
    address): ``AXES_LOCKOUT_PARAMETERS`` is that pair and ``AXES_FAILURE_LIMIT`` its limit.
    Added here: the address lock (``SIGNIN_ADDRESS_FAILURE_LIMIT``, module docstring), and
    attempts without a user name (single sign-on) are neither counted nor refused."""

    def is_locked(self, request: HttpRequest, credentials: dict | None = None) -> bool:
        if _username_of(request, credentials) is None:
            return False
        return super().is_locked(request, credentials) or _address_locked(request)

    def user_login_failed(
        self, sender: Any, credentials: dict, request: HttpRequest | None = None, **kwargs: Any
    ) -> None:
        if request is None or _username_of(request, credentials) is None:
            return
        super().user_login_failed(sender, credentials, request, **kwargs)
        if not request.axes_locked_out and _address_locked(request):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send(
                "axes",
                request=request,
                username=_username_of(request, credentials),
                ip_address=request.axes_ip_address,
            )


def _username_of(request: HttpRequest, credentials: dict | None) -> str | None:
    return get_client_username(request, credentials)


def _address_locked(request: HttpRequest) -> bool:
    address = getattr(request, "axes_ip_address", None)
    if not address:
        return False
    since = get_cool_off_threshold(request)
    return address_failures(address, since=since) >= settings.SIGNIN_ADDRESS_FAILURE_LIMIT


def address_failures(address: str, *, since: datetime) -> int:
    """The failures from ``address`` since ``since`` that count towards its lock: at most
    ``SIGNIN_FAILURE_LIMIT`` per user name (more of one name are refused attempts of a locked
    pair, or attempts that raced it)."""
    per_name = (
        AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since)
        .values("username")
        .annotate(failures=Sum("failures_since_start"))
        .values_list("failures", flat=True)
    )
    return sum(min(failures, settings.SIGNIN_FAILURE_LIMIT) for failures in per_name)


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
    """Audit ``signin.locked_out`` once per lockout of a pair or an address: axes signals every
    refused attempt while locked, so an event is written only when none was for the same lock
    since the lockout period began."""
    since = timezone.now() - timedelta(minutes=lockout_minutes())
    address = ip_address or "?"
    pair_failures = (
        AccessAttempt.objects.filter(
            username=username, ip_address=ip_address, attempt_time__gte=since
        ).aggregate(n=Sum("failures_since_start"))["n"]
        or 0
    )
    if username is not None and pair_failures >= settings.SIGNIN_FAILURE_LIMIT:
        kind, subject, what = PAIR, username, f"user name {username!r} from {address}"
    else:
        kind, subject, what = ADDRESS, address, f"address {address} (every user name)"
    if AuditEvent.objects.filter(
        kind=AuditKind.SIGNIN_LOCKED_OUT,
        object_id=subject,
        data__locked=kind,
        data__address=ip_address,
        created_at__gte=since,
    ).exists():
        return
    failures = (
        pair_failures
        if kind == PAIR
        else address_failures(address, since=get_cool_off_threshold(request))
    )
    record_event(
        AuditKind.SIGNIN_LOCKED_OUT,
        actor=None,
        at=timezone.now(),
        object_type="signin",
        object_id=subject or "",
        summary=f"Sign-in locked for {what} after {failures} failed attempts "
        f"(last: user name {username!r} from {address} at {request.path})",
        data={
            "locked": kind,
            "username": username if kind == PAIR else None,
            "address": ip_address,
            "last_username": username,
            "failures": failures,
            "path": request.path,
            "minutes": lockout_minutes(),
        },
    )
    logger.warning("sign-in locked out: %s", what)


# --- Current lockouts and unlocking -------------------------------------------------------------


@dataclass(frozen=True)
class Lockout:
    """A lock in force: a user name from one address (``kind`` ``pair``), or an address for
    every user name (``address``, ``username`` None). ``until`` is when it ends by itself (the
    lockout period after the last failure)."""

    kind: str
    username: str | None
    address: str
    failures: int
    until: datetime

    @property
    def words(self) -> str:
        if self.kind == PAIR:
            return f"user name {self.username!r} from {self.address}"
        return f"address {self.address} (every user name)"

    def as_data(self) -> dict[str, Any]:
        return {
            "locked": self.kind,
            "username": self.username,
            "address": self.address,
            "failures": self.failures,
            "until": self.until.isoformat(),
        }


def current_lockouts() -> list[Lockout]:
    """Every lock in force now: pairs by user name, then addresses. One query: the failures
    of the lockout period by (address, user name)."""
    period = timedelta(minutes=lockout_minutes())
    limit = settings.SIGNIN_FAILURE_LIMIT
    rows = (
        AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - period)
        .values("ip_address", "username")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .order_by("username", "ip_address")
    )
    pairs: list[Lockout] = []
    by_address: dict[str, tuple[int, datetime]] = {}
    for row in rows:
        address, failures, last = row["ip_address"], row["failures"], row["last"]
        if row["username"] is not None and failures >= limit:
            pairs.append(Lockout(PAIR, row["username"], address, failures, last + period))
        counted, latest = by_address.get(address, (0, last))
        by_address[address] = (counted + min(failures, limit), max(latest, last))
    addresses = [
        Lockout(ADDRESS, None, address, counted, last + period)
        for address, (counted, last) in sorted(by_address.items())
        if counted >= settings.SIGNIN_ADDRESS_FAILURE_LIMIT
    ]
    return pairs + addresses


@dataclass(frozen=True)
class Unlocked:
    """What an unlock did: the locks in force it lifted, and how many failure counters it
    forgot (locked or not)."""

    lifted: list[Lockout]
    counters_removed: int


def unlock(
    *, username: str | None = None, address: str | None = None, actor: AbstractBaseUser | None
) -> Unlocked:
    """Forget the failures of ``username`` (from every address), of ``address`` (for every
    user name), of the pair when both are given, or of everyone when neither is, so they may
    sign in again at once. Audited ``signin.unlocked`` with the locks it lifted, when it removed
    anything. ``ValueError`` when ``address`` is not an address (nothing is changed)."""
    if address is not None and not valid_address(address):
        raise ValueError(f"{address!r} is not an IP address.")
    with transaction.atomic():
        before = current_lockouts()
        doomed = AccessAttempt.objects.all()
        if username is not None:
            doomed = doomed.filter(username=username)
        if address is not None:
            doomed = doomed.filter(ip_address=address)
        removed = doomed.delete()[0]
        remaining = {_key(lockout) for lockout in current_lockouts()}
        lifted = [lockout for lockout in before if _key(lockout) not in remaining]
        if removed:
            _record_unlock(username, address, actor, lifted, removed)
    return Unlocked(lifted, removed)


def _key(lockout: Lockout) -> tuple[str, str | None, str]:
    return (lockout.kind, lockout.username, lockout.address)


def _record_unlock(
    username: str | None,
    address: str | None,
    actor: AbstractBaseUser | None,
    lifted: list[Lockout],
    removed: int,
) -> None:
    asked = " from ".join(
        part
        for part in (
            f"user name {username!r}" if username is not None else "",
            f"address {address}" if address is not None else "",
        )
        if part
    )
    outcome = (
        "lifted the lock"
        + ("s" if len(lifted) > 1 else "")
        + " of "
        + "; ".join(lockout.words for lockout in lifted)
        if lifted
        else "no lock was in force"
    )
    record_event(
        AuditKind.SIGNIN_UNLOCKED,
        actor=actor,
        at=timezone.now(),
        object_type="signin",
        object_id=username or address or "*",
        summary=f"Sign-in unlocked for {asked or 'everyone'} by {actor_name(actor)}: "
        f"{outcome} ({removed} failure counter{'s' if removed != 1 else ''} forgotten)",
        data={
            "username": username,
            "address": address,
            "lifted": [lockout.as_data() for lockout in lifted],
            "counters_removed": removed,
        },
    )
