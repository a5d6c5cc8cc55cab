"""The queue page's two long lists, running tasks and pending asks, sorted and paged in the
database (a busy queue holds thousands of tasks, so nothing is sorted in Python).

Each table reads its own query parameters — tasks ``sort``/``dir``/``page``, asks
``ask_sort``/``ask_dir``/``ask_page`` — so paging one keeps the other where it was. An unknown
sort key or page falls back to the default instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.db.models import F, OrderBy, Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.http import QueryDict

from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, AskState
from scheduler_admin.queues.models import Partition

PER_PAGE = 50

#: Resource columns get the sort key ``res:<name>``.
RESOURCE_KEY = "res:"

TASK_SORTS: dict[str, str] = {
    "id": "external_id",
    "app": "application__external_id",
    "queue": "queue_path",
    "node": "node_name",
    "priority": "priority",
    "created": "created_at",
    "state": "state",
}
ASK_SORTS: dict[str, str] = {
    "id": "external_id",
    "app": "application__external_id",
    "queue": "queue_path",
    "priority": "priority",
    "created": "created_at",
    "state": "state",
}


TASK_LABELS = {
    "id": "Task", "app": "Application", "queue": "Queue", "node": "Node",
    "priority": "Priority", "created": "Started", "state": "State",
}  # fmt: skip
ASK_LABELS = {
    "id": "Ask", "app": "Application", "queue": "Queue", "priority": "Priority",
    "created": "Waiting since", "state": "State",
}  # fmt: skip


@dataclass(frozen=True)
class Column:
    """A sortable header: its label, and the link that sorts by it (toggling direction)."""

    key: str
    label: str
    url: str
    #: "ascending" / "descending" when the table is sorted by this column (for aria-sort).
    sorted: str


def subtree(path: str) -> Q:
    """Rows whose queue is ``path`` or one of its descendants."""
    return Q(queue_path=path) | Q(queue_path__startswith=path + ".")


def task_queryset(partition: Partition, path: str) -> QuerySet[Allocation]:
    """Running and preempting tasks (victims not yet gone still use resources) of the subtree."""
    return (
        Allocation.objects.filter(partition=partition)
        .filter(subtree(path))
        .filter(state__in=[AllocationState.RUNNING, AllocationState.PREEMPTING])
        .select_related("application")
    )


def ask_queryset(partition: Partition, path: str) -> QuerySet[Ask]:
    """Asks still waiting (pending, or with a node reserved for them) in the subtree."""
    return (
        Ask.objects.filter(partition=partition)
        .filter(subtree(path))
        .filter(state__in=[AskState.PENDING, AskState.RESERVED])
        .select_related("application")
    )


def task_tables(
    partition: Partition, path: str, query: QueryDict, resource_names: list[str]
) -> dict[str, Any]:
    """The page of running tasks and the page of pending asks that ``query`` asks for (the
    queue page and its live updates), with a resource column for each of ``resource_names``."""
    return {
        "tasks": sorted_page(
            task_queryset(partition, path),
            query,
            prefix="",
            sorts=TASK_SORTS,
            anchor="tasks-heading",
            labels=TASK_LABELS,
            resource_names=resource_names,
        ),
        "asks": sorted_page(
            ask_queryset(partition, path),
            query,
            prefix="ask_",
            sorts=ASK_SORTS,
            anchor="asks-heading",
            labels=ASK_LABELS,
            resource_names=resource_names,
        ),
    }


def rows_state(table: dict[str, Any]) -> dict[str, Any]:
    """What the live updates compare of a table page: how many rows in all, and each shown
    row's id, state, place and size."""
    return {
        "count": table["page"].paginator.count,
        "rows": [
            [item.external_id, item.state,
             item.node_name if isinstance(item, Allocation) else item.node,
             item.priority, item.resources]
            for item, _ in table["rows"]
        ],
    }  # fmt: skip


def sorted_page(
    queryset: QuerySet,
    query: QueryDict,
    *,
    prefix: str,
    sorts: Mapping[str, str],
    labels: Mapping[str, str],
    resource_names: list[str],
    anchor: str,
    default: str = "id",
) -> dict[str, Any]:
    """One page of ``queryset`` ordered as the query asks, with header links for the template
    (each ending in ``#anchor``, so a click keeps the table in view).

    Ordering always ends with the id, so rows with equal sort values keep a stable order and
    never jump between pages."""
    sort = query.get(f"{prefix}sort", default)
    direction = "desc" if query.get(f"{prefix}dir") == "desc" else "asc"
    if sort not in sorts and not (
        sort.startswith(RESOURCE_KEY) and sort[len(RESOURCE_KEY) :] in resource_names
    ):
        sort = default
    descending = direction == "desc"
    if sort.startswith(RESOURCE_KEY):
        # A task without the type uses none of it: NULL sorts as the smallest value.
        expression = KeyTransform(sort[len(RESOURCE_KEY) :], "resources")
        if descending:
            order = OrderBy(expression, descending=True, nulls_last=True)
        else:
            order = OrderBy(expression, nulls_first=True)
    else:
        order = OrderBy(F(sorts[sort]), descending=descending)
    tiebreak = OrderBy(F("external_id"), descending=descending)
    page = Paginator(queryset.order_by(order, tiebreak), PER_PAGE).get_page(
        query.get(f"{prefix}page")
    )

    def url(**changes: str) -> str:
        params = query.copy()
        for key, value in changes.items():
            params[f"{prefix}{key}"] = value
        return "?" + params.urlencode() + "#" + anchor

    columns = []
    for key, label in [*labels.items(), *((RESOURCE_KEY + n, n) for n in resource_names)]:
        active = key == sort
        flip = "desc" if active and direction == "asc" else "asc"
        columns.append(
            Column(
                key=key,
                label=label,
                url=url(sort=key, dir=flip, page="1"),
                sorted=("descending" if descending else "ascending") if active else "",
            )
        )
    pages = {}
    if page.has_previous():
        pages["previous"] = url(page=str(page.previous_page_number()))
    if page.has_next():
        pages["next"] = url(page=str(page.next_page_number()))
    # Each resource cell is (canonical value or None, resource name), for ``|quantity``.
    rows = [
        (item, [(item.resources.get(name), name) for name in resource_names])
        for item in page.object_list
    ]
    return {
        "page": page, "rows": rows, "columns": columns, "sort": sort, "dir": direction, **pages
    }  # fmt: skip
