"""Forms of the Users page: they parse input only; the rules live in ``accounts.services``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.models import GrantRole
from scheduler_admin.accounts.roles import ROLES
from scheduler_admin.accounts.tokens import NAME_MAX_LENGTH
from scheduler_admin.base.limits import QUEUE_PATH_MAX_LENGTH, USERNAME_MAX_LENGTH
from scheduler_admin.queues.models import Partition

#: The role select's value for "no global role": the account holds queue grants only.
NO_ROLE = "none"
ROLE_CHOICES = [*((role, role) for role in ROLES), (NO_ROLE, "none: queue grants only")]


def chosen_role(value: str) -> str | None:
    """The role a select's value names (None: no global role)."""
    return None if value == NO_ROLE else value


class CreateUserForm(forms.Form):
    """A new account: a global role, or none and a queue grant (a tenant account, which sees
    and changes only that subtree). More grants are given in the Queue grants section."""

    username = forms.CharField(label="User name", max_length=USERNAME_MAX_LENGTH)
    email = forms.EmailField(label="Email (optional)", required=False)
    role = forms.ChoiceField(
        label="Role",
        choices=ROLE_CHOICES,
        help_text="A global role holds in every partition; without one, only the queue grant "
        "below.",
    )
    grant_partition = forms.ChoiceField(label="Queue grant: partition", required=False)
    grant_queue = forms.CharField(
        label="Queue grant: queue (and below)",
        required=False,
        max_length=QUEUE_PATH_MAX_LENGTH,
        help_text="Optional with a role, needed without one, e.g. root.team-a.",
    )
    grant_role = forms.ChoiceField(
        label="Queue grant: role on the queue",
        required=False,
        choices=[("", "no grant"), *GrantRole.choices],
    )
    password = forms.CharField(
        label="Password (optional)",
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to generate one; it is then shown once, after Create.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        partitions = list(Partition.objects.order_by("name").values_list("name", flat=True))
        self.fields["grant_partition"].choices = [(name, name) for name in partitions]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        queue, role = data.get("grant_queue", "").strip(), data.get("grant_role", "")
        data["grants"] = []
        if queue and not role:
            self.add_error("grant_role", "Choose the role the grant gives (operator or admin).")
        elif role and not queue:
            self.add_error("grant_queue", "Name the queue the grant is on, e.g. root.team-a.")
        elif queue and role:
            partition = data.get("grant_partition") or ""
            data["grants"] = [GrantSpec(partition, queue, role)]
        if data.get("role") == NO_ROLE and not data["grants"] and not self.has_error("grant_queue"):
            self.add_error(
                "grant_queue",
                "A user without a global role needs a queue grant (or choose a role).",
            )
        return data


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
