"""Live updates: the dashboard and the queue page poll a small JSON document and patch
themselves in place (``static/web/live.js``), so an open page follows timers that fire, runs that
start and end, and usage that changes, without a reload.

Why polling and not server-sent events: the console runs under gunicorn's *sync* workers (three
in compose). An event stream holds one worker for as long as the page stays open, so three open
dashboards would leave no worker for anything else. A poll is one short request every few
seconds, and an unchanged state costs a ``304 Not Modified`` without a body.

Each answer is built by the same functions as the page (``QueueTree``, ``dashboard.panels``,
``queue_pages.status``): one set of queries per poll, none per queue. The dashboard's tree and
usage come from the roll-up shared by every viewer (``web.dashboard.rollup``), computed once per
change of the partition (with the newest revisions): an unchanged poll of an open tab reads the
roll-up's key, the small cards (timers, runs, alerts, workers, agents, scheduled changes, change
requests) and the viewer's grants, builds the
visible rows from the shared roll-up and answers 304, without summing or rolling up usage again.
A full answer renders only what changed: tree rows, over-max rows, the sparklines and the cards
without controls are kept rendered per content (``web.dashboard.fragments``), for every viewer.
It carries:

- ``version``: a hash of the state below, also sent as the ``ETag``. The client sends it back in
  ``If-None-Match``; when nothing changed the answer is a 304;
- the state itself, as exact numbers and ids (per visible queue: usage, guaranteed and max per
  resource, over max or not, its pending timer's ``due_at``, its run with a link; alerts,
  recent runs, ...). It holds no rendered text: a countdown's words change every second, the
  state only when something happens;
- ``html``: the parts of the page rendered by the page's own templates, which the client puts in
  place; so a live update looks exactly like a reload.

Whoever may read the page may read its updates, with the same narrowing (a queue grant's holder
gets the rows, runs and timers of their subtrees only; outside them a 403). A signed-out client
gets a 401 JSON body rather than the sign-in page, so the script can say so instead of failing
to parse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import wraps
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    JsonResponse,
    QueryDict,
)
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.http import parse_etags, quote_etag
from django.views.decorators.http import require_GET

from preemption.config import text_problem
from scheduler_admin.accounts.context_processors import roles
from scheduler_admin.accounts.permissions import (
    CANCEL_TIMER,
    READ,
    can,
    global_role,
    grants_of,
    require,
)
from scheduler_admin.base.api.errors import error_body
from scheduler_admin.base.error_pages import reason_of
from scheduler_admin.cluster.dynamic import cluster_tree
from scheduler_admin.history.services import last_sample
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.change_requests.views import pending_panel
from scheduler_admin.web.common import View, partition_or_404
from scheduler_admin.web.dashboard import fragments
from scheduler_admin.web.dashboard.panels import agents, heartbeats, panels
from scheduler_admin.web.dashboard.sparklines import top_level_sparklines
from scheduler_admin.web.dashboard.tree import QueueTree
from scheduler_admin.web.queue_pages import tables
from scheduler_admin.web.queue_pages.status import live_state, timer_status, usage_status
from scheduler_admin.web.queue_pages.usage_history import history_state, usage_history
from scheduler_admin.web.scheduled.listing import scheduled_rows

#: At most this many opened queues are followed (each brings up to ``CHILDREN_LIMIT`` rows).
OPEN_LIMIT = 100


def live_view(view: View) -> View:
    """GET only, for any signed-in user; signed out is a 401 and an unknown partition or queue
    a 404, both as the API's JSON error body (the client stops polling on them)."""

    @wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated:
            detail = "You are signed out: reload the page to sign in again."
            return JsonResponse(error_body(detail, "not_authenticated"), status=401)
        try:
            return view(request)
        except Http404 as exc:
            return JsonResponse(error_body(str(exc) or "Not found.", "not_found"), status=404)
        except PermissionDenied as exc:
            detail = reason_of(exc) or "Your account may not read this."
            return JsonResponse(error_body(detail, "permission_denied"), status=403)

    return login_not_required(require_GET(wrapper))


