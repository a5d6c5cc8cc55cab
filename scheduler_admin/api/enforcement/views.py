"""The live loop's API (SPEC 5 and 7): quota timers, preemption runs and eviction orders.

Views declare (queryset, serializer, filterset); the writes call services:
``timers.cancel_timer``, ``evictions.acknowledge_eviction`` (one order),
``evictions.acknowledge_evictions`` (many, for the cluster's agent),
``evictions.report_evictions`` (the agent's reports on orders it cannot carry out yet) and
``runs.abort_run``.
Their "not found" exceptions are turned into 404 here, and "already ended" into 409, with the
common error body.
"""

from __future__ import annotations

from collections import Counter

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.enforcement import serializers
from scheduler_admin.api.permissions import ABORT_RUN, CANCEL_TIMER, OPERATE_CLUSTER
from scheduler_admin.api.views import (
    LIST_ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    ErrorSerializer,
    PartitionReadOnlyViewSet,
    PartitionScoped,
    StableOrderingFilter,
    document_reads,
    scoped_object,
)
from scheduler_admin.base.api.negotiation import SuffixChoosesFormat
from scheduler_admin.base.api.pagination import StandardPagination
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS
from scheduler_admin.base.api.strict import EmptyBodySerializer
from scheduler_admin.base.limits import BULK_ACK_MAX_ORDERS, BULK_REPORT_MAX_ORDERS
from scheduler_admin.enforcement import exports, filtersets
from scheduler_admin.enforcement.evictions import (
    AckResult,
    ClusterReport,
    OrderNotFound,
    ReportResult,
    acknowledge_eviction,
    acknowledge_evictions,
    report_evictions,
)
from scheduler_admin.enforcement.exports import explanation_items
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, QuotaTimer
from scheduler_admin.enforcement.runs import abort_run
from scheduler_admin.enforcement.timers import TimerNotFound, cancel_timer
from scheduler_admin.enforcement.visibility import visible_runs

