"""Users page: unlock sign-in after failed attempts (admins). The list is the page's "Sign-in
lockouts" card; each lock in force has an Unlock button posting what it locks."""

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
    """POST ``user=<name>`` and/or ``address=<ip>``: forget those failed sign-ins (a user name
    from every address, an address for every user name, or the pair); audited with the locks it
    lifted."""
    username = request.POST.get("user", "").strip() or None
    address = request.POST.get("address", "").strip() or None
    if username is None and address is None:
        messages.error(request, "Name a user name or an address (or both) to unlock.")
        return redirect("users")
    try:
        done = signin.unlock(username=username, address=address, actor=request.user)
    except ValueError as exc:
        messages.error(request, f"{exc} Nothing was changed.")
        return redirect("users")
    if done.lifted:
        lifted = "; ".join(lockout.words for lockout in done.lifted)
        messages.success(request, f"Unlocked {lifted}: signing in from there works again.")
    elif done.counters_removed:
        messages.info(request, "No lock was in force; its failed sign-ins are forgotten.")
    else:
        messages.info(request, "There were no failed sign-ins to forget.")
    return redirect("users")
