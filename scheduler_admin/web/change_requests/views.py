"""Change requests in the console (SPEC 6 "Approvals", SPEC 8): the partition's list, and one
request with its diff, whether it is stale, a live preview of what approving it would evict,
and the Approve / Reject / Withdraw forms.

Reading is ``READ`` over every queue the request touches (``accounts.approvals``); the forms
show only for who may use them: Approve and Reject for another admin whose rights cover the
request, Withdraw for its author. The services check all of it again under the partition lock.
Approving a request whose preview evicts tasks asks for a confirmation (a checkbox on the form,
checked by the server), as does approving a stale one. The POSTs are told apart by ``action``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from preemption.hierarchy import ConfigErrors
from scheduler_admin.accounts import approvals, permissions
from scheduler_admin.accounts.permissions import APPROVE_CHANGE, READ
from scheduler_admin.base import errors, limits
from scheduler_admin.enforcement.request_previews import RequestPreview, preview_request
from scheduler_admin.queues import change_requests
from scheduler_admin.queues.models import ChangeRequest, Partition, RequestStatus
from scheduler_admin.web.common import partition_or_404, require, revision_link
from scheduler_admin.web.plans import plan_view

APPROVE, REJECT, WITHDRAW = "approve", "reject", "withdraw"


class ApproveForm(forms.Form):
    comment = forms.CharField(
        label="Comment (optional, kept with the decision)",
        required=False,
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    confirm_evictions = forms.BooleanField(required=False)
    confirm_stale = forms.BooleanField(required=False)


class RejectForm(forms.Form):
    comment = forms.CharField(
        label="Why it is rejected (required)",
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class WithdrawForm(forms.Form):
    comment = forms.CharField(
        label="Comment (optional)",
        required=False,
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


def request_url(request: ChangeRequest) -> str:
    return reverse("change-request", kwargs={"partition": request.partition.name, "pk": request.pk})


def held_message(request: ChangeRequest) -> SafeString:
    """What the queue page and the import say when a change was held for approval."""
    link = format_html('<a href="{}">change request {}</a>', request_url(request), request.pk)
    return format_html(
        "Partition {}: the change needs another admin's approval; nothing was saved yet. It is {}.",
        request.partition.name,
        link,
    )


def pending_panel(partition: Partition, user: Any) -> dict[str, Any]:
    """The dashboard's card: the partition's pending requests the user may read."""
    pending = [
        found
        for found in change_requests.pending_requests([partition])
        if approvals.may_read(user, found)
    ]
    return {"pending_requests": pending}


@require_GET
def request_list(request: HttpRequest, partition: str) -> HttpResponse:
    """Every request of the partition the user may read, newest first (``?status=``)."""
    require(request.user, READ, partition, anywhere=True)
    part = partition_or_404(partition)
    status = request.GET.get("status", "")
    if status not in RequestStatus.values:
        status = ""
    found = [
        item
        for item in change_requests.requests_of(part, status or None)[:200]
        if approvals.may_read(request.user, item)
    ]
    context = {"partition": part, "requests": found, "status": status,
               "statuses": RequestStatus.choices}  # fmt: skip
    return render(request, "web/change_requests/list.html", context)


@require_http_methods(["GET", "POST"])
def request_detail(request: HttpRequest, partition: str, pk: int) -> HttpResponse:
    """Show one request; on POST run one action (approve, reject, withdraw).

    Steps: 403 unless the user may read every queue of the request; on POST, validate the
    action's form (an approval that evicts needs ``confirm_evictions``, a stale one
    ``confirm_stale``: both checked against the preview and staleness as they are now), call
    the service (which checks the rights again under the partition lock) and redirect with a
    message; a refusal re-renders the page with the reason in place."""
    require(request.user, READ, partition, anywhere=True)
    part = partition_or_404(partition)
    found = change_requests.get_request(part, pk)
    decision = approvals.can_on_request(request.user, READ, found)
    if not decision:
        raise PermissionDenied(decision.reason)
    preview = preview_request(found) if found.is_pending else None
    stale = change_requests.stale_queues(found) if found.is_pending else []
    problems: list[str] = []
    approve_form, reject_form, withdraw_form = ApproveForm(), RejectForm(), WithdrawForm()
    if request.method == "POST":
        action = request.POST.get("action", "")
        _may(request, found, action)
        if action == APPROVE:
            approve_form = ApproveForm(request.POST)
            done = _approve(request, found, approve_form, preview, stale, problems)
        elif action == REJECT:
            reject_form = RejectForm(request.POST)
            done = _decide(request, found, reject_form, REJECT, problems)
        elif action == WITHDRAW:
            withdraw_form = WithdrawForm(request.POST)
            done = _decide(request, found, withdraw_form, WITHDRAW, problems)
        else:
            messages.error(request, "Unknown action: nothing was done.")
            done = redirect(request_url(found))
        if done is not None:
            return done
    context = _page(request, found, preview, stale)
    context.update({
        "approve_form": approve_form, "reject_form": reject_form,
        "withdraw_form": withdraw_form, "problems": problems,
    })  # fmt: skip
    status = 400 if request.method == "POST" else 200
    return render(request, "web/change_requests/detail.html", context, status=status)


def _approve(
    request: HttpRequest,
    found: ChangeRequest,
    form: ApproveForm,
    preview: RequestPreview | None,
    stale: list[str],
    problems: list[str],
) -> HttpResponse | None:
    if not form.is_valid():
        return None
    evicts = preview.victims if preview is not None else 0
    if evicts and not form.cleaned_data["confirm_evictions"]:
        form.add_error(
            "confirm_evictions",
            f"Approving now evicts {evicts} task{'s' if evicts != 1 else ''} once the quota "
            "delay passes: tick the box to confirm.",
        )
        return None
    try:
        decided, result = change_requests.approve_request(
            found.partition.name, found.pk, actor=request.user,
            comment=form.cleaned_data["comment"],
            confirm_stale=form.cleaned_data["confirm_stale"],
            authorize=approvals.request_authorizer(request.user, APPROVE_CHANGE, found),
        )  # fmt: skip
    except change_requests.RequestStale as exc:
        form.add_error("confirm_stale", str(exc))
        return None
    except ConfigErrors as exc:
        problems.extend(str(error) for error in exc.errors)
        return None
    except errors.Conflict as exc:  # decided meanwhile
        problems.append(str(exc))
        return None
    if result.revision is not None:
        saved = revision_link(decided.partition.name, result.revision.number)
        messages.success(request, format_html("Approved change request {}: saved as {}.",
                                              decided.pk, saved))  # fmt: skip
    else:
        messages.info(request, f"Approved change request {decided.pk}: nothing to change.")
    return redirect(request_url(decided))


def _decide(
    request: HttpRequest, found: ChangeRequest, form: forms.Form, action: str, problems: list[str]
) -> HttpResponse | None:
    if not form.is_valid():
        return None
    try:
        if action == REJECT:
            change_requests.reject_request(
                found.partition.name, found.pk, actor=request.user,
                comment=form.cleaned_data["comment"],
                authorize=approvals.request_authorizer(request.user, APPROVE_CHANGE, found),
            )  # fmt: skip
            messages.success(request, f"Rejected change request {found.pk}.")
        else:
            change_requests.withdraw_request(
                found.partition.name, found.pk, actor=request.user,
                comment=form.cleaned_data["comment"],
                authorize=approvals.request_authorizer(request.user, READ, found),
            )  # fmt: skip
            messages.success(request, f"Withdrew change request {found.pk}.")
    except (errors.Conflict, errors.Invalid) as exc:
        problems.append(str(exc))
        return None
    return redirect(request_url(found))


def _may(request: HttpRequest, found: ChangeRequest, action: str) -> None:
    """403 with the reason before anything else when the user may not take ``action``: the
    author never approves or rejects, only the author withdraws (the service checks again)."""
    is_author = change_requests.is_author(found, request.user)
    if action in (APPROVE, REJECT):
        if is_author:
            raise PermissionDenied("You made this request: another admin must decide it.")
        decision = approvals.may_decide(request.user, found)
        if not decision:
            raise PermissionDenied(decision.reason)
    elif action == WITHDRAW and not is_author:
        raise PermissionDenied(f"Only the author of this request, {found.author_name}, "
                               "may withdraw it.")  # fmt: skip


def _page(
    request: HttpRequest,
    found: ChangeRequest,
    preview: RequestPreview | None,
    stale: list[str],
) -> dict[str, Any]:
    user = request.user
    is_author = change_requests.is_author(found, user)
    may_decide = bool(approvals.may_decide(user, found)) and not is_author
    plans = []
    timers = []
    if preview is not None and preview.preview is not None:
        shown = preview.preview
        timers = sorted(shown.timers.values(), key=lambda timer: timer.queue)
        plans = [
            plan_view(plan, partial(shown.described, path), title=f"Quota enforcement on {path}")
            for path, plan in sorted(shown.plans.items())
        ]
    return {
        "partition": found.partition,
        "change": found,
        "preview": preview,
        "preview_errors": [str(error) for error in preview.errors] if preview else [],
        "timers": timers,
        "plans": plans,
        "stale": stale,
        "is_author": is_author,
        "may_decide": found.is_pending and may_decide,
        "may_withdraw": found.is_pending and is_author,
        "decide_refusal": ""
        if may_decide or is_author
        else approvals.may_decide(user, found).reason,
        "whole_partition": bool(permissions.can(user, READ, found.partition)),
    }
