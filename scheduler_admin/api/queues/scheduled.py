"""Scheduled changes over REST (SPEC 6 and 7): ``apply_at`` on a queue PATCH and a config PUT,
and the list, detail and cancel endpoints under ``partitions/{p}/scheduled-changes/``.

A write that carries ``apply_at`` is checked exactly as the save would be (same 400s, 403s and
409s) and answered 202 with the scheduled change; nothing else changes until its time
(``queues.scheduled``). With ``?dry_run=true`` the preview is the usual one, of the change as if
it were saved now, with ``apply_at`` and a note that it will be judged again at its time.

Cancel is ``POST .../scheduled-changes/{id}/cancel`` (like ``timers/{id}/cancel`` and
``runs/{id}/abort``: the row stays, as ``cancelled``, so DELETE would misname it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django_filters import rest_framework as filters
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from preemption import resources
from preemption.config import PartitionConfig
from scheduler_admin.accounts import permissions as access
from scheduler_admin.accounts.permissions import ADMINISTER, EDIT_QUEUE
from scheduler_admin.accounts.scheduled_access import cancel_authorizer, may_cancel
from scheduler_admin.api.views import (
    LIST_ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    PartitionScoped,
    StableOrderingFilter,
    scoped_object,
)
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS
from scheduler_admin.base.api.strict import EmptyBodySerializer
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import (
    Partition,
    ScheduledChange,
    ScheduledKind,
    ScheduledStatus,
)

#: What the preview of a scheduled change adds to the usual preview.
JUDGED_AGAIN = (
    "This preview shows what the change would do if it were saved now. It is scheduled: at "
    "its time it is applied to the config as it is then and validated again, and its plans "
    "are made from the cluster as it is then."
)
ID = OpenApiParameter("id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH)


class ScheduledChangeSerializer(serializers.ModelSerializer):
    """A scheduled change: what it changes, when, by whom, and what became of it."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    author = serializers.CharField(source="author_name", read_only=True)
    change = serializers.SerializerMethodField(
        help_text="For a queue change, the fields it sets (quantities as exact strings); for "
        "a whole config, the config."
    )
    summary = serializers.SerializerMethodField(help_text="What it changes, in a few words.")

    class Meta:
        model = ScheduledChange
        fields = [
            "id", "partition", "kind", "queue_path", "summary", "change", "apply_at", "author",
            "comment", "created_at", "status", "finished_at", "cancelled_by", "revision_number",
            "reason",
        ]  # fmt: skip
        read_only_fields = fields

    def get_change(self, change: ScheduledChange) -> dict[str, Any]:
        return shown_change(change)

    def get_summary(self, change: ScheduledChange) -> str:
        return scheduled.describe(change)


def shown_change(change: ScheduledChange) -> dict[str, Any]:
    """The change as the API shows quantities: exact strings, as the queue rows show them."""
    if change.kind != ScheduledKind.QUEUE:
        return dict(change.change)
    shown: dict[str, Any] = {}
    for field, value in change.change.items():
        shown[field] = resources.format_resources(value) if field != "properties" else value
    return shown


class ScheduledChangeFilterSet(filters.FilterSet):
    status = filters.ChoiceFilter(
        choices=ScheduledStatus.choices, help_text="Any status when absent."
    )
    queue = filters.CharFilter(field_name="queue_path", help_text="Changes of this queue.")

    class Meta:
        model = ScheduledChange
        fields: list[str] = []


def visible_changes(user: Any, queryset: QuerySet[ScheduledChange]) -> QuerySet[ScheduledChange]:
    """What ``user`` may read: everything for a global viewer, the changes of their subtrees
    for a grant holder (never a whole-config change)."""
    return scheduled.visible_to(queryset, access.read_scope(user))


# ---- the writes that carry apply_at ---------------------------------------------------------
def schedule_queue(
    request: Request, partition: Partition, path: str, *, version: int, comment: str,
    apply_at: datetime, changes: dict[str, Any],
) -> Response:  # fmt: skip
    """A queue PATCH with ``apply_at``: checked as the save, kept, 202."""
    change = scheduled.schedule_queue_change(
        partition.name, path, version=version, actor=request.user, comment=comment,
        apply_at=apply_at, authorize=access.authorizer(request.user, EDIT_QUEUE, path),
        **changes,
    )  # fmt: skip
    return Response(ScheduledChangeSerializer(change).data, status=202)


