"""Cancelling a quota timer (operators): the queue page's and the dashboard's cancel buttons
open this confirmation page, where the operator may say why; the comment goes into the
``timer.cancelled`` audit event (``enforcement.timers.cancel_timer``).

GET shows the timer and the form; POST cancels and goes back to where the button was
(``next``, a local URL; otherwise the timer's queue page). No JavaScript involved.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from preemption.durations import format_duration
from scheduler_admin import limits
from scheduler_admin.accounts.roles import OPERATOR
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.web.common import queue_url, require_role


class CancelTimerForm(forms.Form):
    comment = forms.CharField(
        label="Comment (optional, kept in the audit log)",
        required=False,
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


@require_http_methods(["GET", "POST"])
def timer_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Steps: operators only (403 otherwise, GET included: the page is part of the action);
    a timer that already ended sends the user back with a message; GET renders the
    confirmation; a valid POST cancels with the comment and redirects back."""
    require_role(request.user, OPERATOR)
    timer = get_object_or_404(QuotaTimer.objects.select_related("partition"), pk=pk)
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


def _back(request: HttpRequest, timer: QuotaTimer) -> str:
    """Where the cancel button was: ``next`` when it is a URL of this site, else the timer's
    queue page (never an outside address: that would make this page an open redirect)."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else queue_url(timer.partition.name, timer.queue_path)
