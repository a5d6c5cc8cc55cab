"""Serializers of the agents API: the heartbeat body (strict) and an agent as stored."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from scheduler_admin.agents.models import NOT_PLACED_LIMIT, ClusterAgent
from scheduler_admin.base import limits
from scheduler_admin.base.api.strict import StrictSerializer


def _count(help_text: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=0, max_value=limits.POSITIVE_INT_MAX, required=False, default=0,
        help_text=help_text,
    )  # fmt: skip


class AgentCountsSerializer(StrictSerializer):
    """What the agent's last push held, and the pods it could not report."""

    nodes = _count("Nodes in the last push.")
    allocations = _count("Allocations (running pods) in the last push.")
    asks = _count("Asks (pending pods) in the last push.")
    budgets = _count("Disruption budgets in the last push.")
    skipped = _count("Pods the agent could not report (e.g. a queue the partition lacks).")


class NotPlacedSerializer(StrictSerializer):
    """A pod the agent left out of its pushes, and why."""

    pod = serializers.CharField(max_length=limits.CLUSTER_ID_MAX_LENGTH, help_text="The pod's id.")
    reason = serializers.CharField(
        help_text="Why, e.g. the application YuniKorn rejects (cut to 500 characters)."
    )


class HeartbeatSerializer(StrictSerializer):
    """An agent's state, sent every few seconds; stored whole under (partition, name)."""

    name = serializers.CharField(
        max_length=limits.AGENT_NAME_MAX_LENGTH,
        help_text="The agent's name, unique in the partition (by default its host name).",
    )
    cluster = serializers.CharField(
        max_length=limits.AGENT_CLUSTER_MAX_LENGTH, required=False, allow_blank=True, default="",
        help_text="The cluster it watches, as shown in the console (e.g. the kube context).",
    )  # fmt: skip
    version = serializers.CharField(
        max_length=limits.AGENT_VERSION_MAX_LENGTH, required=False, allow_blank=True, default=""
    )
    started_at = serializers.DateTimeField(help_text="When the agent process started.")
    last_push_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="When its last cluster-state push was accepted (null: none yet).",
    )  # fmt: skip
    lag_seconds = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0,
        help_text="How far the product's state is behind the cluster, in seconds, as the agent "
        "measures it (from a change seen in the cluster to its push being accepted).",
    )  # fmt: skip
    last_error = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        help_text="The agent's last error (empty: none). Longer than "
        f"{limits.CLUSTER_MESSAGE_MAX_LENGTH} characters is cut, not refused.",
    )  # fmt: skip
    running_revision = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1,
        max_value=limits.POSITIVE_INT_MAX,
        help_text="The config revision the cluster's ConfigMap holds, as far as the agent "
        "knows (null: unknown, e.g. not publishing).",
    )  # fmt: skip
    publishing = serializers.BooleanField(
        required=False, default=False,
        help_text="Whether the agent publishes saved revisions into the ConfigMap (false: "
        "read-only).",
    )  # fmt: skip
    counts = AgentCountsSerializer(required=False)
    not_placed = NotPlacedSerializer(
        many=True, required=False, max_length=NOT_PLACED_LIMIT,
        help_text=f"Up to {NOT_PLACED_LIMIT} of the pods counted in `counts.skipped`, with why "
        "each is left out (an application no placement rule accepts, a node the cluster does not "
        "list, resources that cannot be read).",
    )  # fmt: skip


class AgentCountsOutSerializer(serializers.Serializer):
    nodes = serializers.IntegerField(default=0)
    allocations = serializers.IntegerField(default=0)
    asks = serializers.IntegerField(default=0)
    budgets = serializers.IntegerField(default=0)
    skipped = serializers.IntegerField(default=0)


class AgentSerializer(serializers.ModelSerializer):
    """An agent as its last heartbeat left it, with the product's view of it."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    counts = AgentCountsOutSerializer(read_only=True)
    stale = serializers.SerializerMethodField(
        help_text="No heartbeat for STALE_AGENT_SECONDS (default 60): the agent stopped or "
        "cannot reach the product."
    )

    class Meta:
        model = ClusterAgent
        fields = [
            "partition", "name", "cluster", "version", "started_at", "registered_at",
            "last_heartbeat_at", "last_push_at", "lag_seconds", "last_error", "running_revision",
            "publishing", "counts", "not_placed", "stale",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "registered_at": {"help_text": "When its first heartbeat arrived."},
            "last_heartbeat_at": {"help_text": "When its last heartbeat arrived (the product's "
                                  "clock)."},
        }  # fmt: skip

    def get_stale(self, agent: ClusterAgent) -> bool:
        return agent.is_stale(self.context.get("now") or timezone.now())


class HeartbeatAnswerSerializer(serializers.Serializer):
    """What a heartbeat stored, and the revision the cluster should run."""

    agent = AgentSerializer()
    config_revision = serializers.IntegerField(
        allow_null=True,
        help_text="The partition's newest config revision (what a publishing agent should put "
        "into the ConfigMap; `config.yaml` answers it as X-Config-Revision).",
    )
