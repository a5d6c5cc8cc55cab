"""Forms of the Users page: they parse input only; the rules live in ``accounts.services``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from scheduler_admin.accounts.roles import ROLES
from scheduler_admin.accounts.tokens import NAME_MAX_LENGTH
from scheduler_admin.limits import USERNAME_MAX_LENGTH

ROLE_CHOICES = [(role, role) for role in ROLES]


class CreateUserForm(forms.Form):
    username = forms.CharField(label="User name", max_length=USERNAME_MAX_LENGTH)
    email = forms.EmailField(label="Email (optional)", required=False)
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES)
    password = forms.CharField(
        label="Password (optional)",
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to generate one; it is then shown once, after Create.",
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES)


class TokenForm(forms.Form):
    """Issue an API token: a name (a token of that name is replaced) and an expiry in days."""

    name = forms.CharField(
        label="Token name",
        max_length=NAME_MAX_LENGTH,
        help_text="What uses it, e.g. cluster-agent or nightly-report. A token with the same "
        "name is replaced.",
    )
    expires_days = forms.IntegerField(
        label="Expires after (days)",
        min_value=0,
        max_value=3650,
        help_text="0: never expires.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["expires_days"].initial = settings.API_TOKEN_EXPIRY_DAYS
