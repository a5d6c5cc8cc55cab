"""Serializers of the live loop's API: quota timers, preemption runs and eviction orders."""

from __future__ import annotations

import math

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduler_admin.api.fields import ResourcesField, TargetsField
from scheduler_admin.api.strict import StrictSerializer
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.limits import COMMENT_MAX_LENGTH


class TimerSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue_path", read_only=True)
    seconds_left = serializers.SerializerMethodField(
        help_text="Whole seconds until the timer falls due (0 once due); null unless pending."
    )

    class Meta:
        model = QuotaTimer
        fields = [
            "id", "queue", "started_at", "due_at", "seconds_left", "delay_seconds", "status",
            "deferred_since", "ended_at", "revision_number",
        ]  # fmt: skip
        read_only_fields = fields

    def get_seconds_left(self, timer: QuotaTimer) -> int | None:
        if timer.status != TimerStatus.PENDING:
            return None
        left = (timer.due_at - timezone.now()).total_seconds()
        return max(0, math.ceil(left))


class VictimSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)
    resources = ResourcesField(read_only=True)

    class Meta:
        model = RunVictim
        fields = ["position", "allocation_id", "queue", "node", "resources", "preempted_at"]
        read_only_fields = fields


class ExplanationSerializer(serializers.Serializer):
    """Why one candidate was or was not taken (SPEC 4.0; codes in SCENARIOS.md)."""

    candidate = serializers.CharField()
    accepted = serializers.BooleanField()
    reason = serializers.CharField()


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Ask id -> nominated node (job policy).",
    }
)
class NominationsField(serializers.JSONField):
    pass


class RunSerializer(serializers.ModelSerializer):
    """A run as listed: what, why, and how it ended (no victims or explanations)."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)
    victim_count = serializers.IntegerField(read_only=True)
    targets = TargetsField(read_only=True)
    freed = ResourcesField(read_only=True)
    nominations = NominationsField(read_only=True)

    class Meta:
        model = PreemptionRun
        fields = [
            "id", "partition", "queue", "policy", "trigger", "trigger_id", "timer", "status",
            "outcome", "attempt", "worker", "created_at", "started_at", "finished_at", "node",
            "targets", "freed", "nominations", "victim_count", "error",
        ]  # fmt: skip
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    """A run with its victims (in the order taken) and the per-candidate explanations."""

    victims = VictimSerializer(many=True, read_only=True)
    explanations = ExplanationSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "victims", "explanations"]
        read_only_fields = fields


class AbortSerializer(StrictSerializer):
    """Why an admin aborts a run (kept on the run and in the audit event)."""

    comment = serializers.CharField(max_length=COMMENT_MAX_LENGTH, required=False, allow_blank=True)


class CancelTimerSerializer(AbortSerializer):
    """Why an operator cancels a quota timer (kept in the ``timer.cancelled`` audit event)."""


class EvictionSerializer(serializers.ModelSerializer):
    """An order to the cluster to evict one allocation; the cluster acknowledges it by id."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    queue = serializers.CharField(source="victim.queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)

    class Meta:
        model = EvictionOrder
        fields = [
            "id", "partition", "allocation_id", "queue", "node", "run", "soft", "status",
            "created_at", "acknowledged_at", "acknowledged_by", "webhook_attempts", "last_error",
        ]  # fmt: skip
        read_only_fields = fields
