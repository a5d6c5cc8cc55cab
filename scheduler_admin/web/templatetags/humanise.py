"""Times and stored reasons as people read them: ``{% load humanise %}``.

- ``{{ moment|when }}`` (or ``|when:"minute"``): a ``<time>`` in UTC with the zone named, which
  ``static/js/localtime.js`` rewrites into the viewer's own time zone; the UTC reading stays on
  hover (``title``), so a time copied into a ticket can still be compared across zones.
- ``{{ text|humane }}``: a reason the engine or the cluster stored as exact text (a victim's
  "why", a run's stop reason, an audit summary) with its quantities humanised (``16192Mi`` reads
  ``15.8Gi``) and its ISO 8601 times shown as ``when`` shows them, each with its exact value on
  hover; the whole stored text is the tooltip of the rest, so nothing of it is lost.

Only ``name quantity`` pairs whose name is a resource type are humanised: a priority, a rank or
an HTTP code next to a number stays as stored.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django import template
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from preemption import resources
from scheduler_admin.web import common

register = template.Library()

#: ``strftime`` of a time's UTC reading, by precision.
FORMATS = {"second": "%Y-%m-%d %H:%M:%S", "minute": "%Y-%m-%d %H:%M"}
#: An ISO 8601 time with its offset, as the engine (``preemption.explain.when``) and the API
#: write them.
ISO_TIME = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"
#: A resource type's name as reasons write it: the usual types, anything ending in ``memory``
#: or ``storage``, ``hugepages-*``, and extended resources (``nvidia.com/gpu``).
RESOURCE_NAME = (
    r"(?:vcore|cpu|pods|[\w.-]*memory|[\w.-]*storage|hugepages-[\w.]+"
    r"|[a-z0-9][\w-]*(?:\.[\w-]+)+/[\w.-]+)"
)
#: A quantity as ``resources.format_quantity`` writes it.
QUANTITY = r"-?\d+(?:[KMGTPE]i|[kKMGTPEm])?"
TOKENS = re.compile(
    rf"(?P<iso>{ISO_TIME})|(?<![\w./-])(?P<name>{RESOURCE_NAME}) (?P<qty>{QUANTITY})(?![\w.])"
)


def _time_html(moment: datetime, precision: str) -> SafeString:
    utc = moment.astimezone(UTC)
    text = f"{utc.strftime(FORMATS[precision])} UTC"
    iso = utc.isoformat().replace("+00:00", "Z")
    return format_html(
        '<time class="local-time" datetime="{}" data-precision="{}" title="{}">{}</time>',
        iso,
        precision,
        text,
        text,
    )


@register.filter
def when(moment: datetime | None, precision: str = "second") -> SafeString:
    """``{{ run.created_at|when }}``: the time in UTC, shown in the viewer's zone by
    ``localtime.js``, UTC on hover; "—" for none. ``precision``: "second" or "minute"."""
    if moment is None or moment == "":
        return mark_safe('<span class="muted">—</span>')
    if precision not in FORMATS:
        raise template.TemplateSyntaxError(f"when: precision {precision!r} is not one of {FORMATS}")
    return _time_html(moment, precision)


def _quantity_html(name: str, exact: str) -> SafeString | None:
    """``name`` and its humanised quantity with the exact one on hover; None when the text
    is not a quantity of that type or already reads as short as it can."""
    try:
        value = resources.parse_quantity(exact, resource=name, field=name)
    except (ValueError, TypeError):
        return None
    human = common.human_quantity(value, name)
    if human == exact:
        return None
    return format_html('{} <span class="qty" title="{}">{}</span>', name, exact, human)


def _iso_html(text: str) -> SafeString | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _time_html(moment, "second")


@register.filter
def humane(text: object) -> SafeString:
    """``{{ row.detail|humane }}``: a stored reason with humanised quantities and local times,
    each exact value on hover, the whole stored text as the tooltip; unchanged text as it is."""
    if text is None:
        return mark_safe("")
    raw = str(text)
    parts: list[SafeString] = []
    position = 0
    changed = False
    for match in TOKENS.finditer(raw):
        if match.group("iso"):
            replacement = _iso_html(match.group("iso"))
        else:
            replacement = _quantity_html(match.group("name"), match.group("qty"))
        if replacement is None:
            continue
        parts.append(conditional_escape(raw[position : match.start()]))
        parts.append(replacement)
        position = match.end()
        changed = True
    if not changed:
        return conditional_escape(raw)
    parts.append(conditional_escape(raw[position:]))
    body = format_html_join("", "{}", ((part,) for part in parts))
    return format_html('<span class="humane" title="{}">{}</span>', raw, body)
