"""Serializers of the cluster-state API (SPEC 3.3 and 7).

Output speaks the scenario files' vocabulary (``id``, ``app``, ``queue``, ``node``, ...), the same
names the ``cluster-state`` body uses, with quantities as exact strings, as every API writes
them (``scheduler_admin.base.api.fields``).

The ``ClusterState*`` input serializers only describe the body for the OpenAPI schema: the body
is checked by ``ingest_cluster_state`` itself, which reports every problem with its path
(``allocations[3].resources.memory``, ``nodes[0].bogus: unknown field``) and parses quantities
like YuniKorn. They are strict serializers so the schema shows the body as closed, as the
service reads it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from preemption.model import SelectorOperator, TaintEffect, TolerationOperator
from scheduler_admin.base.api.fields import RESOURCES_SCHEMA, ResourcesField
from scheduler_admin.base.api.strict import StrictSerializer
from scheduler_admin.base.limits import (
    CLUSTER_ID_MAX_LENGTH,
    CLUSTER_USER_MAX_LENGTH,
    INT32_MAX,
    INT32_MIN,
    POSITIVE_INT_MAX,
    QUEUE_PATH_MAX_LENGTH,
)
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
    DisruptionBudget,
    DynamicQueue,
    Node,
)
from scheduler_admin.cluster.replacement_pages import MAX_PAGES


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
    updated_at = serializers.DateTimeField(
        read_only=True, help_text="When a push last created or changed the node."
    )

    class Meta:
        model = Node
        fields = ["name", "capacity", "schedulable", "labels", "taints", "updated_at"]
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
            "node_selector", "node_affinity", "tolerations", "retry_after",
        ]  # fmt: skip
        read_only_fields = fields


class BudgetSerializer(serializers.ModelSerializer):
    class Meta:
        model = DisruptionBudget
        fields = ["name", "allowed_disruptions"]
        read_only_fields = fields


class DynamicQueueSerializer(serializers.ModelSerializer):
    """A queue YuniKorn created (cluster state): its template and what it gives the queue."""

    guaranteed = ResourcesField(read_only=True)
    max = ResourcesField(read_only=True)

    class Meta:
        model = DynamicQueue
        fields = ["path", "leaf", "template", "guaranteed", "max", "properties", "updated_at"]
        read_only_fields = fields


# --------------------------------------------------------------------------------------------
# The cluster-state body (schema only) and its answer
# --------------------------------------------------------------------------------------------


def _id(**kwargs: Any) -> serializers.CharField:
    """An id or name of a cluster object, as long as its column (``limits``)."""
    return serializers.CharField(max_length=CLUSTER_ID_MAX_LENGTH, **kwargs)


def _optional_id(**kwargs: Any) -> serializers.CharField:
    return _id(required=False, allow_null=True, allow_blank=True, **kwargs)


def _queue(**kwargs: Any) -> serializers.CharField:
    return serializers.CharField(
        max_length=QUEUE_PATH_MAX_LENGTH, help_text="A leaf queue of the partition.", **kwargs
    )


def _user() -> serializers.CharField:
    return serializers.CharField(
        max_length=CLUSTER_USER_MAX_LENGTH, required=False, allow_null=True, allow_blank=True
    )


def _priority() -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False, default=0, min_value=INT32_MIN, max_value=INT32_MAX
    )


class TaintSerializer(StrictSerializer):
    key = serializers.CharField(help_text="A Kubernetes label key, such as nvidia.com/gpu.")
    value = serializers.CharField(required=False, allow_blank=True, default="")
    effect = serializers.ChoiceField(choices=[e.value for e in TaintEffect])


class TolerationSerializer(StrictSerializer):
    key = serializers.CharField(
        required=False, allow_blank=True, help_text="Empty (with Exists): every key."
    )
    operator = serializers.ChoiceField(
        choices=[o.value for o in TolerationOperator], required=False, default="Equal"
    )
    value = serializers.CharField(
        required=False, allow_blank=True, help_text="Empty with Exists; compared with Equal."
    )
    effect = serializers.ChoiceField(
        choices=["", *[e.value for e in TaintEffect]],
        required=False,
        help_text="Empty: every effect.",
    )


class NodeSelectorRequirementSerializer(StrictSerializer):
    key = serializers.CharField()
    operator = serializers.ChoiceField(choices=[o.value for o in SelectorOperator])
    values = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        help_text="In/NotIn: one or more; Exists/DoesNotExist: none; Gt/Lt: one integer.",
    )


def _labels(help_text: str) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.CharField(allow_blank=True), required=False, help_text=help_text
    )


class ClusterStateNodeSerializer(StrictSerializer):
    name = _id()
    capacity = QuantitiesField(required=False)
    schedulable = serializers.BooleanField(required=False, default=True)
    labels = _labels("Node labels (key -> value).")
    taints = TaintSerializer(many=True, required=False)


class ClusterStateAllocationSerializer(StrictSerializer):
    id = _id()
    queue = _queue()
    app = _optional_id(help_text="Application id; defaults to `id`.")
    user = _user()
    node = _id(help_text="A known node, or one in this body.")
    resources = QuantitiesField(required=False)
    priority = _priority()
    allow_preemption = serializers.BooleanField(required=False, default=True)
    originator = serializers.BooleanField(required=False, default=False)
    required_node = _optional_id(help_text="DaemonSet.")
    job = _optional_id()
    qos = serializers.ChoiceField(
        choices=["Guaranteed", "Burstable", "BestEffort"], required=False, allow_null=True
    )
    pdb = _optional_id()
    created_at = serializers.DateTimeField(required=False)
    state = serializers.ChoiceField(
        choices=AllocationState.values,
        required=False,
        allow_null=True,
        help_text="Omitted: a new allocation is running, an existing one keeps its state.",
    )


class ClusterStateAskSerializer(StrictSerializer):
    id = _id()
    queue = _queue()
    app = _optional_id(help_text="Application id; defaults to `id`.")
    user = _user()
    resources = QuantitiesField(required=False)
    priority = _priority()
    allow_preemption = serializers.BooleanField(required=False, default=True)
    preemption_policy = serializers.ChoiceField(
        choices=["PreemptLowerPriority", "Never"], required=False
    )
    required_node = _optional_id()
    job = _optional_id()
    created_at = serializers.DateTimeField(required=False)
    state = serializers.ChoiceField(choices=AskState.values, required=False)
    node = _optional_id(
        help_text="Reserved or nominated node; omitted keeps the one the product set."
    )
    node_selector = _labels("Labels a node must carry for the ask to use it.")
    node_affinity = serializers.ListField(
        child=NodeSelectorRequirementSerializer(many=True),
        required=False,
        help_text="Required node affinity: terms (any one may match), each a list of "
        "expressions (all must hold).",
    )
    tolerations = TolerationSerializer(many=True, required=False)


class ClusterStateBudgetSerializer(StrictSerializer):
    name = _id()
    allowed_disruptions = serializers.IntegerField(
        min_value=0, max_value=POSITIVE_INT_MAX, required=False, default=0
    )


class ClusterStateDynamicQueueSerializer(StrictSerializer):
    """A queue YuniKorn created for an application (placement with `create: true`)."""

    path = serializers.CharField(
        max_length=QUEUE_PATH_MAX_LENGTH,
        help_text="Under a configured parent queue (or a dynamic queue of this push that is no "
        "leaf); `root.@recovery@` for running pods no rule places.",
    )
    leaf = serializers.BooleanField(required=False, default=True)
    template = serializers.DictField(
        required=False,
        help_text="The childtemplate it was created with, as in queues.yaml: "
        "`resources` (`guaranteed`, `max`), `properties`, `maxapplications`.",
    )


class ClusterStateRemoveSerializer(StrictSerializer):
    """What to delete by id or name (ids that name nothing are ignored)."""

    nodes = serializers.ListField(child=_id(), required=False)
    allocations = serializers.ListField(child=_id(), required=False)
    asks = serializers.ListField(child=_id(), required=False)
    budgets = serializers.ListField(child=_id(), required=False)


class ReplacementPageSerializer(StrictSerializer):
    """Which page of a replacement sent in several requests this body is."""

    generation = serializers.CharField(
        max_length=CLUSTER_ID_MAX_LENGTH,
        help_text="Names the replacement: any text, new for each replacement. A page of "
        "another generation drops the pages kept for an older one.",
    )
    index = serializers.IntegerField(
        min_value=0, max_value=MAX_PAGES - 1,
        help_text="The page's place, from 0, sent in order (a page sent again replaces it).",
    )  # fmt: skip
    last = serializers.BooleanField(
        default=False,
        help_text="true on the final page: the kept pages and this one are applied as one "
        "replace push.",
    )


class ClusterStateSerializer(StrictSerializer):
    """Bulk upserts (by id or name) and removals, all or nothing; with ``replace``, the
    partition's whole state."""

    nodes = ClusterStateNodeSerializer(many=True, required=False)
    allocations = ClusterStateAllocationSerializer(many=True, required=False)
    asks = ClusterStateAskSerializer(many=True, required=False)
    budgets = ClusterStateBudgetSerializer(many=True, required=False)
    dynamic_queues = ClusterStateDynamicQueueSerializer(
        many=True,
        required=False,
        help_text="Queues YuniKorn created: cluster state, not config (no revision); a "
        "replace push drops those it does not list.",
    )
    remove = ClusterStateRemoveSerializer(required=False)
    replace = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: the body is the partition's whole state. Every node, allocation, ask "
        "and budget of the partition that it does not list is removed, and the applications "
        "left without tasks or asks; nodes that items name must then be in `nodes`. A cluster "
        "agent sends this after listing the cluster (at start, after a watch was lost).",
    )
    page = ReplacementPageSerializer(
        required=False,
        help_text="A replacement too large for one request, sent in pages (with `replace`: "
        "true, and no `remove`): pages before the last are kept and change nothing (202); "
        "the last applies them all as one replace push.",
    )


