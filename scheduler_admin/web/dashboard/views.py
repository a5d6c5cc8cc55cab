"""The dashboard (SPEC 8): partition switcher, queue tree with usage bars, queues over max with
their live countdown, alerts for runs that fell short, recent runs and revisions, worker state,
the cluster agents.

Views only read and render; the cancel buttons open the confirmation page of ``web.timers``.
"""

from __future__ import annotations

from datetime import datetime

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from preemption.config import ROOT, text_problem
from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.permissions import READ
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.change_requests.views import pending_panel
from scheduler_admin.web.common import (
    partition_choices,
    partition_or_404,
    require,
    selected_partition,
)
from scheduler_admin.web.dashboard.panels import agents, heartbeats, most_preempted_panel, panels
from scheduler_admin.web.dashboard.sparklines import top_level_sparklines
from scheduler_admin.web.dashboard.tree import SEARCH_MAX_LENGTH, QueueTree
from scheduler_admin.web.scheduled.listing import scheduled_rows


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """The dashboard of one partition (``?partition=``, else the first).

    Steps: load the tree with usage (one aggregate query) and pending timers; pick the expanded
    queues (root, plus the ancestors of search matches or of an ``open`` queue); build only those
    rows; list over-max queues, alerts, recent runs and revisions of the partition.
    """
    now = timezone.now()
    # A role or a queue grant somewhere: a user without either reads nothing (as in the API).
    require(request.user, READ, None, anywhere=True)
    partition = selected_partition(request)
    whole = permissions.can(request.user, READ, partition)
    context: dict[str, object] = {
        "partitions": list(partition_choices(request).values_list("name", flat=True)),
        "partition": partition,
        # Workers and agents serve every tenant: cards for those who read whole partitions.
        "heartbeats": heartbeats(now) if whole else [],
        **(agents(now) if whole else {"agents": []}),
        "now": now,
    }
    if partition is not None:
        context.update(_partition_context(request, partition, now))
    return render(request, "web/dashboard/page.html", context)


def _partition_context(
    request: HttpRequest, partition: Partition, now: datetime
) -> dict[str, object]:
    tree = QueueTree(partition, now=now, user=request.user)
    query = request.GET.get("q", "").strip()
    query_error = ""
    expanded = {ROOT, *tree.tops}
    only: set[str] | None = None
    matches: list[str] = []
    match_count = 0
    if len(query) > SEARCH_MAX_LENGTH:
        query_error = f"Search text is too long: at most {SEARCH_MAX_LENGTH} characters."
    elif query:
        matches, match_count = tree.search(query)
        if not matches:
            query_error = f"No queue path contains “{query}”."
        else:
            only = set(matches)
            for path in matches:
                ancestors = set(tree.hierarchy.ancestors(path))
                only |= ancestors
                expanded |= ancestors
    opened = request.GET.get("open", "")
    if opened and only is None and tree.has(opened):
        expanded |= tree.expanded_for(opened)
    return {
        "rows": tree.visible_rows(expanded, only=only, matches=matches),
        "query": query,
        "query_error": query_error,
        "match_count": match_count,
        "shown_matches": len(matches),
        **panels(tree, request.user),
        **most_preempted_panel(tree, request.user),
        "scheduled": scheduled_rows(partition, request.user),  # web.scheduled
        **pending_panel(partition, request.user),
        # Usage over time (issue 16, usage history)
        **_without_key(top_level_sparklines(tree)),
    }


def _without_key(context: dict[str, object]) -> dict[str, object]:
    context.pop("sparklines_key", None)
    return context


@require_GET
def children(request: HttpRequest) -> HttpResponse:
    """Rows of one queue's direct children (``?partition=&queue=``), fetched when a reader
    expands it; 404 for an unknown partition or queue, 403 for a queue outside a queue grant
    holder's subtrees. Usage comes from the shared roll-up; timers and runs are read for that
    subtree only."""
    name = request.GET.get("partition", "")
    path = request.GET.get("queue", "")
    if text_problem(path) or text_problem(name):  # PostgreSQL text cannot hold NUL
        raise Http404("No such queue.")
    require(request.user, READ, name, path)
    partition = partition_or_404(name)
    tree = QueueTree(partition, now=timezone.now(), under=path or None, user=request.user)
    if not tree.has(path):
        raise Http404(f"No queue {path!r} in partition {partition.name!r}.")
    return render(request, "web/dashboard/_rows.html", {"rows": tree.children_rows(path)})
