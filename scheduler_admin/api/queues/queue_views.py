"""Partitions and queues over REST (SPEC 7): list and read them, change a partition's settings,
create, edit and delete a queue.

Views parse with serializers, call one service, and render. Every write takes a ``comment`` and
the ``version`` the client read (body or ``If-Match``); a stale version is a 409. ``?dry_run=true``
on a queue PATCH validates and returns what the change would trigger (timers and their plans)
without saving anything (``preview_views.dry_run_body``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption import resources
from preemption.config import PROPERTY_DELAY, PROPERTY_QUOTA_DELAY, ROOT, QueueConfig
from preemption.hierarchy import Hierarchy
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import (
    ADMINISTER,
    CREATE_QUEUE,
    DELETE_QUEUE,
    EDIT_QUEUE,
    PREVIEW,
    READ,
)
from scheduler_admin.api.queues import scheduled
from scheduler_admin.api.queues.change_requests import ACCEPTED_202, HELD_202, held_response
from scheduler_admin.api.queues.params import IF_MATCH
from scheduler_admin.api.queues.preview_views import dry_run_body
from scheduler_admin.api.queues.responses import QueueRowSerializer, saved_or_dry_run
from scheduler_admin.api.queues.serializers import (
    PartitionPatchSerializer,
    PartitionSerializer,
    QueueCreateSerializer,
    QueueDeleteBodySerializer,
    QueueDeleteSerializer,
    QueuePatchBodySerializer,
    QueuePatchSerializer,
)
from scheduler_admin.base.api.concurrency import expected_version, with_etag
from scheduler_admin.base.api.dry_run import DRY_RUN_PARAMETERS, DRY_RUN_RULE, is_dry_run
from scheduler_admin.base.api.pagination import StandardPagination
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS
from scheduler_admin.cluster.adapters import usage_of_queues
from scheduler_admin.cluster.dynamic import cluster_tree
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.enforcement.candidates import EXPLANATIONS_PARAMETER, every_explanation
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_config, current_tree


@extend_schema(summary="List partitions", description="Every partition with its settings.")
class PartitionList(ListAPIView):
    """All partitions with their settings (a queue grant's holder: the partitions of their
    grants)."""

    serializer_class = PartitionSerializer
    queryset = Partition.objects.order_by("name")
    scoped = True
    filterset_fields = ["name", "ask_policy", "quota_preemption_enabled"]
    ordering_fields = ["name"]

    def get_queryset(self):
        return access.visible_partitions(self.request.user, super().get_queryset())


class PartitionDetail(APIView):
    """One partition's settings (readable by a queue grant's holder in it: they are not any
    tenant's data); PATCH changes them (admin) as a new revision."""

    scoped = True
    write_action = ADMINISTER

    @extend_schema(summary="One partition's settings", responses=PartitionSerializer)
    def get(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        return with_etag(
            Response(PartitionSerializer(obj).data), "partition", obj.name, obj.version
        )

    @extend_schema(
        summary="Change partition settings (admin)",
        description="Each setting given is changed, as a new config revision (audited); "
        "`comment` is required, `version` (or If-Match) is checked when given.",
        request=PartitionPatchSerializer,
        parameters=[IF_MATCH],
        responses=PartitionSerializer,
    )
    def patch(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        body = PartitionPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        version = expected_version(request, data.pop("version", None))
        comment = data.pop("comment")
        services.update_partition_settings(
            obj.name, actor=request.user, comment=comment, expected_revision=version,
            authorize=access.authorizer(request.user, ADMINISTER, None), **data,
        )  # fmt: skip
        obj.refresh_from_db()
        return with_etag(
            Response(PartitionSerializer(obj).data), "partition", obj.name, obj.version
        )


def _queue_rows(partition: Partition, paths: list[str] | None = None) -> list[dict[str, Any]]:
    """The queues ``paths`` (every queue when None), in that order, each with its effective
    values, usage, pending asks and timer (SPEC 7).

    Only what those rows show is read: usage and pending asks of their subtrees, their timers
    and versions. The config comes parsed from the newest revision (``queues.saved``).
    """
    config, _ = current_tree(partition)
    # Usage and pending asks count the cluster's dynamic queues in their ancestors (SPEC 3.4);
    # the rows are the configured queues (the dynamic ones are at ``dynamic-queues/``).
    _, hierarchy, _ = cluster_tree(partition)
    if paths is None:
        paths = [queue.path for queue in config.queues]
    usage = usage_of_queues(partition, hierarchy, paths)
    wanted = set(paths)
    asks = Ask.objects.filter(partition=partition, state=AskState.PENDING)
    if ROOT not in wanted:  # root's pending asks are every configured queue's
        asks = asks.filter(queue_path__in=[q for top in wanted for q in hierarchy.subtree(top)])
    pending: dict[str, dict[str, int]] = {}
    for queue_path, amount in asks.values_list("queue_path", "resources"):
        if queue_path not in hierarchy.queues:
            continue  # a queue that is not configured has no row
        for step in (queue_path, *hierarchy.ancestors(queue_path)):
            if step in wanted:
                pending[step] = resources.add(pending.get(step, {}), amount)
    timer_rows = QuotaTimer.objects.filter(partition=partition, status=TimerStatus.PENDING)
    queue_rows = partition.queues.all()
    if len(wanted) < len(hierarchy.queues):
        timer_rows = timer_rows.filter(queue_path__in=wanted)
        queue_rows = queue_rows.filter(path__in=wanted)
    timers = {t.queue_path: t for t in timer_rows}
    versions = dict(queue_rows.values_list("path", "version"))
    return [
        _queue_row(hierarchy.queues[path], hierarchy, usage, pending, timers, versions)
        for path in paths
    ]


def _queue_path_list(partition: Partition, under: str | None) -> list[str]:
    """Every queue path (or those of ``under``'s subtree), ordered by path."""
    _, hierarchy = current_tree(partition)
    if under:
        if under not in hierarchy.queues:
            return []
        return sorted(hierarchy.subtree(under))
    return sorted(hierarchy.queues)


def _queue_row(
    queue: QueueConfig,
    hierarchy: Hierarchy,
    usage: dict[str, dict[str, int]],
    pending: dict[str, dict[str, int]],
    timers: dict[str, QuotaTimer],
    versions: dict[str, int],
) -> dict[str, Any]:
    policy = hierarchy.effective_policy(queue.path)
    quota_delay = hierarchy.effective_quota_delay(queue.path)
    delay = hierarchy.preemption_delay(queue.path)
    timer = timers.get(queue.path)
    return {
        "path": queue.path,
        "name": queue.name,
        "parent": queue.parent,
        "is_leaf": hierarchy.is_leaf(queue.path),
        "guaranteed": resources.format_resources(queue.guaranteed),
        "max": resources.format_resources(queue.max),
        "properties": dict(queue.properties),
        "effective": {
            "max": resources.format_resources(hierarchy.effective_max(queue.path)),
            "preemption_policy": {"value": policy.value, "source": policy.source},
            "quota_preemption_delay": {
                "seconds": quota_delay.value,
                "duration": hierarchy.duration_text(quota_delay, PROPERTY_QUOTA_DELAY),
                "source": quota_delay.source,
            },
            "preemption_delay": {
                "seconds": delay.value,
                "duration": hierarchy.duration_text(delay, PROPERTY_DELAY),
                "source": delay.source,
            },
        },
        "usage": resources.format_resources(usage.get(queue.path, {})),
        "pending": resources.format_resources(pending.get(queue.path, {})),
        "version": versions.get(queue.path),
        "quota_timer": (
            None
            if timer is None
            else {
                "id": timer.pk,
                "due_at": timer.due_at,
                "deferred": timer.deferred_since is not None,
            }
        ),
    }


class QueueList(APIView):
    """The partition's queues as a flat list ordered by path, so parents come before their
    children and pages are stable (GET, viewer; paginated like every list; ``?under=PATH``
    keeps one subtree); POST creates a queue under ``parent`` (admin).

    An ``APIView`` paging a computed list: the rows are built from the config, not a queryset.
    """

    scoped = True
    write_action = CREATE_QUEUE
    pagination_class = StandardPagination

    @extend_schema(
        summary="List queues",
        description="Every queue with its effective values, usage, pending asks, version and "
        "pending quota timer, ordered by path (parents first). Paginated.",
        parameters=[OpenApiParameter("under", OpenApiTypes.STR, description="subtree root")],
        responses=QueueRowSerializer(many=True),
    )
    def get(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        under = request.query_params.get("under")
        if under:
            access.require(request.user, READ, obj, under)
        paths = access.visible_paths(request.user, obj.name, _queue_path_list(obj, under))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(paths, request, view=self)
        return paginator.get_paginated_response(_queue_rows(obj, list(page or [])))

    @extend_schema(
        summary="Create a queue (admin)",
        description="A new queue `name` under `parent`, validated with the whole partition and "
        "saved as a new revision.",
        request=QueueCreateSerializer,
        responses={201: QueueRowSerializer, 202: HELD_202},
    )
    def post(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        body = QueueCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        access.require(request.user, CREATE_QUEUE, obj, data["parent"])
        result, path = services.create_queue(
            obj.name, parent=data["parent"], name=data["name"], actor=request.user,
            comment=data["comment"], guaranteed=data["guaranteed"], max=data["max"],
            properties=data["properties"], request_approval=True,
            authorize=access.authorizer(request.user, CREATE_QUEUE, data["parent"]),
        )  # fmt: skip
        if result.change_request is not None:
            return held_response(result.change_request)
        [row] = _queue_rows(obj, [path])
        return Response(row, status=201)


class QueueDetail(APIView):
    """One queue. PATCH (operator) changes ``guaranteed``, ``max``, ``properties`` — each one
    given is replaced whole (send the full map); DELETE (admin) removes it and its subtree.
    Both need the version read (body or ``If-Match``) and a comment. A queue grant covers the
    queue in the URL: its holder gets 403 with the reason outside their subtrees."""

    queue_kwarg = "path"

    def _row(self, partition: Partition, path: str) -> dict[str, Any]:
        if path not in current_tree(partition)[1].queues:
            raise services.NotFound(
                f"queue {path!r} does not exist in partition {partition.name!r}"
            )
        [row] = _queue_rows(partition, [path])
        return row

    @extend_schema(summary="One queue", responses=QueueRowSerializer)
    def get(self, request: Request, partition: str, path: str) -> Response:
        row = self._row(services.get_partition(partition), path)
        return with_etag(Response(row), "queue", path, row["version"])

    @extend_schema(
        summary="Change a queue's guaranteed, max or properties (operator)",
        description="Each of `guaranteed`, `max` and `properties` given is replaced whole. "
        "Answers the queue as saved, or with `?dry_run=true` the preview "
        "`{dry_run, valid, timers, plans, ...}`: the quota timers the change would start or "
        "reset and the plan each would run; nothing is saved. Unknown fields are a 400. With "
        "`apply_at`, 202 and the scheduled change (see Scheduled changes). " + DRY_RUN_RULE,
        request=QueuePatchBodySerializer,
        parameters=[*DRY_RUN_PARAMETERS, EXPLANATIONS_PARAMETER, IF_MATCH],
        responses={
            200: saved_or_dry_run(QueueRowSerializer, "QueueOrDryRun"),
            202: ACCEPTED_202,
        },
    )
    def patch(self, request: Request, partition: str, path: str) -> Response:
        obj = services.get_partition(partition)
        body = QueuePatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        version = expected_version(request, data.pop("version", None))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        comment = data.pop("comment")
        apply_at = data.pop("apply_at", None)  # a scheduled change (api/queues/scheduled.py)
        if is_dry_run(request):
            config = current_config(obj)
            queue = services.queue_from_config(config, path)
            current_version = obj.queues.filter(path=path).values_list("version", flat=True).first()
            if current_version != version:
                raise services.StaleVersion(
                    f"queue {path!r} is at version {current_version}, not {version}",
                    current=current_version,
                )
            preview = dry_run_body(
                obj, config.with_queue(replace(queue, **data)), base=config,
                every=every_explanation(request),
            )  # fmt: skip
            return scheduled.judged_again(preview, apply_at)
        if apply_at is not None:
            return scheduled.schedule_queue(
                request, obj, path, version=version, comment=comment, apply_at=apply_at,
                changes=data,
            )  # fmt: skip
        result = services.update_queue(
            obj.name, path, version=version, actor=request.user, comment=comment, **data,
            authorize=access.authorizer(request.user, EDIT_QUEUE, path), request_approval=True,
        )  # fmt: skip
        if result.change_request is not None:
            return held_response(result.change_request)
        row = self._row(obj, path)
        return with_etag(Response(row), "queue", path, row["version"])

    @extend_schema(
        summary="Delete a queue and its subtree (admin)",
        request=QueueDeleteBodySerializer,
        parameters=[IF_MATCH],
        responses={204: None, 202: HELD_202},
    )
    def delete(self, request: Request, partition: str, path: str) -> Response:
        obj = services.get_partition(partition)
        body = QueueDeleteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = expected_version(request, body.validated_data.get("version"))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        result = services.delete_queue(
            obj.name,
            path,
            version=version,
            actor=request.user,
            comment=body.validated_data.get("comment") or f"Delete {path}",
            authorize=access.authorizer(request.user, DELETE_QUEUE, path),
            request_approval=True,
        )
        if result.change_request is not None:
            return held_response(result.change_request)
        return Response(status=204)

    def get_parsers(self) -> list[Any]:
        if getattr(self, "request", None) is not None and self.request.method == "DELETE":
            return [parser() for parser in FLAT_BODY_PARSERS]
        return super().get_parsers()

    def permission_action(self, request: Request) -> str:
        """Per method (the browsable API asks one view about several)."""
        if request.method == "DELETE":
            return DELETE_QUEUE
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return READ
        return PREVIEW if is_dry_run(request) else EDIT_QUEUE