class RemovedCountsSerializer(serializers.Serializer):
    """Rows deleted: by the `remove` lists and, with `replace`, because the body did not list
    them."""

    nodes = serializers.IntegerField()
    allocations = serializers.IntegerField()
    asks = serializers.IntegerField()
    budgets = serializers.IntegerField()
    dynamic_queues = serializers.IntegerField()


class ChangeCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Rows that did not exist.")
    updated = serializers.IntegerField(help_text="Stored rows that differed from the body.")
    removed = serializers.IntegerField(help_text="Rows deleted.")


class ChangedSerializer(serializers.Serializer):
    """Per kind, the rows the push created, updated and removed; all zero when it changed
    nothing (then no audit event is recorded)."""

    nodes = ChangeCountsSerializer()
    applications = ChangeCountsSerializer(
        help_text="Created with their first task or ask, removed with their last."
    )
    allocations = ChangeCountsSerializer()
    asks = ChangeCountsSerializer()
    budgets = ChangeCountsSerializer()
    dynamic_queues = ChangeCountsSerializer()


class IngestResultSerializer(serializers.Serializer):
    """How many items of each kind the body held, how many rows its removals deleted, and what
    it changed."""

    nodes = serializers.IntegerField(help_text="Nodes in the body.")
    allocations = serializers.IntegerField(help_text="Allocations in the body.")
    asks = serializers.IntegerField(help_text="Asks in the body.")
    budgets = serializers.IntegerField(help_text="Disruption budgets in the body.")
    dynamic_queues = serializers.IntegerField(help_text="Dynamic queues in the body.")
    replace = serializers.BooleanField(help_text="Whether the body replaced the whole state.")
    removed = RemovedCountsSerializer()
    changed = ChangedSerializer()


class PageKeptBodySerializer(serializers.Serializer):
    generation = serializers.CharField()
    index = serializers.IntegerField()
    pages_kept = serializers.IntegerField(help_text="Pages of this replacement kept so far.")
    applied = serializers.BooleanField(help_text="Always false: nothing is applied yet.")


class PageKeptSerializer(serializers.Serializer):
    """A page of a replacement kept, unapplied, until its last page arrives."""

    replacement = PageKeptBodySerializer()
