"""Forms of the Users page's grants part: they parse input only; the rules (the queue exists,
one holder, no role group) live in ``accounts.grants``."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from scheduler_admin.accounts.grants import GROUP_NAME_MAX_LENGTH
from scheduler_admin.accounts.models import GrantRole
from scheduler_admin.base.limits import (
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from scheduler_admin.queues.models import Partition


class GrantForm(forms.Form):
    partition = forms.CharField(label="Grant in partition", max_length=PARTITION_NAME_MAX_LENGTH)
    queue = forms.CharField(
        label="Queue (and below)",
        max_length=QUEUE_PATH_MAX_LENGTH,
        help_text="The queue and every queue below it, e.g. root.team-a.",
    )
    role = forms.ChoiceField(label="Role on the queue", choices=GrantRole.choices)
    user = forms.CharField(label="Holder: a user", max_length=USERNAME_MAX_LENGTH, required=False)
    group = forms.CharField(label="or a group", max_length=GROUP_NAME_MAX_LENGTH, required=False)

    def __init__(self, *args: object, **kwargs: object) -> None:
        # Ids of their own: the Users page holds other forms with a "user" or "role" field.
        kwargs.setdefault("auto_id", "grant-%s")
        super().__init__(*args, **kwargs)
        partitions = list(Partition.objects.order_by("name").values_list("name", flat=True))
        self.fields["partition"].widget = forms.Select(choices=[(p, p) for p in partitions])
        users = get_user_model().objects.order_by("username").values_list("username", flat=True)
        self.fields["user"].widget = forms.Select(
            choices=[("", "— a user —"), *((name, name) for name in users)]
        )

    def clean(self) -> dict[str, object]:
        data = super().clean()
        if bool(data.get("user")) == bool(data.get("group")):
            self.add_error("group", "Name a user or a group (one of them).")
        return data


class GroupsForm(forms.Form):
    user = forms.IntegerField(label="Member", min_value=1)
    groups = forms.CharField(
        label="Groups",
        required=False,
        max_length=2000,
        help_text="Comma-separated, e.g. team-a, team-b. Empty: no group.",
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("auto_id", "groups-%s")
        super().__init__(*args, **kwargs)
        users = get_user_model().objects.order_by("username").values_list("pk", "username")
        self.fields["user"].widget = forms.Select(choices=list(users))

    def clean_groups(self) -> list[str]:
        return [name.strip() for name in self.cleaned_data["groups"].split(",") if name.strip()]
