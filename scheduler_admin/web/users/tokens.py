"""API tokens in the console: every signed-in user lists, issues and revokes their own tokens
under ``/account/tokens/``; admins do the same for any account under ``/users/<pk>/tokens/``.

Both pages are one view each over a ``Scope`` (whose tokens, the URLs of its forms), so the rules
are the same: a new key is shown once in the POST's own answer (never cached, never stored),
revoking asks for confirmation first (a form that works without JavaScript), and every change
is one ``accounts.services`` call with its audit event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from scheduler_admin.accounts import services
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.web.users.forms import TokenForm
from scheduler_admin.web.users.views import CONFIRMED, admin_only


@dataclass(frozen=True)
class Scope:
    """Whose tokens a page shows, and where its forms post."""

    user: AbstractUser
    own: bool
    list_url: str
    issue_url: str
    revoke_url_name: str
    revoke_args: tuple[int, ...]

    def revoke_url(self, token: ApiToken) -> str:
        return reverse(self.revoke_url_name, args=(*self.revoke_args, token.pk))


def _own(request: HttpRequest) -> Scope:
    return Scope(
        user=request.user,  # type: ignore[arg-type]  # LoginRequiredMiddleware: signed in
        own=True,
        list_url=reverse("my-tokens"),
        issue_url=reverse("my-tokens-issue"),
        revoke_url_name="my-tokens-revoke",
        revoke_args=(),
    )


def _of(pk: int) -> Scope:
    user = get_object_or_404(get_user_model(), pk=pk)
    return Scope(
        user=user,
        own=False,
        list_url=reverse("users-tokens", args=(pk,)),
        issue_url=reverse("users-tokens-issue", args=(pk,)),
        revoke_url_name="users-tokens-revoke",
        revoke_args=(pk,),
    )


@require_GET
def my_tokens(request: HttpRequest) -> HttpResponse:
    return _page(request, _own(request), TokenForm())


@require_POST
def my_token_issue(request: HttpRequest) -> HttpResponse:
    return _issue(request, _own(request))


@require_POST
def my_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    return _revoke(request, _own(request), token_id)


@admin_only
@require_GET
def user_tokens(request: HttpRequest, pk: int) -> HttpResponse:
    return _page(request, _of(pk), TokenForm())


@admin_only
@require_POST
def user_token_issue(request: HttpRequest, pk: int) -> HttpResponse:
    return _issue(request, _of(pk))


@admin_only
@require_POST
def user_token_revoke(request: HttpRequest, pk: int, token_id: int) -> HttpResponse:
    return _revoke(request, _of(pk), token_id)


def _page(request: HttpRequest, scope: Scope, form: TokenForm, *, status: int = 200):
    now = timezone.now()
    rows = [
        {"token": token, "expired": token.expired(now), "revoke_url": scope.revoke_url(token)}
        for token in services.tokens_of(scope.user)
    ]
    context = {"scope": scope, "target": scope.user, "rows": rows, "form": form}
    return render(request, "web/users/tokens.html", context, status=status)


def _issue(request: HttpRequest, scope: Scope) -> HttpResponse:
    form = TokenForm(request.POST)
    if form.is_valid():
        days = form.cleaned_data["expires_days"]
        try:
            key = services.issue_token(
                scope.user,
                actor=request.user,
                name=form.cleaned_data["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                no_expiry=days == 0,
            )
        except services.AccountError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            context = {
                "target": scope.user,
                "what": "API token",
                "secret": key,
                "example_url": request.build_absolute_uri(reverse("api-partitions")),
                "back_url": scope.list_url,
                "token": ApiToken.objects.get(user=scope.user, name=form.cleaned_data["name"]),
            }
            response = render(request, "web/users/secret.html", context)
            add_never_cache_headers(response)
            return response
    return _page(request, scope, form, status=400)


def _revoke(request: HttpRequest, scope: Scope, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=scope.user)
    whose = "your" if scope.own else f"{scope.user.get_username()}'s"
    if request.POST.get("confirmed") != CONFIRMED:
        context = {
            "target": scope.user,
            "title": f"Revoke {whose} API token {token.name!r} ({token.prefix}…)?",
            "consequence": "The token stops working at once: every request using it gets 401.",
            "button": "Revoke the token",
            "action": request.path,
            "fields": {},
            "confirmed": CONFIRMED,
            "back_url": scope.list_url,
        }
        return render(request, "web/users/confirm.html", context)
    if services.revoke_token(scope.user, actor=request.user, token_id=token.pk):
        messages.success(request, f"Revoked {whose} API token {token.name!r}.")
    return redirect(scope.list_url)
