"""Serializers of the cluster-state API (SPEC 3.3 and 7).

Output speaks the scenario files' vocabulary (``id``, ``app``, ``queue``, ``node``, ...), the same
names the ``cluster-state`` body uses, with quantities as exact strings, as every API writes
them (``scheduler_admin.api.fields``).

The ``ClusterState*`` input serializers only describe the body for the OpenAPI schema: the body
is checked by ``ingest_cluster_state`` itself, which reports every problem with its path
(``allocations[3].resources.memory``) and parses quantities like YuniKorn.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduler_admin.api.fields import RESOURCES_SCHEMA, ResourcesField
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
    DisruptionBudget,
    Node,
)


@extend_schema_field(RESOURCES_SCHEMA)
class QuantitiesField(serializers.JSONField):
    """A resource set as the client writes it (schema only)."""


@extend_schema_field({"type": "string", "nullable": True})
class OptionalTextField(serializers.CharField):
    """A text column where blank means "not set": shown as null, like the scenario files."""

    def to_representation(self, value: str) -> str | None:
        return value or None


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


class NodeSerializer(serializers.ModelSerializer):
    capacity = ResourcesField(read_only=True)

    class Meta:
        model = Node
        fields = ["name", "capacity", "schedulable", "updated_at"]
        read_only_fields = fields


class ApplicationSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)
    allocation_count = serializers.IntegerField(
        read_only=True, help_text="Allocations of any state."
    )
    ask_count = serializers.IntegerField(read_only=True, help_text="Asks of any state.")

    class Meta:
        model = Application
        fields = ["id", "queue", "user", "allocation_count", "ask_count"]
        read_only_fields = fields


class AllocationSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", read_only=True)
    app = serializers.CharField(source="application.external_id", read_only=True)
    user = serializers.CharField(source="application.user", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)
    resources = ResourcesField(read_only=True)
    required_node = OptionalTextField(read_only=True)
    job = OptionalTextField(read_only=True)
    qos = OptionalTextField(read_only=True)
    pdb = OptionalTextField(read_only=True)

    class Meta:
        model = Allocation
        fields = [
            "id", "app", "user", "queue", "node", "resources", "priority", "allow_preemption",
            "originator", "required_node", "job", "qos", "pdb", "created_at", "state",
            "state_changed_at",
        ]  # fmt: skip
        read_only_fields = fields


class AskSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", read_only=True)
    app = serializers.CharField(source="application.external_id", read_only=True)
    user = serializers.CharField(source="application.user", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)
    resources = ResourcesField(read_only=True)
    required_node = OptionalTextField(read_only=True)
    job = OptionalTextField(read_only=True)
    node = OptionalTextField(
        read_only=True, help_text="The node reserved for (inter-queue) or nominated to the ask."
    )

    class Meta:
        model = Ask
        fields = [
            "id", "app", "user", "queue", "resources", "priority", "allow_preemption",
            "preemption_policy", "required_node", "job", "created_at", "state", "node",
            "retry_after",
        ]  # fmt: skip
        read_only_fields = fields


class BudgetSerializer(serializers.ModelSerializer):
    class Meta:
        model = DisruptionBudget
        fields = ["name", "allowed_disruptions"]
        read_only_fields = fields


# --------------------------------------------------------------------------------------------
# The cluster-state body (schema only) and its answer
# --------------------------------------------------------------------------------------------


class ClusterStateNodeSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=253)
    capacity = QuantitiesField(required=False)
    schedulable = serializers.BooleanField(required=False, default=True)


class ClusterStateAllocationSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=253)
    queue = serializers.CharField(help_text="A leaf queue of the partition.")
    app = serializers.CharField(required=False, help_text="Application id; defaults to `id`.")
    user = serializers.CharField(required=False)
    node = serializers.CharField(help_text="A known node, or one in this body.")
    resources = QuantitiesField(required=False)
    priority = serializers.IntegerField(required=False, default=0)
    allow_preemption = serializers.BooleanField(required=False, default=True)
    originator = serializers.BooleanField(required=False, default=False)
    required_node = serializers.CharField(required=False, allow_null=True, help_text="DaemonSet.")
    job = serializers.CharField(required=False, allow_null=True)
    qos = serializers.ChoiceField(
        choices=["Guaranteed", "Burstable", "BestEffort"], required=False, allow_null=True
    )
    pdb = serializers.CharField(required=False, allow_null=True)
    created_at = serializers.DateTimeField(required=False)
    state = serializers.ChoiceField(
        choices=AllocationState.values,
        required=False,
        allow_null=True,
        help_text="Omitted: a new allocation is running, an existing one keeps its state.",
    )


class ClusterStateAskSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=253)
    queue = serializers.CharField(help_text="A leaf queue of the partition.")
    app = serializers.CharField(required=False, help_text="Application id; defaults to `id`.")
    user = serializers.CharField(required=False)
    resources = QuantitiesField(required=False)
    priority = serializers.IntegerField(required=False, default=0)
    allow_preemption = serializers.BooleanField(required=False, default=True)
    preemption_policy = serializers.ChoiceField(
        choices=["PreemptLowerPriority", "Never"], required=False
    )
    required_node = serializers.CharField(required=False, allow_null=True)
    job = serializers.CharField(required=False, allow_null=True)
    created_at = serializers.DateTimeField(required=False)
    state = serializers.ChoiceField(choices=AskState.values, required=False)
    node = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="Reserved or nominated node; omitted keeps the one the product set.",
    )


class ClusterStateBudgetSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=253)
    allowed_disruptions = serializers.IntegerField(min_value=0, required=False, default=0)


class ClusterStateRemoveSerializer(serializers.Serializer):
    nodes = serializers.ListField(child=serializers.CharField(), required=False)
    allocations = serializers.ListField(child=serializers.CharField(), required=False)
    asks = serializers.ListField(child=serializers.CharField(), required=False)


class ClusterStateSerializer(serializers.Serializer):
    """Bulk upserts (by id or name) and removals, all or nothing."""

    nodes = ClusterStateNodeSerializer(many=True, required=False)
    allocations = ClusterStateAllocationSerializer(many=True, required=False)
    asks = ClusterStateAskSerializer(many=True, required=False)
    budgets = ClusterStateBudgetSerializer(many=True, required=False)
    remove = ClusterStateRemoveSerializer(required=False)


class RemovedCountsSerializer(serializers.Serializer):
    nodes = serializers.IntegerField()
    allocations = serializers.IntegerField()
    asks = serializers.IntegerField()


class IngestResultSerializer(serializers.Serializer):
    """How many items of each kind the body upserted, and how many rows it removed."""

    nodes = serializers.IntegerField()
    allocations = serializers.IntegerField()
    asks = serializers.IntegerField()
    budgets = serializers.IntegerField()
    removed = RemovedCountsSerializer()
