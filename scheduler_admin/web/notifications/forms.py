"""The Notifications page's form: it parses input only; the rules (which queues, who may use a
channel) live in ``notifications.services``, whose field errors are shown beside the fields."""

from __future__ import annotations

from typing import Any

from django import forms

from scheduler_admin.base.limits import QUEUE_PATH_MAX_LENGTH
from scheduler_admin.notifications.events import EventKind
from scheduler_admin.notifications.services import SubscriptionSpec

#: The events a new subscription starts with ticked.
DEFAULT_KINDS = [
    EventKind.TIMER_STARTED, EventKind.RUN_FINISHED_WITH_VICTIMS, EventKind.RUN_SHORT,
    EventKind.RUN_DOES_NOT_HELP, EventKind.RUN_FAILED,
]  # fmt: skip


class SubscriptionForm(forms.Form):
    """Subscribe to events on a queue or a subtree, by e-mail and (admins) to a channel."""

    partition = forms.ChoiceField(label="Partition")
    queue_path = forms.CharField(
        label="Queue",
        max_length=QUEUE_PATH_MAX_LENGTH,
        help_text="Its full path, e.g. root.team-a.",
    )
    subtree = forms.BooleanField(
        label="Also every queue below it (the subtree)", required=False, initial=True
    )
    kinds = forms.MultipleChoiceField(
        label="Events",
        choices=EventKind.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=DEFAULT_KINDS,
        error_messages={"required": "Choose at least one event."},
    )
    email = forms.BooleanField(label="E-mail me", required=False, initial=True)
    channel = forms.TypedChoiceField(
        label="Also post to the channel", required=False, coerce=int, empty_value=None
    )

    def __init__(
        self,
        *args: Any,
        partitions: list[str],
        channels: list[tuple[int, str]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["partition"].choices = [(name, name) for name in partitions]
        if channels:
            self.fields["channel"].choices = [("", "none"), *channels]
        else:
            del self.fields["channel"]

    def spec(self) -> SubscriptionSpec:
        data = self.cleaned_data
        return SubscriptionSpec(
            partition=data["partition"], queue_path=data["queue_path"], kinds=data["kinds"],
            subtree=data["subtree"], email=data["email"], channel=data.get("channel"),
        )  # fmt: skip


class EmailForm(forms.Form):
    """The signed-in user's own e-mail address, where their e-mail subscriptions go (empty:
    none). Checked again by ``accounts.services.set_email``."""

    email = forms.EmailField(label="E-mail address", required=False, max_length=254)
