"""The Users page's queue grants and groups (admins only): give a grant, revoke one (after a
confirmation), set a user's tenant groups. Each action is one ``accounts.grants`` call, which
checks the rules and writes the audit event.

Kept apart from ``users.views`` (accounts, roles, tokens) so the two grow without touching each
other: the page shows this part through ``{% grants_panel %}`` (``templatetags.users_grants``),
and a refused form is shown again on a page of its own with the errors next to the fields.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from scheduler_admin.accounts import grants
from scheduler_admin.web.users.grant_forms import GrantForm, GroupsForm
from scheduler_admin.web.users.views import CONFIRMED, admin_only

BACK = "users"


@admin_only
@require_POST
def grant_give(request: HttpRequest) -> HttpResponse:
    """Give a grant (or change the role of the holder's grant on that queue)."""
    form = GrantForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = grants.give_grant(
                partition=data["partition"], queue_path=data["queue"], role=data["role"],
                user=data["user"], group=data["group"], actor=request.user,
            )  # fmt: skip
        except grants.GrantError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            grant = result.grant
            what = f"{grant.holder_text} is {grant.role} of {grant.queue.path} in "
            what += f"{grant.partition.name}"
            if result.created:
                messages.success(request, f"Granted: {what}.")
            elif result.changed:
                messages.success(request, f"Role changed: {what}.")
            else:
                messages.info(request, f"Nothing changed: {what} already.")
            return redirect(_back())
    return render(request, "web/users/grant_form.html", {"form": form}, status=400)


@admin_only
@require_POST
def grant_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke a grant after a confirmation (the holder loses the rights at once)."""
    grant = get_object_or_404(grants.grants(), pk=pk)
    what = f"{grant.role} of {grant.queue.path} in {grant.partition.name}"
    if request.POST.get("confirmed") != CONFIRMED:
        context = {
            "target": grant,
            "title": f"Revoke {what} from {grant.holder_text}?",
            "consequence": f"{grant.holder_text.capitalize()} can no longer read or change "
            f"{grant.queue.path} and the queues below it through this grant, from now on.",
            "button": "Revoke the grant",
            "action": request.path,
            "fields": {},
            "confirmed": CONFIRMED,
        }
        return render(request, "web/users/confirm.html", context)
    try:
        grants.revoke_grant(grant.pk, actor=request.user)
    except grants.GrantNotFound:
        messages.info(request, f"The grant ({what}) was already gone.")
    else:
        messages.success(request, f"Revoked {what} from {grant.holder_text}.")
    return redirect(_back())


@admin_only
@require_POST
def groups_set(request: HttpRequest) -> HttpResponse:
    """Set one user's tenant groups (the groups grants can be given to)."""
    form = GroupsForm(request.POST)
    if form.is_valid():
        target = get_object_or_404(get_user_model(), pk=form.cleaned_data["user"])
        names = form.cleaned_data["groups"]
        try:
            changed = grants.set_groups(target, names, actor=request.user)
        except grants.GrantError as exc:
            form.add_error("groups", str(exc))
        else:
            shown = ", ".join(grants.tenant_groups(target)) or "none"
            level = messages.success if changed else messages.info
            level(request, f"Groups of {target.get_username()}: {shown}.")
            return redirect(_back())
    return render(request, "web/users/grant_form.html", {"groups_form": form}, status=400)


def _back() -> str:
    return reverse(BACK) + "#grants"