def schedule_whole_config(
    request: Request, config: PartitionConfig, *, version: int, comment: str, apply_at: datetime
) -> Response:
    """A config PUT with ``apply_at``: checked as the save, kept, 202."""
    change = scheduled.schedule_config(
        config, actor=request.user, comment=comment, apply_at=apply_at,
        expected_revision=version, authorize=access.authorizer(request.user, ADMINISTER, None),
    )  # fmt: skip
    return Response(ScheduledChangeSerializer(change).data, status=202)


def judged_again(preview: Response, apply_at: datetime | None) -> Response:
    """The preview of a write; with ``apply_at`` (checked like the write checks it), it says
    when the change is scheduled for and that it will be judged again then."""
    if apply_at is None:
        return preview
    scheduled.check_apply_at(apply_at, timezone.now())
    preview.data["apply_at"] = apply_at
    preview.data["note"] = JUDGED_AGAIN
    return preview


# ---- list, detail, cancel -------------------------------------------------------------------
@extend_schema_view(
    list=extend_schema(
        summary="List scheduled changes",
        description="Soonest first. A queue grant's holder sees the changes of their queues.",
        responses={200: ScheduledChangeSerializer(many=True), **LIST_ERRORS},
    ),
    retrieve=extend_schema(
        summary="One scheduled change",
        parameters=[ID],
        responses={200: ScheduledChangeSerializer, **READ_ERRORS},
    ),
)
class ScheduledChangeViewSet(
    PartitionScoped, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Scheduled changes of a partition (viewer, narrowed to a grant holder's subtrees);
    cancelling one is its author's or an admin's write (``accounts.scheduled_access``)."""

    queryset = ScheduledChange.objects.select_related("partition")
    serializer_class = ScheduledChangeSerializer
    filterset_class = ScheduledChangeFilterSet
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]
    ordering_fields = ["apply_at", "created_at"]
    ordering = ["apply_at", "id"]
    scoped = True
    # The author of a change may cancel it without any admin role: the view lets every signed-in
    # caller with a right in the partition through and decides on the change itself.
    action_access = {"cancel": access.READ}

    def get_queryset(self) -> QuerySet[ScheduledChange]:
        return visible_changes(self.request.user, super().get_queryset())

    def get_object(self) -> ScheduledChange:
        return scoped_object(
            self.request, self.get_queryset(), f"scheduled change {self.kwargs['pk']}",
            self.partition.name, pk=self.kwargs["pk"],
        )  # fmt: skip

    @extend_schema(
        summary="Cancel a pending scheduled change (its author or an admin)",
        description="Its author may cancel it; anyone else needs the admin role (a tenant "
        "admin: inside their subtree). 409 once it was applied, failed or cancelled.",
        parameters=[ID],
        request=EmptyBodySerializer,
        responses={200: ScheduledChangeSerializer, **WRITE_ERRORS},
    )
    @action(detail=True, methods=["post"], parser_classes=FLAT_BODY_PARSERS)
    def cancel(self, request: Request, partition: str, pk: str) -> Response:
        body = EmptyBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        change = self.get_object()
        decision = may_cancel(request.user, change)
        if not decision:
            raise PermissionDenied(decision.reason)
        change = scheduled.cancel_scheduled_change(
            self.partition.name, change.pk, actor=request.user,
            authorize=cancel_authorizer(request.user, change),
        )  # fmt: skip
        return Response(self.get_serializer(change).data)


def _write(name: str) -> Any:
    """A POST action wired as a router would wire it (its ``@action`` arguments)."""
    return ScheduledChangeViewSet.as_view(
        {"post": name}, **getattr(ScheduledChangeViewSet, name).kwargs
    )


def urlpatterns_for(prefix: str, re_prefix: str) -> list[Any]:
    """The routes, under ``partitions/{p}/`` (``api/queues/urls.py`` includes them); cancel is
    accepted with and without a trailing slash, as the other POST actions are."""
    from django.urls import path, re_path

    return [
        path(
            f"{prefix}/scheduled-changes/",
            ScheduledChangeViewSet.as_view({"get": "list"}),
            name="api-scheduled-list",
        ),
        path(
            f"{prefix}/scheduled-changes/<int:pk>/",
            ScheduledChangeViewSet.as_view({"get": "retrieve"}),
            name="api-scheduled-detail",
        ),
        re_path(
            rf"{re_prefix}/scheduled-changes/(?P<pk>[0-9]+)/cancel(?:/)?$",
            _write("cancel"),
            name="api-scheduled-cancel",
        ),
    ]
