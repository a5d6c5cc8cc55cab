"""Answers for the people whose pods get preempted: the top bar's search (a task or pod id, an
application, a user or a queue) and the pages it leads to, a task's history and an
application's: every run that considered it, when, under which policy, what it decided and why
in the run page's words (``web.explanations``, the glossary), and what the cluster said about
the eviction order.

Everything is read by ``enforcement.task_history``, which narrows it to a queue grant's
holder's subtrees. A task or application the reader cannot see (outside their queues, or
unknown) is a 404 for every reader alike, so the page tells a tenant nothing about other
tenants' tasks, not even whether they exist.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from preemption.config import text_problem
from scheduler_admin.accounts.permissions import READ, visible_rows
from scheduler_admin.base.limits import CLUSTER_ID_MAX_LENGTH
from scheduler_admin.cluster.models import Allocation, Application
from scheduler_admin.enforcement import task_history
from scheduler_admin.enforcement.task_history import Consideration
from scheduler_admin.web.activity import presenters
from scheduler_admin.web.common import partition_or_404, require
from scheduler_admin.web.explanations import glossary_url, reason_anchor, reason_text

#: The longest text the search box takes: the longest id a task or application may have.
QUERY_MAX_LENGTH = CLUSTER_ID_MAX_LENGTH


@require_safe
def find(request: HttpRequest) -> HttpResponse:
    """The results of the top bar's search (``?q=``): tasks and applications whose id starts
    with the text, the applications of the user named so, and queues whose path contains it.
    A text that cannot be an id is explained next to the box, never a 500."""
    require(request.user, READ, None, anywhere=True)
    query = request.GET.get("q", "").strip()
    error = ""
    results = None
    if len(query) > QUERY_MAX_LENGTH:
        error = f"Too long: ids have at most {QUERY_MAX_LENGTH} characters."
    elif query and text_problem(query):
        error = f"The text {text_problem(query)}: no id holds such characters."
    elif query:
        results = task_history.search(query, request.user)
    return render(
        request, "web/find/results.html", {"query": query, "error": error, "results": results}
    )


def _row(item: Consideration) -> dict[str, Any]:
    """A consideration as a row of the history table: the reason's words and glossary link as
    the run page shows them (``_reason.html``)."""
    text = reason_text(item.reason)
    return {
        "item": item,
        "reason": {
            "words": text.words,
            "rule": text.rule,
            "reason": item.reason,
            "detail": item.detail,
            "link": glossary_url(reason_anchor(item.reason)),
        },
    }


def _checked(identifier: str) -> None:
    if text_problem(identifier):  # PostgreSQL text cannot hold NUL: no such task
        raise Http404("No such task or application.")


@require_safe
def task_page(request: HttpRequest, partition: str, task: str) -> HttpResponse:
    """Every run that considered the task, newest first, paged. 404 when the reader can see
    neither a run that considered it nor the task running in their queues."""
    require(request.user, READ, None, anywhere=True)
    _checked(task)
    part = partition_or_404(partition)
    rows = task_history.task_considerations(part, task, request.user)
    running = (
        visible_rows(request.user, Allocation.objects.filter(partition=part, external_id=task))
        .select_related("application")
        .first()
    )
    if running is None and not rows.exists():
        raise Http404(f"No task {task!r} in partition {part.name} (in your queues).")
    page = presenters.page_of(request, rows)
    return render(
        request,
        "web/find/task.html",
        {
            "partition": part,
            "task": task,
            "running": running,
            "rows": [_row(item) for item in task_history.describe(page, request.user)],
            "pager": presenters.pager(request, page),
        },
    )


@require_safe
def application_page(request: HttpRequest, partition: str, application: str) -> HttpResponse:
    """How often the application's tasks were preempted lately (with the runs), and every run
    that considered one of them, newest first, paged. 404 as for a task."""
    require(request.user, READ, None, anywhere=True)
    _checked(application)
    part = partition_or_404(partition)
    rows = task_history.application_considerations(part, application, request.user)
    current = visible_rows(
        request.user, Application.objects.filter(partition=part, external_id=application)
    ).first()
    if current is None and not rows.exists():
        raise Http404(f"No application {application!r} in partition {part.name} (in your queues).")
    page = presenters.page_of(request, rows)
    return render(
        request,
        "web/find/application.html",
        {
            "partition": part,
            "application": application,
            "current": current,
            "preempted": task_history.preemption_counts(
                part, request.user, timezone.now(), application=application
            ),
            "rows": [_row(item) for item in task_history.describe(page, request.user)],
            "pager": presenters.pager(request, page),
        },
    )
