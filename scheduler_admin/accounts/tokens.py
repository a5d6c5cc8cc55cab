"""API tokens: named, several per user, stored hashed, with an optional expiry and the time of
their last use.

Why our own model rather than DRF's ``authtoken`` (one clear-text key per user) or
django-rest-knox: knox hashes and expires tokens but has no name and no last-used time, and its
custom-model hook would bring back most of this module anyway (README "Dependencies").

- The key is 256 random bits (``secrets.token_urlsafe(32)``) after the ``sa_`` prefix, shown
  once when issued. Only its SHA-256 digest is stored (a unique index: lookup is one indexed
  query). A slow password hash is not needed: nobody can guess a 256-bit key, and a stolen
  table of digests gives nothing to replay.
- ``prefix`` (the first characters of the key, never enough to use it) lets an owner tell their
  tokens apart in lists and logs.
- ``last_used_at`` is written at most once per ``LAST_USED_RESOLUTION`` per token, by one
  conditional ``UPDATE``, so a token sending thousands of requests a minute costs one write a
  minute, and concurrent requests in the same minute write once between them.
- Keys of DRF's ``authtoken`` table (40 hex characters) were hashed into this table by migration
  ``accounts.0002_api_tokens`` and keep working until they are revoked.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

#: Where ``ApiTokenAuthentication`` notes on the request's user which API token it came with, so
#: the write's own check can find the token again (``permissions.recheck_identity``).
API_TOKEN_ATTRIBUTE = "_api_token_id"  # noqa: S105 - an attribute name, not a secret

#: New keys start with this, so a leaked key is recognisable (secret scanners, logs).
KEY_PREFIX = "sa_"
#: Characters of a key kept in clear to tell tokens apart: ``sa_`` and 6 of its 43 random ones.
PREFIX_LENGTH = 9
#: The most characters a token name has.
NAME_MAX_LENGTH = 100
#: The name used when none is given (the Users page's and the command's default).
DEFAULT_NAME = "default"
#: ``last_used_at`` is at most this old (a cheap "last used", not a request log).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest_of(key: str) -> str:
    """The stored form of a key: SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh key: ``sa_`` and 43 URL-safe characters (256 random bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def default_expiry(now: datetime | None = None) -> datetime | None:
    """When a token issued now expires unless told otherwise (``API_TOKEN_EXPIRY_DAYS``; 0:
    never)."""
    days = settings.API_TOKEN_EXPIRY_DAYS
    if days == 0:
        return None
    return (now or timezone.now()) + timedelta(days=days)


class ApiToken(models.Model):
    """One API token of one user. The key itself is never stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    prefix = models.CharField(max_length=PREFIX_LENGTH)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="api_token_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


def create_token(
    user: object, *, name: str, expires_at: datetime | None, now: datetime | None = None
) -> tuple[ApiToken, str]:
    """Store a new token of ``user`` (its digest) and return it with its key: the storage step
    only. Product code calls ``accounts.services.issue_token``, which checks the name and the
    account, replaces a namesake and writes the audit event; test fixtures that need a working
    key without an audit row call this."""
    key = new_key()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:PREFIX_LENGTH],
        digest=digest_of(key),
        created_at=now or timezone.now(),
        expires_at=expires_at,
    )
    return token, key


class ApiTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` (the header the cluster agent sends), checked against the
    hashed keys. A subclass of DRF's class so the header parsing, the 401's
    ``WWW-Authenticate: Token`` and the OpenAPI security scheme stay as they were.

    Refused with 401: an unknown key, an expired token, a deactivated user.
    """

    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[object, ApiToken]:
        token = ApiToken.objects.select_related("user").filter(digest=digest_of(key)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        now = timezone.now()
        if token.expired(now):
            raise exceptions.AuthenticationFailed(
                f"Token {token.name!r} expired at {token.expires_at:%Y-%m-%d %H:%M} UTC."
            )
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        record_use(token, now)
        # The write's own check finds the token again by this (``permissions.recheck_identity``).
        setattr(token.user, API_TOKEN_ATTRIBUTE, token.pk)
        return token.user, token


def record_use(token: ApiToken, now: datetime) -> None:
    """Set ``last_used_at`` when it is older than the resolution: the ``WHERE`` makes the write
    happen once however many requests of the same minute race here."""
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    if ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now):
        token.last_used_at = now
