"""Schemas of the answers the queue views build as plain dicts (``_queue_row``, ``plan_json``,
the dry run, validate and revision bodies), so the OpenAPI schema shows their real shape.

These serializers only document: nothing renders through them. ``tests/api/
test_schema_matches_server.py`` validates real answers against the schema they produce.
"""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from scheduler_admin.api.enforcement.serializers import (
    ExplanationCountSerializer,
    ExplanationSerializer,
    NominationsField,
)
from scheduler_admin.api.queues.serializers import (
    ConfigSerializer,
    RevisionSerializer,
)
from scheduler_admin.base.api.fields import ResourcesField, TargetsField
from scheduler_admin.enforcement.candidates import INLINE_EXPLANATIONS


def _resources(help_text: str = "") -> ResourcesField:
    return ResourcesField(read_only=True, help_text=help_text or None)


class _Source(serializers.Serializer):
    source = serializers.CharField(
        allow_null=True,
        help_text='Where the value comes from: a queue path, "partition", or null (default).',
    )


class EffectivePolicySerializer(_Source):
    value = serializers.ChoiceField(choices=["default", "fence", "disabled"])


class EffectiveDelaySerializer(_Source):
    seconds = serializers.IntegerField()
    duration = serializers.CharField(help_text="As written where it comes from, e.g. 60s.")


class EffectiveSerializer(serializers.Serializer):
    max = _resources("Component-wise minimum of max along the path.")
    preemption_policy = EffectivePolicySerializer()
    quota_preemption_delay = EffectiveDelaySerializer()
    preemption_delay = EffectiveDelaySerializer()


class QueueTimerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    due_at = serializers.DateTimeField()
    deferred = serializers.BooleanField(help_text="Waiting for a related run to end.")


class QueueRowSerializer(serializers.Serializer):
    """One queue: its own values, effective values, usage, pending asks, version and timer."""

    path = serializers.CharField()
    name = serializers.CharField()
    parent = serializers.CharField(allow_null=True)
    is_leaf = serializers.BooleanField()
    guaranteed = _resources()
    max = _resources()
    properties = serializers.DictField(child=serializers.CharField())
    effective = EffectiveSerializer()
    usage = _resources("Running tasks of the queue and its descendants.")
    pending = _resources("Pending asks of the queue and its descendants.")
    version = serializers.IntegerField(allow_null=True)
    quota_timer = QueueTimerSerializer(allow_null=True, help_text="The pending quota timer.")


class PlanSerializer(serializers.Serializer):
    """A plan of the engine: victims in the order taken and every candidate's explanation."""

    # (SPEC 4.0.)

    policy = serializers.CharField()
    victims = serializers.ListField(child=serializers.CharField(), help_text="Allocation ids.")
    outcome = serializers.CharField(
        help_text="not_triggered, complete, best_effort, short or does_not_help."
    )
    node = serializers.CharField(allow_null=True)
    nominations = NominationsField()
    targets = TargetsField()
    freed = _resources()
    explanations = ExplanationSerializer(
        many=True,
        help_text=f"The first {INLINE_EXPLANATIONS:,} candidates' explanations by candidate id "
        "(every one with `?explanations=all`).",
    )
    explanation_count = serializers.IntegerField(
        help_text="How many candidates the plan explained."
    )
    explanation_summary = ExplanationCountSerializer(
        many=True, help_text="Candidates per decision (`accepted`) and reason."
    )


class QueuePlanSerializer(PlanSerializer):
    queue = serializers.CharField(help_text="The queue whose quota timer would run this plan.")


class PreviewTimerSerializer(serializers.Serializer):
    queue = serializers.CharField()
    due_at = serializers.DateTimeField()
    delay_seconds = serializers.IntegerField()


class YuniKornFactsSerializer(serializers.Serializer):
    yunikorn_min_version = serializers.CharField(allow_null=True)
    yunikorn_min_version_reasons = serializers.ListField(child=serializers.CharField())
    warnings = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class DryRunSerializer(YuniKornFactsSerializer):
    """``?dry_run=true``: the change is valid; the quota timers it would start or reset and the
    plan each would run. Nothing was saved."""

    dry_run = serializers.BooleanField()
    valid = serializers.BooleanField()
    timers = PreviewTimerSerializer(many=True)
    plans = QueuePlanSerializer(many=True)
    apply_at = serializers.DateTimeField(
        required=False, help_text="With `apply_at`: the time the change is scheduled for."
    )
    note = serializers.CharField(
        required=False,
        help_text="With `apply_at`: this preview is of the change saved now; it is judged "
        "again at its time.",
    )


class ChangeSerializer(serializers.Serializer):
    """One difference: a partition setting (``queue`` null) or a queue's field, quantities as
    exact strings and delays as durations."""

    queue = serializers.CharField(allow_null=True)
    field = serializers.CharField(help_text="e.g. max.memory, properties.preemption.delay.")
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class ValidateResultSerializer(YuniKornFactsSerializer):
    valid = serializers.BooleanField()
    changes = ChangeSerializer(many=True, help_text="What saving the body would change.")


class RevisionDetailSerializer(RevisionSerializer):
    against = serializers.IntegerField(allow_null=True, help_text="The revision diffed against.")
    diff = ChangeSerializer(many=True)
    config = ConfigSerializer(help_text="The whole config as of this revision.")

    class Meta(RevisionSerializer.Meta):
        fields = [*RevisionSerializer.Meta.fields, "against", "diff", "config"]


def saved_or_dry_run(saved: type[serializers.Serializer], name: str) -> PolymorphicProxySerializer:
    """A write's 200: what was saved, or with ``?dry_run=true`` the preview."""
    return PolymorphicProxySerializer(
        component_name=name,
        serializers=[saved, DryRunSerializer],
        resource_type_field_name=None,
    )
