"""The dashboard (SPEC 8): partition switcher, queue tree with usage bars, queues over max with
their live countdown, alerts for runs that fell short, recent runs and revisions, worker state.

Views only read and render; the one write (cancelling a timer) goes through
``enforcement.timers.cancel_timer``.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from preemption.config import ROOT, text_problem
from scheduler_admin.accounts.roles import OPERATOR
from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.common import partition_or_404, require_role, selected_partition
from scheduler_admin.web.dashboard.panels import heartbeats, panels
from scheduler_admin.web.dashboard.tree import SEARCH_MAX_LENGTH, QueueTree


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """The dashboard of one partition (``?partition=``, else the first).

    Steps: load the tree with usage (one aggregate query) and pending timers; pick the expanded
    queues (root, plus the ancestors of search matches or of an ``open`` queue); build only those
    rows; list over-max queues, alerts, recent runs and revisions of the partition.
    """
    now = timezone.now()
    partition = selected_partition(request)
    context: dict[str, object] = {
        "partitions": list(Partition.objects.order_by("name").values_list("name", flat=True)),
        "partition": partition,
        "heartbeats": heartbeats(now),
        "now": now,
    }
    if partition is not None:
        context.update(_partition_context(request, partition, now))
    return render(request, "web/dashboard/page.html", context)


def _partition_context(
    request: HttpRequest, partition: Partition, now: datetime
) -> dict[str, object]:
    tree = QueueTree(partition, now=now)
    query = request.GET.get("q", "").strip()
    query_error = ""
    expanded = {ROOT}
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
        **panels(tree),
    }


@require_GET
def children(request: HttpRequest) -> HttpResponse:
    """Rows of one queue's direct children (``?partition=&queue=``), fetched when a reader
    expands it; 404 for an unknown partition or queue. The usage query covers only that subtree."""
    partition = partition_or_404(request.GET.get("partition", ""))
    path = request.GET.get("queue", "")
    if text_problem(path):  # PostgreSQL cannot compare text holding NUL: no such queue
        raise Http404("No such queue.")
    tree = QueueTree(partition, now=timezone.now(), under=path or None)
    if not tree.has(path):
        raise Http404(f"No queue {path!r} in partition {partition.name!r}.")
    return render(request, "web/dashboard/_rows.html", {"rows": tree.children_rows(path)})


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a pending quota timer (operator), then back to the partition's dashboard."""
    require_role(request.user, OPERATOR)
    timer = get_object_or_404(QuotaTimer.objects.select_related("partition"), pk=pk)
    try:
        cancel_timer(timer.pk, actor=request.user)
    except TimerNotFound:
        messages.error(request, f"The timer of {timer.queue_path} is no longer pending.")
    else:
        messages.success(request, f"Cancelled the quota timer of {timer.queue_path}.")
    return redirect(f"{reverse('dashboard')}?{urlencode({'partition': timer.partition.name})}")
