"""Serializers of the queue-configuration API: they parse and render, the services decide.

Resource values are written as quantity strings in responses (``"10Gi"``, ``"500m"``, vcore
``"10"`` = 10 cores) so a client can send back what it read; requests take strings or integers
(an integer means the same as the same digits in a string).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from preemption import resources
from preemption.config import ASK_POLICIES, PartitionConfig, PartitionSettings, QueueConfig
from preemption.durations import DurationError, format_duration, parse_duration
from scheduler_admin.api.fields import ResourcesField
from scheduler_admin.queues.models import ConfigRevision, Partition


class PropertiesField(serializers.DictField):
    child = serializers.CharField(allow_blank=True, max_length=256)


@extend_schema_field(OpenApiTypes.STR)
class DurationField(serializers.Field):
    """``30s``, ``1h30m`` or plain seconds in; seconds inside; ``"30s"`` out."""

    def to_internal_value(self, data: object) -> int:
        try:
            return parse_duration(data, field=self.field_name or "duration")
        except DurationError as exc:
            raise serializers.ValidationError(exc.message) from None

    def to_representation(self, value: int) -> str:
        return format_duration(value)


class QueuePatchSerializer(serializers.Serializer):
    guaranteed = ResourcesField(required=False)
    max = ResourcesField(required=False)
    properties = PropertiesField(required=False)
    version = serializers.IntegerField(required=False, min_value=1)
    comment = serializers.CharField(max_length=2000)


class QueueCreateSerializer(serializers.Serializer):
    parent = serializers.CharField(max_length=1024)
    name = serializers.CharField(max_length=64)
    guaranteed = ResourcesField(required=False, default=dict)
    max = ResourcesField(required=False, default=dict)
    properties = PropertiesField(required=False, default=dict)
    comment = serializers.CharField(max_length=2000)


class CommentSerializer(serializers.Serializer):
    comment = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    version = serializers.IntegerField(required=False, min_value=1)


class PartitionSerializer(serializers.ModelSerializer):
    default_preemption_delay = DurationField()
    daemonset_preemption_delay = DurationField()
    queue_count = serializers.IntegerField(source="queues.count", read_only=True)

    class Meta:
        model = Partition
        fields = [
            "name", "preemption_enabled", "quota_preemption_enabled", "miss_percent",
            "default_preemption_delay", "daemonset_preemption_delay", "ask_policy", "version",
            "queue_count", "updated_at",
        ]  # fmt: skip
        read_only_fields = ["name", "version", "queue_count", "updated_at"]


class PartitionPatchSerializer(serializers.Serializer):
    preemption_enabled = serializers.BooleanField(required=False)
    quota_preemption_enabled = serializers.BooleanField(required=False)
    miss_percent = serializers.IntegerField(required=False, min_value=0, max_value=100)
    default_preemption_delay = DurationField(required=False)
    daemonset_preemption_delay = DurationField(required=False)
    ask_policy = serializers.ChoiceField(choices=ASK_POLICIES, required=False)
    version = serializers.IntegerField(required=False, min_value=1)
    comment = serializers.CharField(max_length=2000)


class ConfigQueueSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=64)
    parent = serializers.CharField(max_length=1024, allow_null=True, required=False)
    guaranteed = ResourcesField(required=False, default=dict)
    max = ResourcesField(required=False, default=dict)
    properties = PropertiesField(required=False, default=dict)
    extra = serializers.DictField(required=False, default=dict)


class ConfigSettingsSerializer(serializers.Serializer):
    preemption_enabled = serializers.BooleanField(default=True)
    quota_preemption_enabled = serializers.BooleanField(default=False)
    miss_percent = serializers.IntegerField(default=0, min_value=0, max_value=100)
    default_preemption_delay = DurationField(default=30)
    daemonset_preemption_delay = DurationField(default=0)
    ask_policy = serializers.ChoiceField(choices=ASK_POLICIES, default="inter_queue")
    extra = serializers.DictField(required=False, default=dict)


class ConfigSerializer(serializers.Serializer):
    """The JSON form of a whole partition config (``GET``/``PUT .../config``)."""

    partition = ConfigSettingsSerializer()
    queues = ConfigQueueSerializer(many=True)
    version = serializers.IntegerField(required=False, min_value=1)
    comment = serializers.CharField(max_length=2000, required=False)

    def to_config(self, name: str) -> PartitionConfig:
        data = self.validated_data
        settings = PartitionSettings(name=name, **data["partition"])
        queues = []
        for item in data["queues"]:
            parent = item.get("parent")
            queues.append(
                QueueConfig.child_of(
                    parent or None,
                    item["name"],
                    guaranteed=item["guaranteed"],
                    max=item["max"],
                    properties=item["properties"],
                    extra=item["extra"],
                )
            )
        return PartitionConfig(settings=settings, queues=tuple(queues))


def config_to_json(config: PartitionConfig, version: int) -> dict[str, Any]:
    settings = config.settings
    return {
        "partition": {
            "name": settings.name,
            "preemption_enabled": settings.preemption_enabled,
            "quota_preemption_enabled": settings.quota_preemption_enabled,
            "miss_percent": settings.miss_percent,
            "default_preemption_delay": format_duration(settings.default_preemption_delay),
            "daemonset_preemption_delay": format_duration(settings.daemonset_preemption_delay),
            "ask_policy": settings.ask_policy,
            "extra": dict(settings.extra),
        },
        "queues": [
            {
                "path": queue.path,
                "name": queue.name,
                "parent": queue.parent,
                "guaranteed": resources.format_resources(queue.guaranteed),
                "max": resources.format_resources(queue.max),
                "properties": dict(queue.properties),
                "extra": dict(queue.extra),
            }
            for queue in config.queues
        ],
        "version": version,
    }


class RevisionSerializer(serializers.ModelSerializer):
    partition = serializers.CharField(source="partition.name", read_only=True)
    author = serializers.CharField(source="author_name", read_only=True)

    class Meta:
        model = ConfigRevision
        fields = ["number", "partition", "kind", "created_at", "author", "comment",
                  "reverted_from"]  # fmt: skip


class SimulateSerializer(serializers.Serializer):
    """``policy`` quota: ``queue`` and ``max``; ``ask``: an ask id; ``job``: a job id.
    ``state``: optional overrides in the ``cluster-state`` vocabulary, applied in memory only."""

    policy = serializers.ChoiceField(choices=["quota", "ask", "job"])
    queue = serializers.CharField(required=False, max_length=1024)
    max = ResourcesField(required=False)
    ask = serializers.CharField(required=False, max_length=253)
    job = serializers.CharField(required=False, max_length=253)
    victim_strategy = serializers.ListField(
        child=serializers.ChoiceField(choices=["single", "multiple"]), required=False
    )
    deviation_percent = serializers.IntegerField(required=False, min_value=0)
    max_victims = serializers.IntegerField(required=False, min_value=1)
    state = serializers.DictField(
        required=False,
        help_text=(
            "What-if state: nodes, allocations, asks, budgets and remove, as in POST "
            "cluster-state, applied on top of the stored state for this plan only."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        needed = {"quota": ("queue", "max"), "ask": ("ask",), "job": ("job",)}[attrs["policy"]]
        missing = {name: ["is required for this policy"] for name in needed if name not in attrs}
        if missing:
            raise serializers.ValidationError(missing)
        return attrs
