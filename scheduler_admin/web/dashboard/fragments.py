"""Rendered parts of the dashboard kept per process, keyed by everything they are rendered from.

The dashboard and its live poll render the same few parts for every viewer: a tree row, an
over-max row, the sparklines card. Each is a pure function of a small value (a ``Row``, an
``OverMax`` with what the viewer may do to it, the sparklines' window and data), so it is
rendered once and kept under that value: a change renders again only the parts it changes,
and every other viewer, poll and page view reads them from here. At 5,000 queues this is most
of the live poll's answer (rendering the rows and the over-max card took some 30 ms of it).

Why this is safe across viewers: a part is rendered from its key alone, with no request, user
or CSRF token in its context (``render`` passes only ``context``), so the same key always
renders the same text, whoever asked first. What differs between viewers is in the key: the
viewer's scope decides which rows and items they get at all, and their rights a flag of the
part (``may_cancel``). Nothing is kept that a key does not determine.

The key is a ``repr`` of frozen dataclasses (rows, bars, timers, runs) and plain values: exact
and cheap (microseconds a row). URLs in a part depend on the script prefix, and text could
depend on the active language and time zone: those are part of the key too.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils.safestring import SafeString
from django.utils.timezone import get_current_timezone_name
from django.utils.translation import get_language

from scheduler_admin.web.dashboard.memo import Memo

#: Parts kept per process (a few KiB each): the rows of a few hundred opened queues, the
#: over-max rows and the sparklines of a few partitions.
LIMIT = 4096

_cache: Memo[SafeString] = Memo(LIMIT)


def render(template: str, key: Hashable, context: Mapping[str, Any]) -> SafeString:
    """``template`` rendered with ``context`` alone (no request), kept under ``key``: the
    caller's promise is that ``key`` determines ``context`` (see the module's docstring)."""
    slot = (template, get_script_prefix(), get_language(), get_current_timezone_name(), key)
    found = _cache.get(slot)
    if found is not None:
        return found
    text = get_template(template).render(dict(context))  # escaped, marked safe by the engine
    _cache.put(slot, text)
    return text


def clear() -> None:
    """Forget every part (tests)."""
    _cache.clear()
