"""The Users page (admins only, GET and POST): list the accounts, create one, change a role,
deactivate or reactivate. API tokens have pages of their own (``web.users.tokens``).

Views are thin: each action is one ``accounts.services`` call, which checks the rules (nobody
locks the console out) and writes the audit event. Every action is a POST to its own URL;
destructive ones (deactivate, a role downgrade) first answer with a
confirmation page whose form posts the same fields again with ``confirmed=yes``, which works
without JavaScript. A generated password or a new token is shown once, in the POST's own
response (never stored in a message or the session, never cached).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from scheduler_admin.accounts import services
from scheduler_admin.accounts.permissions import ADMINISTER
from scheduler_admin.accounts.roles import role_of
from scheduler_admin.web.common import View, require
from scheduler_admin.web.users.forms import ROLE_CHOICES, CreateUserForm, RoleForm, chosen_role

CONFIRMED = "yes"

#: The create form's field for each field ``services.AccountError`` names.
FORM_FIELDS = {
    "username": "username",
    "email": "email",
    "password": "password",
    "role": "role",
    "grants": "grant_queue",
}


def admin_only(view: View) -> View:
    """403 for everyone below admin, whatever the method (the page lists every account)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        require(request.user, ADMINISTER)
        return view(request, *args, **kwargs)

    return wrapper


@admin_only
@require_GET
def user_list(request: HttpRequest) -> HttpResponse:
    return _render_list(request, CreateUserForm())


@admin_only
@require_POST
def user_create(request: HttpRequest) -> HttpResponse:
    """Create the account (with its queue grant, if one is given); a generated password is
    shown once on the answer page."""
    form = CreateUserForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        role = chosen_role(data["role"])
        try:
            created = services.create_user(
                data["username"],
                role=role,
                actor=request.user,
                email=data["email"],
                password=data["password"] or None,
                grants=data["grants"],
            )
        except services.AccountError as exc:
            form.add_error(FORM_FIELDS.get(exc.field), str(exc))
        else:
            name = created.user.get_username()
            if created.generated_password is not None:
                return _secret(request, created.user, "password", created.generated_password)
            holds = f"the {role} role" if role is not None else "no global role"
            grants = ", ".join(spec.words for spec in data["grants"])
            if grants:
                holds += f" and the queue grant {grants}"
            messages.success(request, f"Created {name} with {holds}.")
            return redirect("users")
    return _render_list(request, form, status=400)


@admin_only
@require_POST
def user_role(request: HttpRequest, pk: int) -> HttpResponse:
    target = _user_or_404(pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles: nothing was changed.")
        return redirect("users")
    role = chosen_role(form.cleaned_data["role"])
    name = target.get_username()
    shown = role or "none (queue grants only)"
    if services.is_downgrade(target, role) and not _confirmed(request):
        return _confirm(
            request,
            target,
            title=f"Change the role of {name} from {role_of(target)} to {shown}?",
            consequence=f"{name} loses the rights of the {role_of(target)} role at once"
            + ("; what their queue grants give stays." if role is None else "."),
            button=f"Change to {role or 'none'}",
            fields={"role": form.cleaned_data["role"]},
        )
    return _act(
        request,
        lambda: services.change_role(target, role, actor=request.user),
        done=f"{name} now has the {role} role." if role else f"{name} now has no global role.",
        unchanged=f"{name} already has the {role} role."
        if role
        else f"{name} already has no global role.",
    )


@admin_only
@require_POST
def user_deactivate(request: HttpRequest, pk: int) -> HttpResponse:
    target = _user_or_404(pk)
    name = target.get_username()
    if not _confirmed(request):
        return _confirm(
            request,
            target,
            title=f"Deactivate {name}?",
            consequence=f"{name} can no longer sign in, their open sessions end and their API "
            "tokens are deleted. You can reactivate the account later (without the tokens).",
            button=f"Deactivate {name}",
        )
    return _act(
        request,
        lambda: services.set_active(target, False, actor=request.user),
        done=f"Deactivated {name}.",
        unchanged=f"{name} was already deactivated.",
    )


@admin_only
@require_POST
def user_reactivate(request: HttpRequest, pk: int) -> HttpResponse:
    target = _user_or_404(pk)
    name = target.get_username()
    return _act(
        request,
        lambda: services.set_active(target, True, actor=request.user),
        done=f"Reactivated {name}.",
        unchanged=f"{name} was already active.",
    )


def _user_or_404(pk: int) -> AbstractUser:
    return get_object_or_404(get_user_model(), pk=pk)


def _confirmed(request: HttpRequest) -> bool:
    return request.POST.get("confirmed") == CONFIRMED


def _act(
    request: HttpRequest, action: Callable[[], bool], *, done: str, unchanged: str
) -> HttpResponse:
    """Run one service call and say what happened (a refusal is an error message, not a 500)."""
    try:
        changed = action()
    except services.AccountError as exc:
        messages.error(request, f"{exc} Nothing was changed.")
    else:
        if changed:
            messages.success(request, done)
        else:
            messages.info(request, unchanged)
    return redirect("users")


def _confirm(
    request: HttpRequest,
    target: AbstractUser,
    *,
    title: str,
    consequence: str,
    button: str,
    fields: dict[str, str] | None = None,
) -> HttpResponse:
    """The confirmation step: the same POST again, with ``confirmed=yes``."""
    context = {
        "target": target,
        "title": title,
        "consequence": consequence,
        "button": button,
        "action": request.path,
        "fields": fields or {},
        "confirmed": CONFIRMED,
    }
    return render(request, "web/users/confirm.html", context)


def _secret(request: HttpRequest, target: AbstractUser, what: str, secret: str) -> HttpResponse:
    """The one time a password or token is shown: not cached, not stored anywhere."""
    context = {
        "target": target,
        "what": what,
        "secret": secret,
        "example_url": request.build_absolute_uri(reverse("api-partitions")),
    }
    response = render(request, "web/users/secret.html", context)
    add_never_cache_headers(response)
    return response


def _render_list(request: HttpRequest, form: CreateUserForm, *, status: int = 200) -> HttpResponse:
    rows = [
        {
            "user": user,
            "role": role_of(user),
            "grants": list(user.queue_grants.all()),
            "tokens": list(user.api_tokens.all()),
        }
        for user in services.users()
    ]
    context = {"rows": rows, "form": form, "role_choices": ROLE_CHOICES}
    return render(request, "web/users/list.html", context, status=status)
