"""The fences page (SPEC 8): the queue tree with every preemption fence drawn as a boundary, and
what picking a queue means for preemption in both directions.

The page is rendered whole on the server from ``?partition=`` and ``?queue=``; the small script
in ``static/web/fences.js`` only fetches the same URL and swaps the tree in place, so every link
also works without JavaScript.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from preemption.hierarchy import Hierarchy
from scheduler_admin.accounts.permissions import READ
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.common import require, selected_partition
from scheduler_admin.web.fences.reach import FenceMap, Reach

#: The text summary lists at most this many queues per sentence; the tree shows them all.
SUMMARY_LIMIT = 200


@require_GET
def fences(request: HttpRequest) -> HttpResponse:
    """Steps: pick the partition (404 for an unknown name), build its fence map, read the picked
    queue (an unknown path is an inline message, not an error page), then lay the tree out as
    flat rows the template nests without recursion (thousands of queues render in one loop)."""
    partition = selected_partition(request)
    # The fence map draws every queue of the partition: a read of the whole partition.
    require(request.user, READ, partition)
    context: dict[str, Any] = {
        "partition": partition,
        "partitions": Partition.objects.order_by("name").values_list("name", flat=True),
    }
    if partition is None:
        return render(request, "web/fences/fences.html", context)

    hierarchy = Hierarchy(partition.current_config())
    fence_map = FenceMap(hierarchy)
    picked = request.GET.get("queue", "").strip()
    reach: Reach | None = None
    if picked and picked in hierarchy.queues:
        reach = fence_map.reach(picked)
    elif picked:
        context["queue_error"] = f"There is no queue {picked!r} in partition {partition.name}."

    context.update(
        {
            "picked": picked if reach else "",
            "reach": reach,
            "rows": _rows(partition.name, fence_map, reach),
            "fence_count": sum(1 for path in fence_map.order if fence_map.is_fence(path)),
            "summary": _summary(fence_map, reach) if reach else None,
        }
    )
    return render(request, "web/fences/fences.html", context)


def _rows(partition: str, fence_map: FenceMap, reach: Reach | None) -> list[dict[str, Any]]:
    """One row per queue in depth-first order, with what the template needs to open and close
    the nested lists: a queue with children opens a list; a leaf closes as many levels as the
    next row climbs back up."""
    hierarchy = fence_map.hierarchy
    order = fence_map.order
    depths = [path.count(".") for path in order]
    rows = []
    for index, path in enumerate(order):
        queue = hierarchy.queues[path]
        policy = hierarchy.effective_policy(path)
        classes = ["q"]
        if fence_map.is_fence(path):
            classes.append("fence")
        if path in fence_map.disabled:
            classes.append("disabled")
        tags: list[tuple[str, str]] = []
        if reach is not None:
            tags = _highlights(path, reach)
            classes.extend(name for name, _ in tags)
        has_children = not hierarchy.is_leaf(path)
        next_depth = depths[index + 1] if index + 1 < len(order) else 0
        rows.append(
            {
                "path": path,
                "name": queue.name,
                "classes": " ".join(classes),
                "is_fence": "fence" in classes,
                "disabled": path in fence_map.disabled,
                "disabled_from": policy.source if policy.source != path else "",
                "selected": reach is not None and reach.selected == path,
                "tags": [(name, text) for name, text in tags if text],
                "pick_url": "?" + urlencode({"partition": partition, "queue": path}),
                "has_children": has_children,
                "closes": range(0 if has_children else depths[index] - next_depth),
            }
        )
    return rows


def _highlights(path: str, reach: Reach) -> list[tuple[str, str]]:
    """(class, visible words) of each highlight of a row. The words repeat what the colour says,
    so the states never rest on colour alone; ``in-scope`` is only a tint behind the others."""
    marks = [
        (path == reach.selected, "selected", "picked"),
        (path in reach.in_scope, "in-scope", ""),
        (path in reach.may_preempt, "may-preempt", "victims possible"),
        (path in reach.no_victims, "no-victims", "in reach, but disabled"),
        (path in reach.reaches, "reachable-from", "can preempt here"),
    ]
    return [(name, text) for applies, name, text in marks if applies]


def _summary(fence_map: FenceMap, reach: Reach) -> dict[str, Any]:
    """The sentences a screen reader (and a test) reads instead of the colours."""
    hierarchy = fence_map.hierarchy
    selected = reach.selected
    reachable = reach.reachable_from
    if not reachable:
        nothing_reaches = (
            f"{selected} has preemption disabled, so no task in it is preempted."
            if fence_map.eligible_count[selected] == 0
            else "no other queue: no task elsewhere may preempt in it."
        )
    else:
        nothing_reaches = ""
    return {
        "is_leaf": hierarchy.is_leaf(selected),
        "fence_roots": [
            {"path": root, "is_fence": fence_map.is_fence(root)} for root in reach.fence_roots
        ],
        "victims": reach.victim_leaves[:SUMMARY_LIMIT],
        "victims_more": max(0, len(reach.victim_leaves) - SUMMARY_LIMIT),
        "reachable": reachable[:SUMMARY_LIMIT],
        "reachable_more": max(0, len(reachable) - SUMMARY_LIMIT),
        "nothing_reaches": nothing_reaches,
        "disabled_in_scope": [path for path in fence_map.order if path in reach.no_victims][
            :SUMMARY_LIMIT
        ],
    }
