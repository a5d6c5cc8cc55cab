"""Cluster-state API (SPEC 7): the bulk ``cluster-state`` write and read-only lists per partition.

Views declare (queryset, serializer, filterset); the one write calls
``cluster.services.ingest_cluster_state``, which validates the whole body and raises
``IngestErrors`` (400 with field paths) or writes everything in one transaction.
"""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.cluster import serializers
from scheduler_admin.api.permissions import OPERATE_CLUSTER
from scheduler_admin.api.views import (
    WRITE_ERRORS,
    PartitionReadOnlyViewSet,
    PartitionScoped,
    document_reads,
)
from scheduler_admin.base.api.parsers import SafeJSONParser
from scheduler_admin.cluster import filtersets
from scheduler_admin.cluster.models import (
    Allocation,
    Application,
    Ask,
    DisruptionBudget,
    DynamicQueue,
    Node,
)
from scheduler_admin.cluster.replacement_pages import PageKept, is_page, receive_page
from scheduler_admin.cluster.services import ingest_cluster_state


@document_reads("node", serializers.NodeSerializer)
class NodeViewSet(PartitionReadOnlyViewSet):
    queryset = Node.objects.all()
    serializer_class = serializers.NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    lookup_field = "name"
    ordering_fields = ["name", "updated_at"]
    ordering = ["name"]


@document_reads("application", serializers.ApplicationSerializer)
class ApplicationViewSet(PartitionReadOnlyViewSet):
    scoped = True  # rows of a queue: a grant's holder reads those of their subtrees
    queryset = Application.objects.annotate(
        allocation_count=Count("allocations", distinct=True),
        ask_count=Count("asks", distinct=True),
    )
    serializer_class = serializers.ApplicationSerializer
    filterset_class = filtersets.ApplicationFilterSet
    lookup_field = "external_id"
    ordering_fields = ["external_id", "queue_path", "user"]
    ordering = ["external_id"]


@document_reads("allocation", serializers.AllocationSerializer)
class AllocationViewSet(PartitionReadOnlyViewSet):
    scoped = True  # rows of a queue: a grant's holder reads those of their subtrees
    queryset = Allocation.objects.select_related("application")
    serializer_class = serializers.AllocationSerializer
    filterset_class = filtersets.AllocationFilterSet
    lookup_field = "external_id"
    ordering_fields = ["external_id", "queue_path", "node_name", "priority", "created_at"]
    ordering = ["external_id"]


@document_reads("ask", serializers.AskSerializer)
class AskViewSet(PartitionReadOnlyViewSet):
    scoped = True  # rows of a queue: a grant's holder reads those of their subtrees
    queryset = Ask.objects.select_related("application")
    serializer_class = serializers.AskSerializer
    filterset_class = filtersets.AskFilterSet
    lookup_field = "external_id"
    ordering_fields = ["external_id", "queue_path", "priority", "created_at"]
    ordering = ["external_id"]


@document_reads("disruption budget", serializers.BudgetSerializer)
class BudgetViewSet(PartitionReadOnlyViewSet):
    queryset = DisruptionBudget.objects.all()
    serializer_class = serializers.BudgetSerializer
    filterset_class = filtersets.BudgetFilterSet
    lookup_field = "name"
    ordering_fields = ["name", "allowed_disruptions"]
    ordering = ["name"]


@document_reads("dynamic queue", serializers.DynamicQueueSerializer)
class DynamicQueueViewSet(PartitionReadOnlyViewSet):
    scoped = True  # queues of a subtree: a grant's holder reads those of their subtrees
    scope_path_field = "path"
    queryset = DynamicQueue.objects.all()
    serializer_class = serializers.DynamicQueueSerializer
    filterset_class = filtersets.DynamicQueueFilterSet
    lookup_field = "path"
    ordering_fields = ["path", "updated_at"]
    ordering = ["path"]


class ClusterStateView(PartitionScoped, APIView):
    """``POST partitions/{partition}/cluster-state`` (operator): bulk, idempotent upserts and
    removals of nodes, applications, allocations, asks and disruption budgets.

    The body is handed to the service untouched: it checks everything first (every problem with
    its path) and writes nothing unless the whole body is valid. JSON only. The answer counts
    the body's items, the rows its removals deleted and, under ``changed``, what it changed;
    a push that changes nothing writes nothing (not even an audit event).
    """

    write_action = OPERATE_CLUSTER
    # JSON only, through the API's safe parser (depth, NUL and lone surrogates refused with
    # their paths). The service's checker refuses them too, with out-of-range numbers and
    # over-long text: it serves the CLI and the simulator as well, so it cannot count on a
    # parser having looked first.
    parser_classes = [SafeJSONParser]

    @extend_schema(
        summary="Push cluster state",
        description=(
            "Upserts by id (nodes and budgets by name) and removals, all or nothing. Items use "
            "the scenario files' field names and defaults; applications are created from "
            '`app`/`queue`. With `"replace": true` the body is the partition\'s whole state: '
            "whatever it does not list is removed in the same transaction. Sending the same "
            "body twice changes nothing: only new or changed rows are written, `changed` counts "
            "them, and a push that changes nothing records no audit event. A replacement "
            "larger than one request is sent in pages (`page`): nothing changes until its last "
            "page arrives (202 before), and the last page applies them all as one replace push."
        ),
        request=serializers.ClusterStateSerializer,
        responses={
            200: serializers.IngestResultSerializer,
            202: serializers.PageKeptSerializer,
            **WRITE_ERRORS,
        },
    )
    def post(self, request: Request, partition: str) -> Response:
        authorize = access.authorizer(request.user, OPERATE_CLUSTER, None)
        if is_page(request.data):  # one page of a replacement (``cluster.replacement_pages``)
            answer = receive_page(
                self.partition, request.data, actor=request.user, authorize=authorize
            )
            if isinstance(answer, PageKept):
                return Response(answer.to_json(), status=202)
            return Response(answer.to_json())
        result = ingest_cluster_state(
            self.partition, request.data, actor=request.user, authorize=authorize
        )
        return Response(result.to_json())
