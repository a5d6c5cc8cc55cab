"""Passwords in the console: every user with a password changes their own under
``/account/password/`` (the current one asked first); an admin gives another user a new generated
password from the Users page (after a confirmation, shown once). Both are one
``accounts.services`` call with its audit event (``user.password_changed``); the Django admin
no longer changes passwords (``web.admin_site``)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from scheduler_admin.accounts import services
from scheduler_admin.web.users.views import (
    _confirm,
    _confirmed,
    _secret,
    _user_or_404,
    admin_only,
)


class PasswordForm(forms.Form):
    old_password = forms.CharField(
        label="Current password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )
    new_password = forms.CharField(
        label="New password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    new_password_again = forms.CharField(
        label="New password, again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, object]:
        data = super().clean()
        if data.get("new_password") and data.get("new_password_again") != data["new_password"]:
            self.add_error("new_password_again", "The two new passwords differ.")
        return data


@require_http_methods(["GET", "POST"])
def my_password(request: HttpRequest) -> HttpResponse:
    """Change your own password; your other sessions end, this one stays."""
    user = request.user
    form = PasswordForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                services.change_password(
                    user,  # type: ignore[arg-type]  # LoginRequiredMiddleware: signed in
                    old_password=form.cleaned_data["old_password"],
                    new_password=form.cleaned_data["new_password"],
                    actor=user,
                )
            except services.AccountError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                user.refresh_from_db()
                update_session_auth_hash(request, user)
                messages.success(request, "Your password was changed; other sessions ended.")
                return redirect("my-password")
    context = {"form": form, "usable": user.has_usable_password()}
    return render(request, "web/users/password.html", context, status=status)


@admin_only
@require_POST
def user_password_reset(request: HttpRequest, pk: int) -> HttpResponse:
    """Give another user a new generated password (asked first), shown once."""
    target = _user_or_404(pk)
    name = target.get_username()
    if not _confirmed(request):
        return _confirm(
            request,
            target,
            title=f"Give {name} a new password?",
            consequence=f"{name}'s current password stops working and their open sessions end. "
            "The new one is shown to you once, to pass on.",
            button=f"Reset the password of {name}",
        )
    try:
        password = services.reset_password(target, actor=request.user)
    except services.AccountError as exc:
        messages.error(request, f"{exc} Nothing was changed.")
        return redirect("users")
    return _secret(request, target, "password", password)