# A POST that reads no field: an empty object, every field sent refused (``api.strict``).
NO_BODY = EmptyBodySerializer
ERROR = OpenApiResponse(ErrorSerializer, description="The run already ended.")
# Ids are matched by the ``int`` path converter (no sign); say so, or generated clients and
# schema tests send negative ids that no route matches.
ID = OpenApiParameter("id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH)


@extend_schema_view(
    list=extend_schema(
        summary="List quota timers",
        description="Pending timers by default (soonest first); `?status=` for others.",
        responses={200: serializers.TimerSerializer(many=True), **LIST_ERRORS},
    ),
)
class TimerViewSet(PartitionScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Quota timers of a partition (viewer); cancelling one is an operator's write."""

    queryset = QuotaTimer.objects.all()
    serializer_class = serializers.TimerSerializer
    filterset_class = filtersets.TimerFilterSet
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]
    ordering_fields = ["due_at", "started_at", "queue_path"]
    ordering = ["due_at", "queue_path", "id"]
    scoped = True
    action_access = {"cancel": CANCEL_TIMER}

    def get_queryset(self) -> QuerySet[QuotaTimer]:
        return access.visible_rows(self.request.user, super().get_queryset())

    @extend_schema(
        summary="Cancel a pending quota timer",
        description="The optional `comment` says why; it is kept in the audit event.",
        parameters=[ID],
        request=serializers.CancelTimerSerializer,
        responses={200: serializers.TimerSerializer, **WRITE_ERRORS},
    )
    @action(detail=True, methods=["post"], parser_classes=FLAT_BODY_PARSERS)
    def cancel(self, request: Request, partition: str, pk: str) -> Response:
        """404 for a timer of another partition, an unknown one, or one that already ended;
        403 for a queue grant's holder when it is not one of their queues' timers."""
        body = serializers.CancelTimerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        timer = scoped_object(
            request, self.get_queryset(), f"timer {pk}", self.partition.name, pk=pk
        )
        access.require(request.user, CANCEL_TIMER, timer.partition, timer.queue_path)
        try:
            timer = cancel_timer(
                timer.pk,
                actor=request.user,
                partition=timer.partition,
                comment=body.validated_data.get("comment", ""),
                authorize=access.authorizer(request.user, CANCEL_TIMER, timer.queue_path),
            )
        except TimerNotFound as exc:
            raise NotFound(str(exc)) from exc
        return Response(self.get_serializer(timer).data)


def _export_schema(suffix: str, media_type: str, body: object, what: str):
    return extend_schema(
        operation_id=f"v1_runs_export_{suffix}",
        summary=f"Export a run's candidates as {what}",
        description=(
            "Every candidate the run's plan explained, by candidate id, with the facts the "
            "decision used and the specific reason, as kept with the run when it planned (the "
            "fields of `explanations` in `runs/{id}/`). Sent as an attachment named "
            f"`run-<id>-candidates.{suffix}`; CSV cells that start with = + - @, tab or CR are "
            "neutralised."
        ),
        parameters=[ID],
        filters=False,
        responses={
            (200, media_type): OpenApiResponse(body, description=f"The {what} export."),
            **READ_ERRORS,
        },
    )


# Exports are whole documents: never paginated, and their format comes from the path.
_EXPORT_ACTION = {"pagination_class": None, "content_negotiation_class": SuffixChoosesFormat}


@extend_schema_view(
    list=extend_schema(
        summary="List preemption runs",
        description="Newest first.",
        responses={200: serializers.RunSerializer(many=True), **LIST_ERRORS},
    ),
    retrieve=extend_schema(
        summary="One run with its victims and explanations",
        parameters=[ID],
        responses={200: serializers.RunDetailSerializer, **READ_ERRORS},
    ),
)
class RunViewSet(viewsets.ReadOnlyModelViewSet):
    """Preemption runs of every partition (viewer), filtered by partition, queue, policy, ..."""

    queryset = PreemptionRun.objects.select_related("partition").listed()
    serializer_class = serializers.RunSerializer
    filterset_class = filtersets.RunFilterSet
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]
    ordering_fields = ["created_at", "finished_at"]
    ordering = ["-created_at", "-id"]
    scoped = True
    action_access = {"abort": ABORT_RUN}

    def get_queryset(self) -> QuerySet[PreemptionRun]:
        """The list reads no record of the plans (``listed``); one run's page reads its subject,
        its victims and its candidates (``RunDetailSerializer``). A queue grant's holder reads
        the runs inside their subtrees (``visibility.visible_runs``)."""
        queryset = visible_runs(self.request.user, super().get_queryset())
        if self.action == "retrieve":
            return queryset.defer(None)
        return queryset

    def get_object(self) -> PreemptionRun:
        pk = self.kwargs["pk"]
        queryset = self.filter_queryset(self.get_queryset())
        return scoped_object(self.request, queryset, f"run {pk}", pk=pk)

    def get_serializer_class(self) -> type[BaseSerializer]:
        if self.action == "retrieve":
            return serializers.RunDetailSerializer
        return self.serializer_class

    @_export_schema("csv", "text/csv", OpenApiTypes.STR, "CSV")
    @action(detail=True, url_path=r"export\.csv", **_EXPORT_ACTION)
    def export_csv(self, request: Request, pk: str) -> StreamingHttpResponse:
        return exports.export_response(self.get_object(), "csv")

    @_export_schema(
        "json", "application/json", serializers.ExplanationSerializer(many=True), "JSON"
    )
    @action(detail=True, url_path=r"export\.json", **_EXPORT_ACTION)
    def export_json(self, request: Request, pk: str) -> StreamingHttpResponse:
        return exports.export_response(self.get_object(), "json")

    @extend_schema(
        summary="A run's candidates, paginated",
        description="Every candidate the run's plan explained, by candidate id, with the facts "
        "the decision used and the specific reason, as kept with the run when it planned (the "
        "fields of `explanations` in `runs/{id}/`, which lists only the first ones). "
        "`accepted` and `reason` narrow the list.",
        parameters=[
            ID,
            OpenApiParameter(
                "accepted", bool, required=False,
                description="`true`: the victims only; `false`: the others.",
            ),
            OpenApiParameter(
                "reason", str, required=False, description="One reason code (e.g. `victim`)."
            ),
        ],
        filters=False,
        responses={200: serializers.ExplanationSerializer(many=True), **LIST_ERRORS},
    )  # fmt: skip
    @action(detail=True, filter_backends=[], pagination_class=StandardPagination)
    def candidates(self, request: Request, pk: str) -> Response:
        """Pages of ``exports.explanation_items`` (read in bulk, as the run's answer reads
        its first ones): the page's slice of the candidates, never all of them."""
        run = self.get_object()
        rows = run.candidates.order_by("candidate")
        accepted = request.query_params.get("accepted")
        if accepted:
            rows = rows.filter(accepted=accepted == "true")
        reason = request.query_params.get("reason")
        if reason:
            rows = rows.filter(reason=reason)
        page = self.paginate_queryset(rows.values_list("pk", flat=True))
        shown = run.candidates.filter(pk__in=page).order_by("candidate")
        return self.get_paginated_response(list(explanation_items(shown)))

    @extend_schema(
        summary="Abort an active run (admin)",
        description="The run ends `failed` with who aborted it and the comment; its queue is "
        "free again and a worker still executing it writes nothing more: once this answers, "
        "no further victim of the run is preempted (a batch of evictions in flight completes "
        "before the answer). Victims already preempted stay preempted. 409 when the run "
        "already ended (finished, failed or stopped).",
        parameters=[ID],
        request=serializers.AbortSerializer,
        responses={200: serializers.RunSerializer, 409: ERROR, **WRITE_ERRORS},
    )
    @action(detail=True, methods=["post"], parser_classes=FLAT_BODY_PARSERS)
    def abort(self, request: Request, pk: str) -> Response:
        body = serializers.AbortSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = self.get_object()
        access.require(request.user, ABORT_RUN, run.partition, run.queue_path)
        # ``RunNotFound`` and ``RunNotActive`` are domain kinds: the handler answers 404 / 409.
        abort_run(
            int(pk), actor=request.user, reason=body.validated_data.get("comment", ""),
            authorize=access.authorizer(request.user, ABORT_RUN, run.queue_path),
        )  # fmt: skip
        return Response(self.get_serializer(self.get_queryset().get(pk=pk)).data)


