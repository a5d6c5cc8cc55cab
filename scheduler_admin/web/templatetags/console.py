"""Template helpers of the console: ``{% load console %}``."""

from __future__ import annotations

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from scheduler_admin.web import common

register = template.Library()


@register.simple_tag
def queue_url(partition: str, path: str) -> str:
    """``{% queue_url partition.name queue.path %}``: the queue page, path percent-encoded."""
    return common.queue_url(partition, path)


@register.filter
def human_resources(amounts: dict[str, int] | None) -> SafeString:
    """Resource set as short readings, each with its exact quantity as a tooltip;
    "—" when empty."""
    if not amounts:
        return mark_safe('<span class="muted">—</span>')  # a constant: nothing to escape
    return format_html_join(
        " ",
        '<span class="res" title="{} {}">{} {}</span>',
        ((name, exact, name, human) for name, human, exact in common.human_resources(amounts)),
    )


@register.filter
def human_quantity(value: int, resource: str) -> str:
    return common.human_quantity(value, resource)
