"""The shape of ``GET .../queues/{path}/usage`` for the OpenAPI schema (the view builds the body
from ``history.services.UsageSeries``; these serializers document it)."""

from __future__ import annotations

from rest_framework import serializers

_VALUES = (
    "One value per time of `times`, in the resource's canonical unit (vcore in millicores, "
    "memory in bytes, other resources as their quantities parse)"
)


class ResourceSeriesSerializer(serializers.Serializer):
    resource = serializers.CharField()
    usage = serializers.ListField(
        child=serializers.IntegerField(allow_null=True),
        help_text=f"{_VALUES}: the usage sampled then (a point of a 15-minute window is the "
        "average of its sampled minutes); null where nothing was sampled (a gap).",
    )
    guaranteed = serializers.ListField(
        child=serializers.IntegerField(allow_null=True),
        help_text=f"{_VALUES}: the queue's guarantee in force at that time (from the config "
        "revisions); null: none.",
    )
    max = serializers.ListField(
        child=serializers.IntegerField(allow_null=True),
        help_text=f"{_VALUES}: the queue's effective max in force at that time (the smallest "
        "on the path from root); null: none.",
    )


class QuotaChangeSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    revision = serializers.IntegerField()
    author = serializers.CharField(allow_blank=True)
    comment = serializers.CharField(allow_blank=True)
    changes = serializers.DictField(
        child=serializers.DictField(
            child=serializers.ListField(child=serializers.IntegerField(allow_null=True))
        ),
        help_text="Resource -> the fields that changed, each [old, new] (null: none), e.g. "
        '{"memory": {"max": [322122547200, 214748364800]}}.',
    )


class RunMarkerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField(help_text="When the run was created.")
    finished_at = serializers.DateTimeField(allow_null=True)
    queue = serializers.CharField()
    relation = serializers.ChoiceField(
        choices=["this", "ancestor", "descendant"],
        help_text="Where the run's queue is: this queue, above it or below it.",
    )
    policy = serializers.CharField()
    status = serializers.CharField()
    outcome = serializers.CharField(allow_blank=True)


class MarkersSerializer(serializers.Serializer):
    quota_changes = QuotaChangeSerializer(many=True)
    runs = RunMarkerSerializer(many=True)
    runs_truncated = serializers.BooleanField(
        help_text="More runs than the 200 newest shown were active in the window."
    )


class UsageHistorySerializer(serializers.Serializer):
    partition = serializers.CharField()
    queue = serializers.CharField()
    range = serializers.CharField(
        allow_null=True, help_text="`1h`, `24h` or `7d`; null for a window given by times."
    )
    since = serializers.DateTimeField(help_text="The first time of `times`.")
    until = serializers.DateTimeField(help_text="The end of the window (after the last time).")
    step_seconds = serializers.IntegerField(help_text="60 (minutes) or 900 (quarter hours).")
    last_sample = serializers.DateTimeField(
        allow_null=True,
        help_text="The newest minute sampled in the partition (null: never). Times after it "
        "are not sampled yet, rather than gaps.",
    )
    times = serializers.ListField(child=serializers.DateTimeField())
    resources = ResourceSeriesSerializer(many=True)
    markers = MarkersSerializer()
