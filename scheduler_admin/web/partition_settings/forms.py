"""The partition settings form: the product's settings and YuniKorn's two preemption switches,
as ``PATCH partitions/{p}/`` takes them, plus the version read and a change comment."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from django import forms

from preemption.config import PartitionSettings
from preemption.durations import DurationError, format_duration, parse_whole_seconds
from scheduler_admin.base import limits
from scheduler_admin.queues.models import ApprovalMode, AskPolicy, EnforcementMode, Partition

STRATEGY_CHOICES = [
    ("single,multiple", "single, then multiple (default)"),
    ("multiple,single", "multiple, then single"),
    ("single", "single only"),
    ("multiple", "multiple only"),
]

#: The settings the form edits, in the order shown: every one but the name and YuniKorn's
#: kept keys.
FIELDS = tuple(
    field.name for field in fields(PartitionSettings) if field.name not in ("name", "extra")
)


class DurationInput(forms.Field):
    """A whole-second duration (``30s``, ``1h30m`` or plain seconds) -> seconds."""

    MAX_LENGTH = 40

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(widget=forms.TextInput(attrs={"maxlength": self.MAX_LENGTH}), **kwargs)

    def to_python(self, value: Any) -> int | None:
        text = "" if value is None else str(value).strip()
        if not text:
            return None
        if len(text) > self.MAX_LENGTH:
            raise forms.ValidationError(f"at most {self.MAX_LENGTH} characters")
        try:
            return parse_whole_seconds(text, field=self.label or "duration")
        except DurationError as exc:
            raise forms.ValidationError(exc.message) from None


class PartitionSettingsForm(forms.Form):
    version = forms.IntegerField(
        widget=forms.HiddenInput, min_value=0, max_value=limits.POSITIVE_INT_MAX
    )
    preemption_enabled = forms.BooleanField(
        required=False,
        label="Preemption enabled",
        help_text="YuniKorn's preemption.enabled: off, no ask or job preemption runs.",
    )
    quota_preemption_enabled = forms.BooleanField(
        required=False,
        label="Quota preemption enabled",
        help_text="A lowered max is enforced after the quota delay by preempting tasks.",
    )
    miss_percent = forms.IntegerField(
        min_value=0,
        max_value=100,
        label="Miss tolerance (%)",
        help_text="How far below a queue's new max a quota run may leave it.",
    )
    default_preemption_delay = DurationInput(
        label="Default preemption delay",
        help_text="How long an ask waits before its preemption is planned (queues may override).",
    )
    daemonset_preemption_delay = DurationInput(
        label="DaemonSet preemption delay",
        help_text="How long a required-node (DaemonSet) ask waits before preemption.",
    )
    ask_policy = forms.ChoiceField(
        choices=AskPolicy.choices,
        label="Ask policy",
        help_text="How an ask that is not a DaemonSet's or a job's is planned.",
    )
    victim_strategy = forms.ChoiceField(
        choices=STRATEGY_CHOICES,
        label="Victim strategy",
        help_text="Required-node preemption: which strategies are tried, in order.",
    )
    deviation_percent = forms.IntegerField(
        min_value=0,
        max_value=limits.DEVIATION_PERCENT_MAX,
        label="Deviation (%)",
        help_text="Strategy single: how far the one victim's size may be from the ask's.",
    )
    max_victims = forms.IntegerField(
        min_value=1,
        max_value=limits.MAX_VICTIMS_MAX,
        label="Max victims",
        help_text="Strategy multiple: the most tasks preempted on the node for one ask.",
    )
    soft_eviction = forms.BooleanField(
        required=False,
        label="Soft eviction for jobs",
        help_text="Job preemption labels its victims and lets their owners delete them, "
        "instead of evicting them.",
    )
    enforcement = forms.ChoiceField(
        choices=EnforcementMode.choices,
        label="Enforcement",
        help_text="Observe only: runs plan and record what they would evict, and evict nothing.",
    )
    max_evictions_per_minute = forms.IntegerField(
        min_value=0,
        max_value=limits.MAX_EVICTIONS_PER_MINUTE_MAX,
        label="Max evictions per minute",
        help_text="The most eviction orders the partition's runs create in any minute; "
        "0 is unlimited.",
    )
    approval = forms.ChoiceField(
        choices=ApprovalMode.choices,
        label="Approval of queue changes",
        help_text="Which queue changes need another admin's approval before they are saved.",
    )
    confirm_enforce = forms.BooleanField(
        required=False,
        label="I confirm switching from observe to enforce",
        help_text="Needed only to switch a partition that observes to enforce: its runs then "
        "evict.",
    )
    comment = forms.CharField(
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Comment",
        help_text="Why the change is made; kept in the config history. Required.",
        error_messages={"required": "A change comment is required to save."},
    )

    @classmethod
    def initial_for(cls, settings: PartitionSettings, version: int) -> dict[str, Any]:
        return {
            "version": version,
            "preemption_enabled": settings.preemption_enabled,
            "quota_preemption_enabled": settings.quota_preemption_enabled,
            "miss_percent": settings.miss_percent,
            "default_preemption_delay": format_duration(settings.default_preemption_delay),
            "daemonset_preemption_delay": format_duration(settings.daemonset_preemption_delay),
            "ask_policy": settings.ask_policy,
            "victim_strategy": ",".join(settings.victim_strategy),
            "deviation_percent": settings.deviation_percent,
            "max_victims": settings.max_victims,
            "soft_eviction": settings.soft_eviction,
            "enforcement": settings.enforcement,
            "max_evictions_per_minute": settings.max_evictions_per_minute,
            "approval": settings.approval,
        }

    def clean_comment(self) -> str:
        comment = self.cleaned_data.get("comment", "").strip()
        if not comment:
            raise forms.ValidationError("A change comment is required to save.")
        return comment

    def unconfirmed_enforce(self, partition: Partition) -> bool:
        """Whether this (valid) form switches an observing partition to enforce without the
        confirmation: a change that starts evicting is confirmed, as the console confirms
        every change that evicts."""
        switching = partition.observes and self.cleaned_data["enforcement"] == "enforce"
        return switching and not self.cleaned_data.get("confirm_enforce")

    def settings(self) -> dict[str, Any]:
        """The settings as ``update_partition_settings`` takes them."""
        values = {name: self.cleaned_data[name] for name in FIELDS}
        values["victim_strategy"] = values["victim_strategy"].split(",")
        return values
