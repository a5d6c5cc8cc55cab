"""Building blocks shared by the console's pages: authorisation, partition lookup, queue URLs
and humanised quantities.

Pages need a signed-in user (``LoginRequiredMiddleware`` handles anonymous users). What a user
may read and do is decided by ``accounts.permissions.can`` alone: views call ``require`` (a 403
page with the reason), lists are narrowed with ``permissions.read_scope``, and templates show a
control only where ``{% may %}`` (``templatetags.access``) or the view's context says it may
be used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from preemption import resources
from preemption.config import text_problem
from scheduler_admin.accounts import permissions
from scheduler_admin.queues.models import Partition

View = Callable[..., HttpResponse]


def require(
    user: Any,
    action: str,
    partition: Any = None,
    queue_path: str | None = None,
    *,
    anywhere: bool = False,
) -> None:
    """403 with the reason unless ``user`` may do ``action`` there (``permissions.can``)."""
    permissions.require(user, action, partition, queue_path, anywhere=anywhere)


def partition_or_404(name: str) -> Partition:
    if text_problem(name):  # PostgreSQL cannot compare text holding NUL: no such partition
        raise Http404("no such partition")
    return get_object_or_404(Partition, name=name)


def selected_partition(request: HttpRequest) -> Partition | None:
    """The partition named by ``?partition=``, else the first by name (None when there is none).

    A queue grant's holder picks among the partitions of their grants: another name is a 403
    saying so (whether that partition exists or not)."""
    name = request.GET.get("partition")
    partitions = partition_choices(request)
    if name:
        if "\x00" in name:  # PostgreSQL cannot compare text holding NUL: no such partition
            raise Http404("no such partition")
        scope = permissions.read_scope(request.user)
        if scope is not None and name not in scope.partitions():
            raise PermissionDenied(
                permissions.outside_reason(request.user, name, f"partition {name}")
            )
        return get_object_or_404(Partition, name=name)
    return partitions.first()


def partition_choices(request: HttpRequest) -> QuerySet[Partition]:
    """The partitions the user may pick (all, or those of their queue grants), by name."""
    return permissions.visible_partitions(request.user, Partition.objects.order_by("name"))


def queue_url(partition: str, path: str) -> str:
    """URL of a queue's page. The path is percent-encoded whole (names may hold ``/ # @ :``)."""
    base = reverse("queue-detail", kwargs={"partition": partition, "queue": "QUEUE"})
    return base.replace("QUEUE", quote(path, safe=""))


# --------------------------------------------------------------------------------------------
# Humanised quantities: exact canonical integers stay in the API and the edit forms; pages show
# a short rounded form with the exact value in a tooltip.
# --------------------------------------------------------------------------------------------

_BINARY_STEPS = [("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
_DECIMAL_STEPS = [("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)]


def human_quantity(value: int, resource: str) -> str:
    """A short, rounded reading of a canonical quantity: ``vcore`` 12500 -> "12.5",
    memory/storage bytes -> "1.41Ti", other counts -> "1.2M". At most three significant digits;
    use ``resources.format_quantity`` where exactness matters."""
    if value < 0:
        return "-" + human_quantity(-value, resource)
    if resource == resources.VCORE:
        return _trim(value / 1000)
    steps = _BINARY_STEPS if _is_bytes(resource) else _DECIMAL_STEPS
    for suffix, factor in steps:
        if value >= factor:
            return _trim(value / factor) + suffix
    return str(value)


def human_resources(amounts: dict[str, int]) -> list[tuple[str, str, str]]:
    """(resource, humanised, exact) for every resource, sorted by name."""
    return [
        (
            name,
            human_quantity(amounts[name], name),
            resources.format_quantity(amounts[name], resource=name),
        )
        for name in sorted(amounts)
    ]


def _is_bytes(resource: str) -> bool:
    return resource in {"memory", "ephemeral-storage", "storage"} or resource.endswith("memory")


def _trim(number: float) -> str:
    if number >= 100:
        return f"{number:.0f}"
    if number >= 10:
        return f"{number:.1f}".rstrip("0").rstrip(".")
    return f"{number:.2f}".rstrip("0").rstrip(".")


def display_value(value: Any) -> str:
    """A setting or detail value in words, for pages: yes/no for booleans, "—" for none,
    lists joined with commas, anything else as text. Pages never show Python's ``True``/``None``.
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(display_value(item) for item in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {display_value(item)}" for key, item in value.items()) or "none"
    return str(value)


def revision_link(partition: str, number: int) -> SafeString:
    """``revision N`` linking to the revision's page, for messages that name a revision."""
    url = reverse("history-revision", kwargs={"partition": partition, "number": number})
    return format_html('<a href="{}">revision {}</a>', url, number)
