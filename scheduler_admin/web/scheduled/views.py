"""Cancelling a scheduled change from the console (its author or an admin): the Cancel button
of the lists on the queue page and the dashboard POSTs here; the change is cancelled (checked
again in the write, ``queues.scheduled.cancel_scheduled_change``) and the user goes back to the
page the button was on (``next`` in the body, a local URL; otherwise the dashboard).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.scheduled_access import cancel_authorizer, may_cancel
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import Partition, ScheduledChange
from scheduler_admin.web.common import partition_or_404, require


@require_POST
def cancel(request: HttpRequest, partition: str, pk: int) -> HttpResponse:
    """Steps: the change must be one the user reads (403 for a grant holder outside their
    subtrees, 404 otherwise); its author or an admin may cancel (403 with the reason
    otherwise); one that ended meanwhile is reported, not an error page."""
    part = partition_or_404(partition)
    visible = scheduled.visible_to(
        ScheduledChange.objects.filter(partition=part).select_related("partition"),
        permissions.read_scope(request.user),
    )
    change = visible.filter(pk=pk).first()
    if change is None:
        if permissions.is_scoped(request.user):
            what = f"scheduled change {pk}"
            raise PermissionDenied(permissions.outside_reason(request.user, part.name, what))
        require(request.user, permissions.READ, part.name, None)
        raise Http404(f"No scheduled change {pk}.")
    decision = may_cancel(request.user, change)
    if not decision:
        raise PermissionDenied(decision.reason)
    try:
        scheduled.cancel_scheduled_change(
            part.name, change.pk, actor=request.user,
            authorize=cancel_authorizer(request.user, change),
        )  # fmt: skip
    except scheduled.NotPending as exc:
        messages.error(request, f"Not cancelled: {exc}.")
    else:
        messages.success(
            request, f"Cancelled scheduled change {change.pk} ({scheduled.describe(change)})."
        )
    return redirect(_back(request, part))


def _back(request: HttpRequest, partition: Partition) -> str:
    target = request.POST.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    if target and safe:
        return target
    return reverse("dashboard") + "?" + urlencode({"partition": partition.name})