@live_view
def dashboard(request: HttpRequest) -> HttpResponse:
    """``GET /live/dashboard.json?partition=P&open=PATH...&q=TEXT``: the dashboard's state.

    ``open`` names each queue whose children the page shows (root's always are); ``q`` is the
    page's search. Rows: root, the children of each opened queue, the search matches with their
    ancestors. Cards: queues over max, alerts, recent runs and revisions, scheduled changes,
    change requests awaiting approval, workers, cluster agents.
    """
    name = request.GET.get("partition", "")
    if not text_problem(name):
        require(request.user, READ, name, anywhere=True)
    partition = partition_or_404(name)
    now = timezone.now()
    tree = QueueTree(partition, now=now, user=request.user)
    opened = [path for path in request.GET.getlist("open")[:OPEN_LIMIT] if tree.has(path)]
    rows = tree.live_rows(opened, request.GET.get("q", ""))
    whole = can(request.user, READ, partition)
    cards = {
        **panels(tree, request.user),
        "heartbeats": heartbeats(now) if whole else [],
        **(agents(now) if whole else {"agents": []}),
        "partition": partition,
        # The scheduled changes and the requests awaiting approval follow too (their cards).
        "scheduled": scheduled_rows(partition, request.user),
        **pending_panel(partition, request.user),
    }
    state = {
        **_common_state(request, partition),
        "queues": {row.path: row.state() for row in rows},
        "over_max": {
            "count": cards["over_max_count"],
            "queues": [
                {
                    "path": item.path,
                    "used": item.used,
                    "max": item.limit,
                    "timer": item.timer.state() if item.timer else None,
                    "run": item.run.state() if item.run else None,
                }
                for item in cards["over_max"]
            ],
        },
        "alerts": [{"run": alert["run"].pk, "label": alert["label"]} for alert in cards["alerts"]],
        "runs": [
            {
                "id": run.pk,
                "queue": run.queue_path,
                "status": run.status,
                "outcome": run.outcome,
                "victims": run.victim_count,
            }
            for run in cards["runs"]
        ],
        "revisions": [revision.number for revision in cards["revisions"]],
        "scheduled": [[row.change.pk, row.change.status] for row in cards["scheduled"]],
        "pending_requests": [found.pk for found in cards["pending_requests"]],
        "workers": [
            {"worker": beat["worker"], "alive": beat["alive"]} for beat in cards["heartbeats"]
        ],
        "agents": [status.state() for status in cards["agents"]],
        # Usage over time (issue 16): the sparklines follow each new sample (once a minute).
        "sparklines": last_sample(partition),
    }

    def html() -> dict[str, Any]:
        sparklines = top_level_sparklines(tree)
        sections = _fragments(
            request,
            cards,
            over_max="web/dashboard/_over_max.html",  # its rows: once per content
            scheduled="web/dashboard/_scheduled.html",
            pending_requests="web/dashboard/_pending_requests.html",
            workers="web/dashboard/_workers.html",
            agents="web/dashboard/_agents.html",
        )
        sections.update(_shared_sections(partition, cards))
        # The same for every viewer with the same top-level queues: rendered once per change.
        sections["sparklines"] = fragments.render(
            "web/usage/_sparklines.html", sparklines.pop("sparklines_key"), sparklines
        )
        return {
            # Each row is rendered once per content (``dashboard.fragments``).
            "rows": render_to_string("web/dashboard/_rows.html", {"rows": rows}),
            "sections": sections,
        }

    return _answer(request, state, html)


@live_view
def queue(request: HttpRequest) -> HttpResponse:
    """``GET /live/queue.json?partition=P&queue=PATH&page_query=Q``: the queue page's usage
    (per resource: used, pending, guaranteed, effective max, state), its quota timer or run, and
    the pages of running tasks and pending asks that the page's own query string ``Q`` shows
    (sort order and page number)."""
    name = request.GET.get("partition", "")
    path = request.GET.get("queue", "")
    if not text_problem(name) and not text_problem(path):
        require(request.user, READ, name, path)
    partition = partition_or_404(name)
    # With the cluster's dynamic queues (SPEC 3.4): a dynamic queue's page updates too, and a
    # parent's usage counts them.
    config, hierarchy, _ = cluster_tree(partition)
    queue_config = None if text_problem(path) else config.queue(path)
    if queue_config is None:
        raise Http404(f"Partition {partition.name} has no queue {path}.")
    usage = usage_status(partition, hierarchy, queue_config)
    now = timezone.now()
    timer = timer_status(partition, path, now, user=request.user)
    names = [bar.resource for bar in usage["bars"]]
    page_query = QueryDict(request.GET.get("page_query", ""))
    lists = tables.task_tables(partition, path, page_query, names)
    state = {
        **_common_state(request, partition),
        "queue": path,
        **live_state(usage, timer),
        "tasks": tables.rows_state(lists["tasks"]),
        "asks": tables.rows_state(lists["asks"]),
        # Usage over time (issue 16): the charts follow each new sample (once a minute).
        "history": history_state(partition, page_query),
    }
    context = {
        **usage, **timer, **lists,
        "partition": partition, "path": path, "is_leaf": hierarchy.is_leaf(path),
        "may_cancel_timer": bool(can(request.user, CANCEL_TIMER, partition, path)),
        "reads_history": bool(can(request.user, READ, partition)),
    }  # fmt: skip

    def html() -> dict[str, Any]:
        context.update(usage_history(partition, path, page_query, now, request.user))
        return {
            "sections": _fragments(
                request,
                context,
                timer="web/queue_pages/_timer.html",
                usage="web/queue_pages/_usage.html",
                history="web/usage/_history.html",
                tasks="web/queue_pages/_tasks.html",
                asks="web/queue_pages/_asks.html",
            )
        }

    return _answer(request, state, html)


