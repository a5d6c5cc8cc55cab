"""Audit events as the API shows them: the stored names under their short public names."""

from __future__ import annotations

from rest_framework import serializers

from scheduler_admin.audit.kinds import AuditKind
from scheduler_admin.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    """One audit event (read-only: the audit trail is append-only and written by services)."""

    # The column has no ``choices`` (kinds live in code), so the schema's enum comes from here.
    kind = serializers.ChoiceField(choices=AuditKind.choices, read_only=True)
    actor = serializers.CharField(source="actor_name", read_only=True)
    partition = serializers.CharField(source="partition_name", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "kind",
            "actor",
            "partition",
            "queue",
            "object_type",
            "object_id",
            "summary",
            "data",
        ]
        read_only_fields = fields


class ChainHeadSerializer(serializers.Serializer):
    event_id = serializers.IntegerField(allow_null=True, help_text="The last event chained.")
    hash = serializers.CharField(help_text="Its link: SHA-256, hex.")


class ChainBreakSerializer(serializers.Serializer):
    event_id = serializers.IntegerField(allow_null=True, help_text="Where the chain breaks.")
    problem = serializers.ChoiceField(
        choices=["changed", "removed", "inserted", "unsealed", "head"],
        help_text="changed: the event's content or hash was altered; removed: an event before "
        "it (or at the end) is missing; inserted: this event is not part of the chain; "
        "unsealed: an event was written without its link.",
    )
    chain = serializers.CharField(help_text="`global`, or `partition:<name>`.")
    detail = serializers.CharField(help_text="What is wrong, in words.")


class ChainVerdictSerializer(serializers.Serializer):
    """The answer of ``GET /api/v1/audit/verify``."""

    ok = serializers.BooleanField(help_text="Whether every link holds.")
    checked = serializers.IntegerField(help_text="Events checked.")
    head = ChainHeadSerializer()
    first_break = ChainBreakSerializer(allow_null=True)
