"""``partitions/{p}/allocations/{id}/history/`` and ``partitions/{p}/applications/{id}/history/``
(viewer, or a queue grant on the task's queue): every run that considered a task, or the tasks
of an application, with the decision and the reason in words, and what became of the eviction
order. Reads ``enforcement.task_history``; paged like every list (``?page=``, ``?page_size=``).

A task or application that no run considered in the reader's subtrees is a 404, for every
reader alike: a queue grant's holder learns nothing about the tasks of other tenants, not even
whether they exist.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler_admin.accounts.permissions import is_scoped
from scheduler_admin.api.views import LIST_ERRORS, PartitionScoped
from scheduler_admin.base.api.pagination import StandardPagination
from scheduler_admin.enforcement import task_history
from scheduler_admin.enforcement.models import RunCandidate


class HistoryRunSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="run_id")
    readable = serializers.BooleanField(
        source="run_visible",
        help_text="Whether you may read the run (`runs/{id}/`). A queue grant's holder may "
        "not when the run also weighed tasks outside their queues: `queue` is then null "
        "and the consideration's `detail` empty.",
    )
    policy = serializers.CharField()
    trigger = serializers.CharField()
    queue = serializers.CharField(
        source="run_queue", allow_null=True, help_text="The run's own queue (null: hidden)."
    )
    status = serializers.CharField(source="run_status")
    outcome = serializers.CharField(source="run_outcome")
    observe = serializers.BooleanField(help_text="Planned while the partition only observed.")
    created_at = serializers.DateTimeField()

    def to_representation(self, instance: task_history.Consideration) -> dict:
        data = super().to_representation(instance)
        data["queue"] = data["queue"] or None
        return data


class HistoryOrderSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text="`pending` or `acknowledged`.")
    created_at = serializers.DateTimeField()
    soft = serializers.BooleanField()
    outcome = serializers.CharField(help_text="`evicted`, `gone`, or empty while pending.")
    acknowledged_at = serializers.DateTimeField(allow_null=True)
    cluster_status = serializers.CharField(
        help_text="The cluster's last report on a pending order: `blocked`, `failed`, "
        "`waiting`, or empty."
    )
    cluster_reason = serializers.CharField()
    cluster_code = serializers.IntegerField(allow_null=True)
    cluster_reported_at = serializers.DateTimeField(allow_null=True)
    words = serializers.CharField(help_text="What became of the order, in a sentence.")


class ConsiderationSerializer(serializers.Serializer):
    """One run that considered one task."""

    run = HistoryRunSerializer(source="*")
    task = serializers.CharField()
    application = serializers.CharField()
    queue = serializers.CharField(help_text="The task's queue when the run planned.")
    node = serializers.CharField()
    decision = serializers.ChoiceField(
        choices=["preempted", "chosen", "kept"],
        help_text="`preempted`: a victim, evicted (or its order sent); `chosen`: a victim the "
        "run did not evict (it only observed, stopped, failed, or has not reached it yet); "
        "`kept`: not taken.",
    )
    decision_words = serializers.CharField(help_text="The decision in a sentence.")
    reason = serializers.CharField(
        help_text="The reason code (the glossary and the documentation's reasons page)."
    )
    detail = serializers.CharField(
        help_text="The specific reason with its numbers, as kept with the run; empty when "
        "you may not read the run."
    )
    position = serializers.IntegerField(
        allow_null=True, help_text="1-based place among the victims (null otherwise)."
    )
    preempted_at = serializers.DateTimeField(allow_null=True)
    eviction = HistoryOrderSerializer(source="order", allow_null=True)


_ID = OpenApiParameter("external_id", OpenApiTypes.STR, OpenApiParameter.PATH)


class _HistoryView(PartitionScoped, generics.GenericAPIView):
    """Shared by the task's and the application's history (module docstring)."""

    queryset = RunCandidate.objects.all()
    serializer_class = ConsiderationSerializer
    pagination_class = StandardPagination
    filter_backends: list = []
    # Narrowed by the task's queue (``task_history``): any grant in the partition may ask.
    scoped = True
    what = ""

    def get_queryset(self) -> QuerySet[RunCandidate]:
        """Unused but by the schema generator: the rows come from ``rows``."""
        return RunCandidate.objects.none()

    def rows(self, identifier: str) -> QuerySet[RunCandidate]:
        raise NotImplementedError

    def answer(self, request: Request, identifier: str) -> Response:
        if "\x00" in identifier:  # PostgreSQL text cannot hold NUL: no run considered it
            raise NotFound(f"No run considered {self.what} {identifier!r}.")
        rows = self.rows(identifier)
        page = self.paginate_queryset(rows)
        if not page and self.paginator.page.number == 1:
            raise NotFound(
                f"No run of partition {self.partition.name} considered {self.what} "
                f"{identifier!r}" + (" in your queues." if is_scoped(request.user) else ".")
            )
        found = task_history.describe(page, request.user)
        return self.get_paginated_response(self.get_serializer(found, many=True).data)


class TaskHistoryView(_HistoryView):
    what = "task"

    def rows(self, identifier: str) -> QuerySet[RunCandidate]:
        return task_history.task_considerations(self.partition, identifier, self.request.user)

    @extend_schema(
        operation_id="v1_allocation_history",
        summary="Why was this task preempted? Every run that considered it",
        description="Every preemption run of the partition that weighed the task (by its "
        "allocation id: the pod), newest first: the run (policy, trigger, when, status), the "
        "decision on the task (`preempted`, `chosen`, `kept`) with the reason code and the "
        "specific reason in words as kept with the run, and its eviction order with what the "
        "cluster answered. A queue grant's holder sees tasks of their queues only. 404 when no "
        "run considered the task (in your queues).",
        parameters=[_ID],
        filters=False,
        responses={200: ConsiderationSerializer(many=True), **LIST_ERRORS},
    )
    def get(self, request: Request, partition: str, external_id: str) -> Response:
        return self.answer(request, external_id)


class ApplicationHistoryView(_HistoryView):
    what = "a task of application"

    def rows(self, identifier: str) -> QuerySet[RunCandidate]:
        return task_history.application_considerations(
            self.partition, identifier, self.request.user
        )

    @extend_schema(
        operation_id="v1_application_history",
        summary="Every run that considered a task of this application",
        description="As `allocations/{external_id}/history/`, for every task of the "
        "application (as the runs recorded it), newest run first and by task id within a run.",
        parameters=[_ID],
        filters=False,
        responses={200: ConsiderationSerializer(many=True), **LIST_ERRORS},
    )
    def get(self, request: Request, partition: str, external_id: str) -> Response:
        return self.answer(request, external_id)
