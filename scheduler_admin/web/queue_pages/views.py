"""The queue page (SPEC 8): effective settings with their sources, usage against guaranteed and
max, the subtree's tasks and pending asks, the pending quota timer, this queue's history, and the
edit form with its preview.

Reading the page is ``READ`` on the queue, its POSTs are ``PREVIEW`` and ``EDIT_QUEUE``
(``accounts.permissions``): a global viewer reads every queue and a global operator edits it; a
queue grant's holder reads and edits the queues of their subtrees and gets a 403 with the reason
elsewhere, where the edit form and the timer's Cancel button are not shown. The POSTs are told
apart by the ``action`` field rather than by sub-URLs, because a queue path may itself contain
``/`` and so no suffix after it could be told from a queue name. Writes go through
``queues.services.update_queue``; a preview calls ``enforcement.previews.preview_change`` and
writes nothing. The timer's cancel button opens the confirmation page of ``web.timers``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from preemption.config import PartitionConfig, QueueConfig
from preemption.hierarchy import ConfigError, ConfigErrors, Hierarchy, validate_config
from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.permissions import CANCEL_TIMER, EDIT_QUEUE, READ, can
from scheduler_admin.cluster.dynamic import cluster_tree, config_with_dynamic
from scheduler_admin.cluster.resource_types import resource_type_warnings
from scheduler_admin.enforcement.previews import preview_change
from scheduler_admin.enforcement.task_history import preemption_counts
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.saved import current_config
from scheduler_admin.web import eligibility_text
from scheduler_admin.web.change_requests.views import held_message, request_url
from scheduler_admin.web.common import partition_or_404, queue_url, require, revision_link
from scheduler_admin.web.plans import plan_view
from scheduler_admin.web.queue_pages import effective, tables
from scheduler_admin.web.queue_pages.forms import PREVIEW, SAVE, QueueEdit
from scheduler_admin.web.queue_pages.history import describe_queue_changes, queue_history
from scheduler_admin.web.queue_pages.scheduling import schedule_from_form
from scheduler_admin.web.queue_pages.status import pending_timer, timer_status, usage_status
from scheduler_admin.web.queue_pages.usage_history import usage_history
from scheduler_admin.web.scheduled.listing import scheduled_rows

ASK_LABELS = {
    "id": "Ask", "app": "Application", "queue": "Queue", "priority": "Priority",
    "created": "Waiting since", "state": "State",
}  # fmt: skip


def queue_detail(request: HttpRequest, partition: str, queue: str) -> HttpResponse:
    """Show the queue; on POST run one action (``preview`` or ``save``).

    Steps: 403 unless the user may read the queue (decided on the path, before looking it up);
    on POST, 403 unless they may preview or save it; validate the form, then either render the
    plans the change would trigger (saving nothing) or save through the service (which checks
    the right again under the partition lock) and redirect with a message. Any refusal
    re-renders the page with the user's input and the errors in place.
    """
    if "\x00" in partition or "\x00" in queue:  # PostgreSQL text cannot hold NUL: no such row
        raise Http404("No such queue.")
    require(request.user, READ, partition, queue)
    if request.method == "POST":
        wanted = permissions.PREVIEW if request.POST.get("action") == PREVIEW else EDIT_QUEUE
        require(request.user, wanted, partition, queue)
    part = partition_or_404(partition)
    # The saved config parsed once per revision (queues.saved): building it from the rows costs
    # 0.35 s at 5,000 queues, on every view of the page.
    config = current_config(part)
    queue_config = config.queue(queue)
    row = Queue.objects.filter(partition=part, path=queue).first()
    if queue_config is None:
        # A queue YuniKorn created (SPEC 3.4) is shown, never edited: there is no config.
        merged, _, dynamic = cluster_tree(part)
        if queue in dynamic:
            if request.method == "POST":
                messages.error(request, "A dynamic queue has no config to change.")
                return redirect(queue_url(part.name, queue))
            context = _page(request, part, merged, merged.queue(queue))  # type: ignore[arg-type]
            context.update({"edit": None, "preview": None, "version": None, "dynamic": True})
            return render(request, "web/queue_pages/detail.html", context)
    if queue_config is None or row is None:
        raise Http404(f"Partition {part.name} has no queue {queue}.")

    edit: QueueEdit | None = None
    preview: dict[str, Any] | None = None
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action not in (PREVIEW, SAVE):
            messages.error(request, "Unknown action: nothing was done.")
            return redirect(queue_url(part.name, queue))
        edit = QueueEdit(queue_config, row.version, request.POST, action=action)
        if edit.is_valid():
            if action == SAVE and edit.form.cleaned_data.get("apply_at") is not None:
                done = schedule_from_form(request, part, queue, edit)  # queue_pages/scheduling
                if done is not None:
                    return done
            elif action == SAVE:
                done = _save(request, part, queue, edit)
                if done is not None:
                    return done
            else:
                preview = _preview(part, config, queue_config, row.version, edit)
    elif can(request.user, EDIT_QUEUE, part, queue):
        edit = QueueEdit(queue_config, row.version)

    context = _page(request, part, config, queue_config)
    context.update({"edit": edit, "preview": preview, "version": row.version})
    return render(request, "web/queue_pages/detail.html", context)


def _save(
    request: HttpRequest, partition: Partition, path: str, edit: QueueEdit
) -> HttpResponse | None:
    """Save through ``update_queue``; a redirect on success, None (errors attached) otherwise."""
    try:
        result = services.update_queue(
            partition.name,
            path,
            version=edit.form.cleaned_data["version"],
            actor=request.user,
            comment=edit.form.cleaned_data["comment"],
            authorize=permissions.authorizer(request.user, EDIT_QUEUE, path),
            request_approval=True,
            **edit.changes(),
        )
    except ConfigErrors as exc:
        edit.attach_config_errors(exc.errors, path)
        return None
    except services.StaleVersion as exc:
        edit.stale = _stale_message(exc.current)
        return None
    except services.NotFound as exc:
        edit.errors.append(f"{exc} (it may have been deleted meanwhile): nothing was saved.")
        return None
    if result.change_request is not None:  # held for another admin's approval
        messages.info(request, held_message(result.change_request))
        return redirect(request_url(result.change_request))
    saved_config = current_config(partition)
    for warning in _warnings_of(partition, saved_config, path):
        messages.warning(request, f"Warning: {warning.field}: {warning.message}")
    if result.revision is None:
        messages.info(request, "Nothing to save: the values are the ones already saved.")
    else:
        saved = revision_link(partition.name, result.revision.number)
        message = format_html("Saved {} as {}.", path, saved)
        timer = pending_timer(partition, path)
        if timer is not None and timer.revision_number == result.revision.number:
            due = f"{timer.due_at:%Y-%m-%d %H:%M:%S}"
            message = format_html("{} A quota timer started: due at {} UTC.", message, due)
        messages.success(request, message)
    # An explicit fragment: the browser would otherwise keep the form's "#change" and scroll
    # past the message saying what was saved.
    return redirect(queue_url(partition.name, path) + "#main")


def _preview(
    partition: Partition,
    config: PartitionConfig,
    queue: QueueConfig,
    version: int,
    edit: QueueEdit,
) -> dict[str, Any] | None:
    """What saving the form would trigger: the changed fields, the timers it would start or
    reset and the plan each would run once due. Saves nothing. None when refused (errors on
    the form), exactly as a save would be refused."""
    if edit.form.cleaned_data["version"] != version:
        edit.stale = _stale_message(version)
        return None
    new_config = config.with_queue(replace(queue, **edit.changes()))
    errors = validate_config(new_config)
    if errors:
        edit.attach_config_errors(errors, queue.path)
        return None
    result = preview_change(partition, new_config)
    return {
        "apply_at": edit.form.cleaned_data.get("apply_at"),
        "warnings": _warnings_of(partition, new_config, queue.path),
        "changes": describe_queue_changes(config, new_config, queue.path),
        "timers": sorted(result.timers.values(), key=lambda timer: timer.queue),
        "plans": [
            plan_view(plan, partial(result.described, path), title=f"Quota enforcement on {path}")
            for path, plan in sorted(result.plans.items())
        ],
    }


def _warnings_of(partition: Partition, config: PartitionConfig, path: str) -> list[ConfigError]:
    """The edited queue's resource types that nothing else knows (``memroy``): shown with the
    preview and after a save, never blocking either."""
    return [w for w in resource_type_warnings(partition, config) if w.queue == path]


def _stale_message(current: int) -> str:
    return (
        f"Someone saved this queue since you opened the page (it is now at version {current}). "
        "Nothing was saved. Reload the page to see their change, then make yours again."
    )


def _node_facts(partition: Partition, task_tables: dict[str, Any]) -> dict[str, str]:
    """Labels and taints of the nodes the page's tasks run on and its asks are reserved for."""
    names = {task.node_name for task, _ in task_tables["tasks"]["rows"]}
    names |= {ask.node for ask, _ in task_tables["asks"]["rows"] if ask.node}
    return eligibility_text.node_facts(partition, names)


