"""``{% tree_row row %}`` and ``{% over_max_row item %}``: one row of the dashboard's tree and of
its over-max card, rendered once per content and kept (``web.dashboard.fragments``), so the page,
the children fragment and every live poll share them."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from scheduler_admin.accounts.permissions import CANCEL_TIMER, can
from scheduler_admin.web.dashboard import fragments

register = template.Library()


@register.simple_tag
def tree_row(row: Any) -> SafeString:
    """A ``Row`` or ``MoreRow`` (frozen dataclasses: their ``repr`` is their whole content)."""
    return fragments.render("web/dashboard/_row.html", repr(row), {"row": row})


@register.simple_tag(takes_context=True)
def over_max_row(context: Any, item: Any) -> SafeString:
    """An ``OverMax`` row; the viewer decides only whether the actions column is drawn and
    whether its timer has a cancel button (both in the key)."""
    partition = context["partition"].name
    actions = bool(context.get("can_operate") or context.get("user_grants"))
    may_cancel = False
    if actions and item.timer is not None:
        request = context.get("request")
        user = getattr(request, "user", None) or context.get("user")
        may_cancel = bool(can(user, CANCEL_TIMER, partition, item.path))
    key = (repr(item), partition, actions, may_cancel)
    return fragments.render(
        "web/dashboard/_over_max_row.html",
        key,
        {"item": item, "partition_name": partition, "actions": actions, "may_cancel": may_cancel},
    )