@document_reads("eviction order", serializers.EvictionSerializer, detail_parameters=[ID])
class EvictionViewSet(PartitionReadOnlyViewSet):
    """Eviction orders of a partition, oldest first (the cluster polls ``?status=pending``)."""

    queryset = EvictionOrder.objects.select_related("partition", "victim")
    serializer_class = serializers.EvictionSerializer
    filterset_class = filtersets.EvictionFilterSet
    ordering_fields = ["created_at", "acknowledged_at"]
    ordering = ["created_at", "id"]
    # A queue grant's holder reads the orders of their queues' tasks.
    scoped = True
    scope_path_field = "victim__queue_path"
    action_access = dict.fromkeys(("ack", "acknowledge", "report"), OPERATE_CLUSTER)

    def get_object(self) -> EvictionOrder:
        pk = self.kwargs.get("pk")
        queryset = self.filter_queryset(self.get_queryset())
        return scoped_object(
            self.request, queryset, f"eviction order {pk}", self.partition.name, pk=pk
        )

    @extend_schema(
        summary="Acknowledge an eviction order",
        description="The allocation is released and stops counting towards usage. "
        "Acknowledging twice is harmless: the second call changes nothing.",
        parameters=[ID],
        request=NO_BODY,
        responses={200: serializers.EvictionSerializer, **WRITE_ERRORS},
    )
    @action(detail=True, methods=["post"], parser_classes=FLAT_BODY_PARSERS)
    def ack(self, request: Request, partition: str, pk: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            order = acknowledge_eviction(
                int(pk), partition_name=self.partition.name, actor=request.user, via="api",
                authorize=access.authorizer(request.user, OPERATE_CLUSTER, None),
            )  # fmt: skip
        except OrderNotFound as exc:
            raise NotFound(str(exc)) from exc
        return Response(self.get_serializer(order).data)

    @extend_schema(
        summary="Acknowledge many eviction orders at once",
        description="For the cluster's agent: `orders` lists up to "
        f"{BULK_ACK_MAX_ORDERS:,} distinct order ids, each with an optional `outcome` "
        "(`evicted`, the default, `gone` when the task had already ended, or `refused` with "
        "a `reason` when the cluster cannot carry it out: the order ends, the task stays). In one "
        "transaction, each pending order is acknowledged and its task released, with one "
        "audit event per order, as `evictions/{id}/ack` does. The answer gives each id's "
        "`result`, in the request's order: `acknowledged`, `already_acknowledged` (left "
        "unchanged: sending an acknowledgement again is harmless) or `not_found` (no such order "
        "in the partition; nothing changed for it, the others are acknowledged). A body that "
        "is not valid (no orders, too many, an id listed twice, an unknown outcome or field) "
        "is a 400 naming each problem, and nothing is acknowledged. The request counts once "
        "against the write throttle, however many orders it names.",
        request=serializers.BulkAckSerializer,
        responses={200: serializers.BulkAckResultSerializer, **WRITE_ERRORS},
    )
    @action(detail=False, methods=["post"])
    def acknowledge(self, request: Request, partition: str) -> Response:
        body = serializers.BulkAckSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        orders = body.validated_data["orders"]
        items = [(item["id"], item["outcome"]) for item in orders]
        done = acknowledge_evictions(
            self.partition, items, actor=request.user, via="api",
            authorize=access.authorizer(request.user, OPERATE_CLUSTER, None),
            reasons={item["id"]: item["reason"] for item in orders if item["reason"]},
        )  # fmt: skip
        counts = Counter(result for _, result in done)
        return Response(
            {
                "acknowledged": counts[AckResult.ACKNOWLEDGED],
                "already_acknowledged": counts[AckResult.ALREADY_ACKNOWLEDGED],
                "not_found": counts[AckResult.NOT_FOUND],
                "results": [{"id": order_id, "result": result} for order_id, result in done],
            }
        )

    @extend_schema(
        summary="Report what the cluster answered about pending eviction orders",
        description="For the cluster's agent, when it could not carry an order out yet: "
        f"`orders` lists up to {BULK_REPORT_MAX_ORDERS:,} distinct order ids, each with a "
        "`status` (`blocked`: a disruption budget refused it; `failed`: another error, "
        "retried; `waiting`: a soft eviction waiting for the pod's owner), the cluster's "
        "`reason` and the HTTP `code`. In one transaction each still pending order keeps the "
        "report (`cluster_status`, `cluster_reason`, `cluster_code`, `cluster_reported_at`) "
        "and counts one more `cluster_attempts`; an acknowledged order is left alone "
        "(`already_acknowledged`), and an id of no order of the partition is `not_found`. An "
        "`eviction.reported` audit event is written only when an order's status or reason "
        "changes. A body that is not valid (no orders, too many, an id listed twice, an "
        "unknown status or field) is a 400 naming each problem, and nothing is stored. The "
        "request counts once against the write throttle.",
        request=serializers.BulkReportSerializer,
        responses={200: serializers.BulkReportResultSerializer, **WRITE_ERRORS},
    )
    @action(detail=False, methods=["post"])
    def report(self, request: Request, partition: str) -> Response:
        body = serializers.BulkReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reports = [
            ClusterReport(item["id"], item["status"], item["reason"], item["code"])
            for item in body.validated_data["orders"]
        ]
        done = report_evictions(
            self.partition, reports, actor=request.user,
            authorize=access.authorizer(request.user, OPERATE_CLUSTER, None),
        )  # fmt: skip
        counts = Counter(result for _, result in done)
        return Response(
            {
                "reported": counts[ReportResult.REPORTED],
                "already_acknowledged": counts[ReportResult.ALREADY_ACKNOWLEDGED],
                "not_found": counts[ReportResult.NOT_FOUND],
                "results": [{"id": order_id, "result": result} for order_id, result in done],
            }
        )
