"""``{% may "cancel_timer" partition path as allowed %}``: whether the page's user may do an
action on a queue (``accounts.permissions.can``), so a template shows a control only where it
can be used. The user comes from the template's ``request`` (or ``user``) in its context."""

from __future__ import annotations

from typing import Any

from django import template

from scheduler_admin.accounts.permissions import can

register = template.Library()


@register.simple_tag(takes_context=True)
def may(context: Any, action: str, partition: Any = None, queue_path: str | None = None) -> bool:
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    return bool(can(user, action, partition, queue_path))
