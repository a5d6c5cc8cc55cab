"""Forms of the Users page: they parse input only; the rules live in ``accounts.services``."""

from __future__ import annotations

from django import forms

from scheduler_admin.accounts.roles import ROLES
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