def _shared_sections(partition: Partition, cards: dict[str, Any]) -> dict[str, str]:
    """The cards whose text is a function of the runs and revisions listed alone (no control,
    no form): rendered once per content for every viewer (``dashboard.fragments``). Their
    context holds the listed rows and the partition's name only, and the key every field of
    them the templates read."""
    named = SimpleNamespace(name=partition.name)
    alerts = cards["alerts"]
    alerts_key = tuple(
        (item["run"].pk, item["run"].queue_path, item["run"].policy, item["run"].created_at,
         item["label"], item["text"], item["link"])
        for item in alerts
    )  # fmt: skip
    runs = cards["runs"]
    runs_key = tuple(
        (run.pk, run.policy, run.queue_path, run.status, run.outcome, run.victim_count,
         run.created_at)
        for run in runs
    )  # fmt: skip
    revisions = cards["revisions"]
    revisions_key = tuple(
        (revision.number, revision.kind, revision.author_name, revision.created_at,
         revision.comment)
        for revision in revisions
    )  # fmt: skip
    return {
        name: fragments.render(template, (partition.name, key), {name: rows, "partition": named})
        for name, template, key, rows in (
            ("alerts", "web/dashboard/_alerts.html", alerts_key, alerts),
            ("runs", "web/dashboard/_runs.html", runs_key, runs),
            ("revisions", "web/dashboard/_revisions.html", revisions_key, revisions),
        )
    }


def _common_state(request: HttpRequest, partition: Partition) -> dict[str, Any]:
    """What both pages compare besides their own numbers: the partition's config version (a
    saved change may add or remove queues: the page offers a reload) and the reader's role
    (the rendered parts show controls by role)."""
    return {
        "partition": partition.name,
        "config_version": partition.version,
        "role": global_role(request.user),
        "grants": [[g.partition, g.path, g.role] for g in grants_of(request.user)],
    }


def _fragments(request: HttpRequest, context: dict[str, Any], **templates: str) -> dict[str, str]:
    """Render each template with ``context`` plus what the page's request context would give
    them (roles, the CSRF token of their forms). The context processors run once, not once per
    template: each of them queries the user's groups."""
    full = {**roles(request), "request": request, "csrf_token": get_token(request), **context}
    return {name: render_to_string(template, full) for name, template in templates.items()}


def _answer(
    request: HttpRequest, state: dict[str, Any], html: Callable[[], dict[str, Any]]
) -> HttpResponse:
    """200 with ``version``, the state and ``html()``; or 304 when the client's
    ``If-None-Match`` names this version (nothing is rendered then)."""
    encoded = json.dumps(state, sort_keys=True, cls=DjangoJSONEncoder).encode()
    version = hashlib.blake2b(encoded, digest_size=12).hexdigest()
    etag = quote_etag(version)
    if etag in parse_etags(request.headers.get("If-None-Match", "")):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = JsonResponse({"version": version, **state, "html": html()})
    response["ETag"] = etag
    # The browser must ask every time (no-cache), keep it to this user (private), and tell
    # users apart in any shared cache (Vary: Cookie).
    patch_cache_control(response, private=True, no_cache=True)
    patch_vary_headers(response, ["Cookie"])
    return response
