"""The history pages (SPEC 6 and 8): a partition's revisions, the diff of any two, one revision
with its snapshot, and the revert of a revision (admin) after a confirmation that shows what it
will change. Views read and render; the revert goes through ``queues.services.revert_config``.

A revision is the whole partition's config, so these pages are a read of the whole partition
(global viewers and above); a queue grant's holder gets a 403 saying so, and reads the history
of each of their queues on its page.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods

from preemption.hierarchy import ConfigErrors
from preemption.yunikorn import yunikorn_min_version
from scheduler_admin.accounts.permissions import ADMINISTER, READ, authorizer
from scheduler_admin.agents.status import agent_statuses, running_revisions
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.web.change_requests.views import held_message
from scheduler_admin.web.common import (
    partition_or_404,
    require,
    revision_link,
    selected_partition,
)
from scheduler_admin.web.history.changes import against_previous, compare, show_field
from scheduler_admin.web.history.forms import CompareForm, RevertForm

PAGE_SIZE = 25


@require_GET
def history(request: HttpRequest) -> HttpResponse:
    """Revisions newest first, paged, with a from/to choice on each row for the diff page, and
    on each revision the cluster agents whose cluster runs it."""
    partition = selected_partition(request)
    require(request.user, READ, partition)
    context: dict[str, Any] = {"partition": partition, "partitions": _partition_names()}
    if partition is not None:
        revisions = partition.revisions.order_by("-number")
        page = Paginator(revisions, PAGE_SIZE).get_page(request.GET.get("page"))
        numbers = [revision.number for revision in page]
        version, reasons = yunikorn_min_version([partition.current_config()])
        running = running_revisions(partition)
        context.update(
            {
                "yunikorn_min_version": version,
                "yunikorn_min_version_reasons": reasons,
                "page": page,
                "revision_rows": [(rev, running.get(rev.number, [])) for rev in page],
                "agents": agent_statuses(timezone.now(), partition),
                "publish_quota_preemption": settings.PUBLISH_YUNIKORN_QUOTA_PREEMPTION,
                # Preselect the newest change on the page against the revision before it.
                "default_to": numbers[0] if numbers else None,
                "default_from": numbers[1] if len(numbers) > 1 else None,
                "page_query": urlencode({"partition": partition.name}),
            }
        )
    return render(request, "web/history/list.html", context)


@require_GET
def history_diff(request: HttpRequest) -> HttpResponse:
    """The changes from one revision to another, per queue and field. Bad or equal numbers are
    shown as messages next to the inputs (the page still answers 200)."""
    partition = selected_partition(request)
    require(request.user, READ, partition)
    if partition is None:
        raise Http404("no partition")
    asked = "from" in request.GET or "to" in request.GET
    data = {"from_number": request.GET.get("from", ""), "to_number": request.GET.get("to", "")}
    form = CompareForm(data if asked else None, partition=partition)
    context: dict[str, Any] = {"partition": partition, "form": form}
    if asked and form.is_valid():
        old, new = form.revisions["from_number"], form.revisions["to_number"]
        context.update({"old": old, "new": new, "changes": compare(old.config(), new.config())})
    return render(request, "web/history/diff.html", context)


@require_GET
def history_revision(request: HttpRequest, partition: str, number: int) -> HttpResponse:
    """One revision: who, when, why, what changed against the previous one, and its snapshot."""
    require(request.user, READ, partition)
    revision = _revision_or_404(partition, number)
    base, changes = against_previous(revision)
    config = revision.config()
    return render(
        request,
        "web/history/revision.html",
        {
            "partition": revision.partition,
            "revision": revision,
            "base": base,
            "changes": changes,
            "settings": [
                (key, show_field(key, value))
                for key, value in config.settings.to_json().items()
                if key not in ("name", "extra")
            ],
            "queues": config.queues,
            "is_current": revision.partition.revisions.order_by("-number").first() == revision,
        },
    )


@require_http_methods(["GET", "POST"])
def history_revert(request: HttpRequest, partition: str, number: int) -> HttpResponse:
    """Admin only, GET and POST: the confirmation is part of the action.

    Steps: show what the revert will change (current config -> the old snapshot) with a comment
    field; on POST refuse a stale view (someone saved meanwhile: show the fresh diff again),
    then call ``revert_config``. A snapshot the current rules reject is listed inline; success
    is a message and a redirect to the history list.
    """
    require(request.user, ADMINISTER)
    revision = _revision_or_404(partition, number)
    obj = revision.partition
    errors: list[str] = []
    if request.method == "GET":
        form = RevertForm(initial={"comment": f"Revert to revision {number}",
                                   "version": obj.version})  # fmt: skip
        return _render_revert(request, revision, form, errors)
    form = RevertForm(request.POST)
    if form.is_valid():
        try:
            # The version is compared under the partition lock, in the service: a check here
            # could pass just before another admin's save lands.
            result = services.revert_config(
                obj.name, to_number=number, actor=request.user,
                comment=form.cleaned_data["comment"],
                expected_revision=form.cleaned_data["version"],
                authorize=authorizer(request.user, ADMINISTER, None), request_approval=True,
            )  # fmt: skip
        except ConfigErrors as exc:
            errors.extend(str(error) for error in exc.errors)
        except services.StaleVersion as exc:
            errors.append(
                f"The configuration changed since you opened this page (now version "
                f"{exc.current}). Review what the revert changes now and confirm again."
            )
            form = RevertForm(initial={**form.cleaned_data, "version": exc.current})
        else:
            return _reverted(request, revision, result)
    return _render_revert(request, revision, form, errors)


def _reverted(
    request: HttpRequest, revision: ConfigRevision, result: services.SaveResult
) -> HttpResponse:
    """Say what happened and go back to the list, where the new revision is on top."""
    if result.change_request is not None:  # held for another admin's approval
        messages.info(request, held_message(result.change_request))
    elif result.revision is None:
        messages.info(request, f"Nothing to revert: the configuration already equals revision "
                               f"{revision.number}.")  # fmt: skip
    else:
        name = revision.partition.name
        messages.success(
            request,
            format_html(
                "Reverted partition {} to {} as {}.",
                name,
                revision_link(name, revision.number),
                revision_link(name, result.revision.number),
            ),
        )
    return HttpResponseRedirect(
        reverse("history") + "?" + urlencode({"partition": revision.partition.name})
    )


def _render_revert(
    request: HttpRequest, revision: ConfigRevision, form: RevertForm, errors: list[str]
) -> HttpResponse:
    obj = revision.partition
    obj.refresh_from_db()
    changes = compare(obj.current_config(), revision.config())
    return render(
        request,
        "web/history/revert.html",
        {
            "partition": obj,
            "revision": revision,
            "form": form,
            "errors": errors,
            "changes": changes,
        },
        status=400 if errors or form.errors else 200,
    )


def _revision_or_404(partition: str, number: int) -> ConfigRevision:
    return get_object_or_404(
        ConfigRevision.objects.select_related("partition"),
        partition=partition_or_404(partition),
        number=number,
    )


def _partition_names() -> list[str]:
    return list(Partition.objects.order_by("name").values_list("name", flat=True))
