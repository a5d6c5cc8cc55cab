"""Users page: unlock a user name or an address locked out after failed sign-ins (admins;
issue 16, part "auth"). The list is the page's "Sign-in lockouts" card."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from scheduler_admin.accounts import signin
from scheduler_admin.web.users.views import admin_only


@admin_only
@require_POST
def unlock(request: HttpRequest) -> HttpResponse:
    """POST ``user=<name>`` or ``address=<ip>``: forget its failed sign-ins (audited)."""
    username = request.POST.get("user") or None
    address = request.POST.get("address") or None
    if (username is None) == (address is None):
        messages.error(request, "Name one user name or one address to unlock.")
        return redirect("users")
    removed = signin.unlock(username=username, address=address, actor=request.user)
    what = f"user name {username}" if username else f"address {address}"
    if removed:
        messages.success(request, f"Unlocked {what}: it may sign in again.")
    else:
        messages.info(request, f"{what.capitalize()} had no failed sign-ins to forget.")
    return redirect("users")
