"""Template helpers of the console: ``{% load console %}``.

Every page shows values through these filters, so a quantity, a duration or a yes/no reads the
same everywhere: quantities short (``385Gi``, vcore in cores ``12.5``) with the exact canonical
value in the ``title`` tooltip, durations as ``1m30s``, booleans as yes/no and a missing value
as "—" (never Python's ``True`` / ``None`` or bare seconds).
"""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from preemption import resources
from preemption.durations import format_duration
from scheduler_admin.web import common, eligibility_text

register = template.Library()

#: What a missing value reads as (a constant: nothing to escape).
NOTHING = mark_safe('<span class="muted">—</span>')


@register.simple_tag
def queue_url(partition: str, path: str) -> str:
    """``{% queue_url partition.name queue.path %}``: the queue page, path percent-encoded."""
    return common.queue_url(partition, path)


@register.filter
def quantity(value: int | None, resource: str) -> SafeString:
    """``{{ value|quantity:"memory" }}``: the short reading, the exact quantity on hover;
    "—" for none."""
    if value is None or value == "":
        return NOTHING
    exact = resources.format_quantity(value, resource=resource)
    return format_html(
        '<span class="qty" title="{}">{}</span>', exact, common.human_quantity(value, resource)
    )


#: The earlier name of ``quantity`` (it returned the short text alone), kept for templates that
#: still use it.
register.filter("human_quantity", quantity)


@register.filter
def task_id(value: object) -> SafeString:
    """A task id as the console shows it. The cluster agent names pods ``namespace/name@uid``
    (unique even when a pod is recreated under its old name): that reads as the pod's name with
    the uid shortened, the whole id on hover (exports and the API keep it whole). Any other id
    shows as it is."""
    text = "" if value is None else str(value)
    name, separator, uid = text.rpartition("@")
    if not separator or not name or len(uid) < 16:
        return conditional_escape(text)
    return format_html(
        '<span class="task-id" title="{}">{}<span class="task-uid">@{}…</span></span>',
        text,
        name,
        uid[:8],
    )


@register.filter
def human_resources(amounts: dict[str, int] | None) -> SafeString:
    """A resource set as ``name short`` readings, each with its exact quantity on hover;
    "—" when empty."""
    if not amounts:
        return NOTHING
    return format_html_join(
        " ",
        '<span class="res" title="{} {}">{} {}</span>',
        ((name, exact, name, human) for name, human, exact in common.human_resources(amounts)),
    )


@register.filter
def duration(seconds: int | None) -> str:
    """``{{ timer.delay_seconds|duration }}``: whole seconds as ``1m30s``; "—" for none."""
    if seconds is None or seconds == "":
        return NOTHING
    return format_duration(int(seconds))


@register.filter
def ago(seconds: int | None) -> str:
    """``{{ status.silent_seconds|ago }}``: whole seconds as ``1m30s ago`` (the live pages tick
    it on: ``<time class="age" data-since=...>``); "—" for none."""
    if seconds is None or seconds == "":
        return NOTHING
    return f"{format_duration(max(int(seconds), 0))} ago"


@register.filter
def seconds(value: float | None) -> str:
    """A measured time in seconds (an agent's lag): ``0.8s`` under ten seconds, else as a
    duration (``1m15s``); "—" for none."""
    if value is None or value == "":
        return NOTHING
    if value < 10:
        return f"{value:.1f}s"
    return format_duration(round(value))


@register.filter
def lookup(mapping: Any, key: object) -> Any:
    """``{{ mapping|lookup:key }}``: the value of ``key``, or "" (also when ``mapping`` is not
    in the context, as in a live update that does not send it)."""
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


@register.filter
def may_run_on(ask: Any) -> str:
    """Where an ask may run (its node selector, required affinity and tolerations), in words;
    "" when anywhere (``web.eligibility_text``)."""
    return eligibility_text.ask_text(ask.node_selector, ask.node_affinity, ask.tolerations)


@register.filter
def plain(value: Any) -> str:
    """Any value as words (``common.display_value``): yes/no, "—", lists joined."""
    if value is None or value == "":
        return NOTHING
    return common.display_value(value)


@register.simple_tag
def revision_url(partition: str, number: object) -> str:
    """``{% revision_url partition number %}``: the revision's page, or "" when ``number`` is
    not a revision number (an audit event's object id is text)."""
    text = str(number)
    if not partition or not text.isascii() or not text.isdigit():
        return ""
    try:
        return reverse("history-revision", kwargs={"partition": partition, "number": int(text)})
    except NoReverseMatch:  # a partition name no URL can hold (e.g. with "/")
        return ""


@register.inclusion_tag("web/_observe_banner.html", takes_context=True)
def observe_banner(context: template.Context) -> dict[str, Any]:
    """The banner every page of a partition that only observes shows (SPEC 5 "Enforcement
    mode"): the page's ``partition`` (a partition or its name) or its ``run``'s."""
    from scheduler_admin.queues.models import EnforcementMode, Partition

    partition = context.get("partition")
    run = context.get("run")
    if partition is None and run is not None:
        partition = getattr(run, "partition", None)
    if isinstance(partition, str):
        partition = Partition.objects.filter(name=partition).first()
    observes = isinstance(partition, Partition) and partition.enforcement == (
        EnforcementMode.OBSERVE
    )
    return {"observing": partition if observes else None}
