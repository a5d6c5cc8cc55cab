"""``{% signin_lockouts as lockouts %}``: the sign-in lockouts in force, for the Users page's
card (``web/users/_signin_lockouts.html``; issue 16, part "auth")."""

from __future__ import annotations

from django import template

from scheduler_admin.accounts.signin import Lockout, current_lockouts

register = template.Library()


@register.simple_tag
def signin_lockouts() -> list[Lockout]:
    return current_lockouts()
