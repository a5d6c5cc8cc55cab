"""Cancelling a quota timer (operators): the queue page's and the dashboard's cancel buttons
open this confirmation page, where the operator may say why; the comment goes into the
``timer.cancelled`` audit event (``enforcement.timers.cancel_timer``).

GET shows the timer and the form; POST cancels and goes back to where the button was
(``next``, a local URL; otherwise the timer's queue page). No JavaScript involved.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from preemption.durations import format_duration
from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.permissions import CANCEL_TIMER
from scheduler_admin.base import limits
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.web.common import queue_url, require
from scheduler_admin.web.query_guard import takes_query


class CancelTimerForm(forms.Form):
    comment = forms.CharField(
        label="Comment (optional, kept in the audit log)",
        required=False,
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


@takes_query("next")
@require_http_methods(["GET", "POST"])
def timer_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Steps: ``CANCEL_TIMER`` on the timer's queue (a global operator, or a grant on it;
    403 otherwise, GET included: the page is part of the action; a queue grant's holder gets
    the same 403 for a timer outside their subtrees as for one that does not exist); a timer
    that already ended sends the user back with a message; GET renders the confirmation; a
    valid POST cancels with the comment (checked again under the partition lock) and
    redirects back."""
    timer = _timer_or_refuse(request, pk)
    back = _back(request, timer)
    if timer.status != TimerStatus.PENDING:
        messages.error(request, f"The timer of {timer.queue_path} is no longer pending.")
        return redirect(back)
    form = CancelTimerForm(request.POST if request.method == "POST" else None)
    if form.is_valid():
        try:
            cancel_timer(
                timer.pk,
                actor=request.user,
                partition=timer.partition,
                comment=form.cleaned_data["comment"],
                authorize=permissions.authorizer(request.user, CANCEL_TIMER, timer.queue_path),
            )
        except TimerNotFound:  # ended between the lookup and the lock
            messages.error(request, f"The timer of {timer.queue_path} is no longer pending.")
        else:
            messages.success(request, f"Cancelled the quota timer of {timer.queue_path}.")
        return redirect(back)
    left = max(0, int((timer.due_at - timezone.now()).total_seconds()))
    context = {"timer": timer, "form": form, "back": back, "left": format_duration(left)}
    status = 400 if request.method == "POST" else 200
    return render(request, "web/timers/cancel.html", context, status=status)


def _timer_or_refuse(request: HttpRequest, pk: int) -> QuotaTimer:
    timers = permissions.visible_rows(request.user, QuotaTimer.objects.select_related("partition"))
    timer = timers.filter(pk=pk).first()
    if timer is None:
        if permissions.is_scoped(request.user):
            raise PermissionDenied(permissions.outside_reason(request.user, "", f"timer {pk}"))
        require(request.user, CANCEL_TIMER, None, None)  # no role at all: say which is needed
        raise Http404(f"No timer {pk}.")
    require(request.user, CANCEL_TIMER, timer.partition, timer.queue_path)
    return timer


def _back(request: HttpRequest, timer: QuotaTimer) -> str:
    """Where the cancel button was: ``next`` when it is a URL of this site, else the timer's
    queue page (never an outside address: that would make this page an open redirect)."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else queue_url(timer.partition.name, timer.queue_path)
