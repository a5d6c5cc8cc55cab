"""``{% grants_panel %}``: the Users page's queue grants and groups (``web.users.grants``), as
an inclusion tag so the page's own view needs nothing from it."""

from __future__ import annotations

from typing import Any

from django import template

from scheduler_admin.accounts import grants
from scheduler_admin.accounts.roles import ROLES
from scheduler_admin.web.users.grant_forms import GrantForm, GroupsForm

register = template.Library()


@register.inclusion_tag("web/users/_grants.html", takes_context=True)
def grants_panel(context: Any) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    accounts = get_user_model().objects.order_by("username").prefetch_related("groups")
    members = [
        (account, [g.name for g in account.groups.all() if g.name not in ROLES])
        for account in accounts
    ]
    return {
        "grants": list(grants.grants()),
        "members": [(account, names) for account, names in members if names],
        "grant_form": GrantForm(),
        "groups_form": GroupsForm(),
        "csrf_token": context.get("csrf_token"),
    }
