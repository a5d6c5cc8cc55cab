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
