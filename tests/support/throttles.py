"""Reset the API throttle counters between tests (issue 16, part "auth").

The counters live in the ``throttle`` cache: Redis in the test profile, under this pytest
process's own key prefix (``THROTTLE_KEY_PREFIX``). ``cache.clear()`` would be ``FLUSHDB`` there,
wiping whatever else shares the database (other runs' counters, a broker), so only this run's
keys are deleted.
"""

from __future__ import annotations

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from scheduler_admin.base.api.throttling import CACHE_ALIAS


def clear_throttle_counts() -> None:
    cache = caches[CACHE_ALIAS]
    if not isinstance(cache, RedisCache):
        cache.clear()
        return
    client = cache._cache.get_client(write=True)
    keys = list(client.scan_iter(match=f"{cache.make_key('')}*", count=1000))
    if keys:
        client.delete(*keys)
