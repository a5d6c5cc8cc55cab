"""``{% load help %}{% help_url as href %}``: the current console page's Help link
(``scheduler_admin.web.help.pages``), "" where the page has none."""

from __future__ import annotations

from django import template

from scheduler_admin.web.help.pages import help_url as page_help_url

register = template.Library()


@register.simple_tag(takes_context=True)
def help_url(context: template.Context) -> str:
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    return page_help_url(match.url_name if match else None)