def _page(
    request: HttpRequest, partition: Partition, config: PartitionConfig, queue: QueueConfig
) -> dict[str, Any]:
    """Everything the page shows besides the form."""
    path = queue.path
    now = timezone.now()
    # With the cluster's dynamic queues: children shown, their usage counted (SPEC 3.4).
    hierarchy = Hierarchy(config_with_dynamic(partition, config))
    usage = usage_status(partition, hierarchy, queue)
    names = [bar.resource for bar in usage["bars"]]
    task_tables = tables.task_tables(partition, path, request.GET, names)
    return {
        "partition": partition,
        "queue": queue,
        "path": path,
        "is_leaf": hierarchy.is_leaf(path),
        "ancestors": [
            (ancestor, bool(can(request.user, READ, partition, ancestor)))
            for ancestor in reversed(list(hierarchy.ancestors(path)))
        ],
        "may_cancel_timer": bool(can(request.user, CANCEL_TIMER, partition, path)),
        "reads_history": bool(can(request.user, READ, partition)),
        "children": hierarchy.children(path),
        "settings": effective.setting_rows(hierarchy, path, partition.quota_preemption_enabled),
        **usage,
        **timer_status(partition, path, now, user=request.user),
        "now": now,
        **task_tables,
        # Where the tasks run and the asks may (SPEC 3.3): the nodes' labels and taints.
        "node_facts": _node_facts(partition, task_tables),
        # Usage over time (issue 16, usage history)
        **usage_history(partition, path, request.GET, now, request.user),
        "history": queue_history(partition, path),
        # How often the subtree's tasks were preempted lately, with the runs that did it.
        "preempted": preemption_counts(partition, request.user, now, queue=path),
        "scheduled": scheduled_rows(partition, request.user, path=path),
        "history_url": reverse("history") + "?" + urlencode({"partition": partition.name}),
        "simulator_url": reverse("simulator")
        + "?"
        + urlencode({"partition": partition.name, "queue": path}),
    }
