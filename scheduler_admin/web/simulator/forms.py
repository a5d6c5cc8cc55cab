"""The simulator's form: a policy and what it acts on (a queue and a hypothetical max, a pending
ask, or a job), plus the tunables of the required-node policy.

The choices are read from the partition when the form is built, and the chosen ask, job or
queue is checked to exist, so a stale or hand-made request gets an inline error, not a 500.
Quantities are parsed with the queue page's resource rows (the same parser and messages).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms import formset_factory

from preemption.model import Options
from scheduler_admin.accounts.permissions import SIMULATE, can
from scheduler_admin.base import limits
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.enforcement.previews import simulation_options
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.common import human_resources
from scheduler_admin.web.queue_pages.forms import ResourceRowForm, ResourceRows

#: Most asks offered in the select; a partition with more is rare and still reachable by id.
ASK_CHOICES_LIMIT = 500
WAITING = [AskState.PENDING, AskState.RESERVED]

POLICIES = [
    ("quota", "Quota: lower a queue's max"),
    ("ask", "Ask: plan a pending ask with its policy"),
    ("job", "Job: plan a gang job"),
]
STRATEGIES = [
    ("single,multiple", "single, then multiple"),
    ("multiple,single", "multiple, then single"),
    ("single", "single only"),
    ("multiple", "multiple only"),
]


class MaxRowForm(ResourceRowForm):
    """A row of the hypothetical max: resource name and quantity (empty: unlimited)."""

    guaranteed = None  # only the max is simulated


MaxFormSet = formset_factory(MaxRowForm, formset=ResourceRows, extra=1)


class SimulatorForm(forms.Form):
    policy = forms.ChoiceField(choices=POLICIES, widget=forms.RadioSelect, initial="quota")
    queue = forms.ChoiceField(required=False, label="Queue")
    ask = forms.CharField(
        required=False, max_length=limits.CLUSTER_ID_MAX_LENGTH, label="Pending ask"
    )
    job = forms.CharField(required=False, max_length=limits.CLUSTER_ID_MAX_LENGTH, label="Job")
    victim_strategy = forms.ChoiceField(
        choices=STRATEGIES, required=False, label="Victim strategy (required-node asks)"
    )
    deviation_percent = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=limits.DEVIATION_PERCENT_MAX,
        label="Deviation percent (single strategy)",
    )
    max_victims = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=limits.MAX_VICTIMS_MAX,
        label="Max victims (multiple strategy)",
    )

    def __init__(self, *args: Any, partition: Partition, user: Any = None, **kwargs: Any) -> None:
        """``user``: offer only the queues they may simulate on, and the asks and jobs only
        when they may simulate those (a queue grant's holder may not: their plans reach every
        queue of the partition, and the lists would name other tenants' asks)."""
        super().__init__(*args, **kwargs)
        self.partition = partition
        # Left empty, a tunable is the partition's own (what the live loop plans with).
        own = partition.settings_config()
        self.fields["victim_strategy"].choices = [
            ("", f"the partition's ({', '.join(own.victim_strategy)})"),
            *STRATEGIES,
        ]
        self.fields["deviation_percent"].widget.attrs["placeholder"] = (
            f"the partition's: {own.deviation_percent}"
        )
        self.fields["max_victims"].widget.attrs["placeholder"] = (
            f"the partition's: {own.max_victims}"
        )
        paths = [q.path for q in partition.current_config().queues if q.parent is not None]
        if user is not None:
            paths = [p for p in paths if can(user, SIMULATE, partition, p)]
        self.fields["queue"].choices = [("", "— choose a queue —"), *((p, p) for p in paths)]
        waiting = Ask.objects.filter(partition=partition, state__in=WAITING)
        if user is not None and not can(user, SIMULATE, partition):
            waiting = waiting.none()
        asks = waiting.order_by("external_id").values_list(
            "external_id", "queue_path", "resources", "priority"
        )[:ASK_CHOICES_LIMIT]
        self.fields["ask"].widget = forms.Select(
            choices=[
                ("", "— choose a pending ask —"),
                *(
                    (ask_id, f"{ask_id} · {queue} · {_short(amounts)} · priority {priority}")
                    for ask_id, queue, amounts, priority in asks
                ),
            ]
        )
        jobs = waiting.exclude(job="").order_by("job").values_list("job", flat=True).distinct()
        self.fields["job"].widget = forms.Select(
            choices=[("", "— choose a job —"), *((job, job) for job in jobs[:ASK_CHOICES_LIMIT])]
        )

    def clean(self) -> dict[str, Any]:
        """The field the chosen policy needs must be there and name something that exists."""
        data = super().clean()
        policy = data.get("policy")
        waiting = Ask.objects.filter(partition=self.partition, state__in=WAITING)
        if policy == "quota" and not data.get("queue"):
            self.add_error("queue", "Choose the queue whose max to simulate.")
        elif policy == "ask":
            ask = data.get("ask", "").strip()
            if not ask:
                self.add_error("ask", "Choose a pending ask.")
            elif not waiting.filter(external_id=ask).exists():
                self.add_error("ask", f"There is no pending ask {ask!r} in this partition.")
        elif policy == "job":
            job = data.get("job", "").strip()
            if not job:
                self.add_error("job", "Choose a job.")
            elif not waiting.filter(job=job).exists():
                self.add_error("job", f"No pending ask belongs to job {job!r}.")
        return data

    def options(self) -> Options:
        """The engine's options, the partition's own where the form leaves a tunable empty."""
        strategy = self.cleaned_data.get("victim_strategy")
        return simulation_options(
            self.partition,
            victim_strategy=strategy.split(",") if strategy else None,
            deviation_percent=self.cleaned_data.get("deviation_percent"),
            max_victims=self.cleaned_data.get("max_victims"),
        )


def _short(amounts: dict[str, int]) -> str:
    return ", ".join(f"{name} {short}" for name, short, _ in human_resources(amounts)) or "nothing"
