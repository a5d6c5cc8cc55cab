"""Throttles: writes per user, and token creation (SPEC: "throttling on writes and token
endpoints"). Reads are not throttled: dashboards and exporters poll them.

Counts live in the ``throttle`` cache (settings ``CACHES``): Redis when ``REDIS_URL`` is set, so
every gunicorn worker and every web replica counts against one limit; without Redis (``make
run``'s embedded set-up) each process counts alone in its memory, as before.

DRF's ``SimpleRateThrottle`` keeps a list of timestamps per client and writes it back after each
request (read, modify, write): two workers answering at once both read the same list and one of
the two requests is forgotten, and at 6,000 writes a minute the list itself is 6,000 floats per
request. Here each request is one atomic increment of a counter per time window (``INCR`` in
Redis), and the limit is checked against a sliding window estimated from the current and the
previous window: ``previous * (share of the window still to go) + current``.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from django.core.cache import BaseCache, caches
from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import UserRateThrottle

from scheduler_admin.base.addresses import client_address

if TYPE_CHECKING:  # importing views here would load DRF's settings while they are loading
    from rest_framework.request import Request
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)

#: The cache alias holding the counters (settings ``CACHES``).
CACHE_ALIAS = "throttle"


class SharedCountThrottle(UserRateThrottle):
    """A ``UserRateThrottle`` (per user; per address when anonymous) counted with atomic
    increments in the ``throttle`` cache. Should the cache be unreachable, the request is let
    through and a warning logged: a Redis outage must not turn every write into a 500 (Celery,
    on the same Redis, is the louder alarm)."""

    @property
    def cache(self) -> BaseCache:  # type: ignore[override]  # looked up per use: tests swap it
        return caches[CACHE_ALIAS]

    def allow_request(self, request: Request, view: APIView) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        now = time.time()
        window = int(now // self.duration)
        still_to_go = 1 - (now - window * self.duration) / self.duration
        current = f"{self.key}:{window}"
        try:
            count = self._increment(current)
            previous = self.cache.get(f"{self.key}:{window - 1}", 0)
            estimate = previous * still_to_go + count
            if estimate <= self.num_requests:
                return True
            self.cache.decr(current)  # a refused request does not count against the limit
        except Exception as exc:
            if not _is_outage(exc):
                raise
            logger.warning("API throttle not applied: its cache is unreachable (%s)", exc)
            return True
        # Retry once the estimate falls below the limit: the previous window's weight shrinks
        # linearly, and at the next window the current count becomes "previous".
        self._wait = max(1.0, math.ceil(still_to_go * self.duration))
        return False

    def _increment(self, key: str) -> int:
        """Add one to the window's counter, creating it (kept two windows) if needed."""
        self.cache.add(key, 0, self.duration * 2)
        try:
            return self.cache.incr(key)
        except ValueError:  # expired between add and incr: start it again
            self.cache.add(key, 0, self.duration * 2)
            return self.cache.incr(key)

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)

    def get_ident(self, request: Request) -> str:
        """An anonymous client's address as sign-in counts it (``accounts.addresses``): behind
        the trusted proxies, the one they appended to ``X-Forwarded-For``; never a value the
        client wrote (DRF's own takes the whole header when ``NUM_PROXIES`` is unset, so a
        client could name a new "address" per request), nor the proxy's own address for
        everyone behind it."""
        return client_address(request) or ""


def _is_outage(exc: Exception) -> bool:
    """A connection or timeout error of the Redis client (not a bug of ours)."""
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # pragma: no cover - redis is a runtime dependency
        return False
    return isinstance(exc, RedisConnectionError | RedisTimeoutError | ConnectionError)


class WriteRateThrottle(SharedCountThrottle):
    """Writes per user: ``API_WRITE_RATE`` (scope ``writes``) for the console and session
    clients; ``API_AGENT_WRITE_RATE`` (scope ``agent_writes``, a bucket of its own) for requests
    authenticated with an API token, as the cluster's agent and automation make them. Every
    request counts once, a bulk one (``evictions/acknowledge`` of 5,000 orders) included."""

    scope = "writes"
    agent_scope = "agent_writes"

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            return True
        from rest_framework.authentication import TokenAuthentication

        if isinstance(getattr(request, "successful_authenticator", None), TokenAuthentication):
            self.scope = self.agent_scope
            self.rate = self.get_rate()
            self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)


class TokenRateThrottle(SharedCountThrottle):
    scope = "token"
