"""The agents API: heartbeats in (operator, as an agent's token is) and the list out (viewer).

The view declares; the write calls ``agents.services.record_heartbeat``.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler_admin.accounts import permissions as access
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.agents.services import Heartbeat, config_revision, record_heartbeat
from scheduler_admin.api.agents import serializers
from scheduler_admin.api.permissions import OPERATE_CLUSTER
from scheduler_admin.api.views import LIST_ERRORS, WRITE_ERRORS, PartitionScoped
from scheduler_admin.base.api.ordering import StableOrderingFilter


@extend_schema_view(
    list=extend_schema(
        summary="List the partition's cluster agents",
        description="Every agent that ever sent a heartbeat for the partition, by name, with "
        "what its last heartbeat said and whether it is `stale` (silent for "
        "STALE_AGENT_SECONDS).",
        responses={200: serializers.AgentSerializer(many=True), **LIST_ERRORS},
    ),
)
class AgentViewSet(PartitionScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Cluster agents of a partition (viewer); a heartbeat is an operator's write."""

    queryset = ClusterAgent.objects.select_related("partition")
    serializer_class = serializers.AgentSerializer
    filter_backends = [StableOrderingFilter]
    ordering_fields = ["name", "last_heartbeat_at"]
    ordering = ["name", "id"]
    # Agents belong to the whole cluster: reading them is a read of the whole partition.
    action_access = {"heartbeat": OPERATE_CLUSTER}

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "now": timezone.now()}

    @extend_schema(
        summary="An agent's heartbeat",
        description="Sent by a cluster agent every few seconds: its state, stored under "
        "(partition, `name`), created on the first heartbeat. Every field is replaced by what "
        "the heartbeat says (omitted ones by their defaults). Audited only when the agent is "
        "new (`agent.registered`) or the cluster runs another revision "
        "(`agent.config_applied`), never once per heartbeat. The answer holds the stored agent "
        "and `config_revision`, the partition's newest revision. A body that is not valid (a "
        "missing name or start time, a wrong type, an unknown field, also inside `counts`) is "
        "a 400 naming each field, and nothing is stored.",
        request=serializers.HeartbeatSerializer,
        responses={200: serializers.HeartbeatAnswerSerializer, **WRITE_ERRORS},
    )
    @action(detail=False, methods=["post"])
    def heartbeat(self, request: Request, partition: str) -> Response:
        body = serializers.HeartbeatSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        data["counts"] = dict(data.get("counts") or {})
        data["not_placed"] = [dict(item) for item in data.get("not_placed") or []]
        agent = record_heartbeat(
            self.partition, Heartbeat(**data), actor=request.user,
            authorize=access.authorizer(request.user, OPERATE_CLUSTER, None),
        )  # fmt: skip
        return Response(
            {
                "agent": self.get_serializer(agent).data,
                "config_revision": config_revision(self.partition),
            }
        )
