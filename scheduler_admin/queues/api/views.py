"""Partitions, queues, whole configs and revisions over REST (SPEC 7).

Views parse with serializers, call one service, and render. Every write takes a ``comment`` and
the ``version`` the client read (body or ``If-Match``); a stale version is a 409. ``?dry_run=true``
on a queue PATCH or a config PUT validates and returns what the change would trigger (timers and
their plans) without saving anything.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption import resources
from preemption.config import (
    PROPERTY_DELAY,
    PROPERTY_QUOTA_DELAY,
    ROOT,
    PartitionConfig,
    QueueConfig,
    diff_configs,
)
from preemption.hierarchy import ConfigErrors, Hierarchy, normalized_config, validate_config
from preemption.yunikorn import yunikorn_min_version
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import (
    ADMINISTER,
    CREATE_QUEUE,
    DELETE_QUEUE,
    EDIT_QUEUE,
    PREVIEW,
    READ,
    SIMULATE,
)
from scheduler_admin.base import deadlines, limits
from scheduler_admin.base.api.concurrency import (
    IF_MATCH_MAX_LENGTH,
    IF_MATCH_PATTERN,
    expected_version,
    with_etag,
)
from scheduler_admin.base.api.dry_run import DRY_RUN_PARAMETERS, DRY_RUN_RULE, is_dry_run
from scheduler_admin.base.api.pagination import StandardPagination
from scheduler_admin.base.api.params import int_param
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS, YAML_BODY_PARSERS, ConfigJSONParser
from scheduler_admin.cluster.adapters import usage_of_queues
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.cluster.resource_types import resource_type_warnings
from scheduler_admin.cluster.services import IngestErrors, parse_cluster_state
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.enforcement.previews import (
    UnknownTarget,
    plan_json,
    preview_change,
    simulation,
    simulation_options,
)
from scheduler_admin.queues import services
from scheduler_admin.queues.api.responses import (
    PlanSerializer,
    QueueRowSerializer,
    RevisionDetailSerializer,
    ValidateResultSerializer,
    saved_or_dry_run,
)
from scheduler_admin.queues.api.serializers import (
    ConfigPutBodySerializer,
    ConfigSerializer,
    PartitionPatchSerializer,
    PartitionSerializer,
    QueueCreateSerializer,
    QueueDeleteBodySerializer,
    QueueDeleteSerializer,
    QueuePatchBodySerializer,
    QueuePatchSerializer,
    RevertBodySerializer,
    RevertSerializer,
    RevertUnchangedSerializer,
    RevisionSerializer,
    SimulateSerializer,
    config_or_every_fault,
    config_to_json,
    yunikorn_facts,
)
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.queues.saved import current_config, current_tree
from scheduler_admin.queues.yaml_io import (
    config_to_publish,
    parse_queues_yaml,
    render_queues_yaml,
)

IF_MATCH = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": IF_MATCH_PATTERN, "maxLength": IF_MATCH_MAX_LENGTH},
    OpenApiParameter.HEADER,
    description="The ETag you read, instead of (or agreeing with) `version` in the body.",
)


#: A YuniKorn ``queues.yaml`` document (its partitions; the server checks the rest).
QUEUES_YAML = {
    "type": "object",
    "properties": {
        "partitions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
            },
            "minItems": 1,
        }
    },
    "required": ["partitions"],
    "description": "A YuniKorn queues.yaml document: `partitions`, each with its `queues`.",
}
#: A PUT takes the one partition of its URL.
QUEUES_YAML_PUT = {
    **QUEUES_YAML,
    "properties": {"partitions": {**QUEUES_YAML["properties"]["partitions"], "maxItems": 1}},
    "description": "A YuniKorn queues.yaml document holding exactly the partition of the URL "
    "(by `name`), with its `queues`.",
}


#: ``_bool_param``'s words, as the schema states them (any letter case).
FLAG_SCHEMA = {
    "type": "string",
    "pattern": "^(?:[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss]|1|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|0)$",
    "x-expected": "must be true or false (also yes or no, 1 or 0, in any letter case)",
}


def _bool_param(request: Request, name: str) -> bool:
    """An optional true/false query parameter; anything else is a 400 naming it (a misspelt
    ``?publish=ture`` must not quietly answer the other document)."""
    raw = request.query_params.get(name, "")
    raw = raw.lower() if raw.isascii() else raw
    if raw in {"", "0", "false", "no"}:
        return False
    if raw in {"1", "true", "yes"}:
        return True
    raise ValidationError({name: ["must be true or false"]})


def _partition(name: str) -> Partition:
    return services.get_partition(name)


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
        obj = _partition(partition)
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
        obj = _partition(partition)
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
    config, hierarchy = current_tree(partition)
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
        obj = _partition(partition)
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
        responses={201: QueueRowSerializer},
    )
    def post(self, request: Request, partition: str) -> Response:
        obj = _partition(partition)
        body = QueueCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        access.require(request.user, CREATE_QUEUE, obj, data["parent"])
        _, path = services.create_queue(
            obj.name, parent=data["parent"], name=data["name"], actor=request.user,
            comment=data["comment"], guaranteed=data["guaranteed"], max=data["max"],
            properties=data["properties"],
            authorize=access.authorizer(request.user, CREATE_QUEUE, data["parent"]),
        )  # fmt: skip
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
        row = self._row(_partition(partition), path)
        return with_etag(Response(row), "queue", path, row["version"])

    @extend_schema(
        summary="Change a queue's guaranteed, max or properties (operator)",
        description="Each of `guaranteed`, `max` and `properties` given is replaced whole. "
        "Answers the queue as saved, or with `?dry_run=true` the preview "
        "`{dry_run, valid, timers, plans, ...}`: the quota timers the change would start or "
        "reset and the plan each would run; nothing is saved. Unknown fields are a 400. "
        + DRY_RUN_RULE,
        request=QueuePatchBodySerializer,
        parameters=[*DRY_RUN_PARAMETERS, IF_MATCH],
        responses={200: saved_or_dry_run(QueueRowSerializer, "QueueOrDryRun")},
    )
    def patch(self, request: Request, partition: str, path: str) -> Response:
        obj = _partition(partition)
        body = QueuePatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        version = expected_version(request, data.pop("version", None))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        comment = data.pop("comment")
        if is_dry_run(request):
            config = current_config(obj)
            queue = services.queue_from_config(config, path)
            current_version = obj.queues.filter(path=path).values_list("version", flat=True).first()
            if current_version != version:
                raise services.StaleVersion(
                    f"queue {path!r} is at version {current_version}, not {version}",
                    current=current_version,
                )
            return _preview(obj, config.with_queue(replace(queue, **data)), base=config)
        services.update_queue(
            obj.name, path, version=version, actor=request.user, comment=comment, **data,
            authorize=access.authorizer(request.user, EDIT_QUEUE, path),
        )  # fmt: skip
        row = self._row(obj, path)
        return with_etag(Response(row), "queue", path, row["version"])

    @extend_schema(
        summary="Delete a queue and its subtree (admin)",
        request=QueueDeleteBodySerializer,
        parameters=[IF_MATCH],
        responses={204: None},
    )
    def delete(self, request: Request, partition: str, path: str) -> Response:
        obj = _partition(partition)
        body = QueueDeleteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = expected_version(request, body.validated_data.get("version"))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        services.delete_queue(
            obj.name,
            path,
            version=version,
            actor=request.user,
            comment=body.validated_data.get("comment") or f"Delete {path}",
            authorize=access.authorizer(request.user, DELETE_QUEUE, path),
        )
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


def _preview(
    partition: Partition, config: PartitionConfig, *, base: PartitionConfig | None = None
) -> Response:
    """The dry-run body of ``config``; ``base``: the saved config it edits in place, whose
    findings the validation reuses outside the edited queues (``validate_config``)."""
    errors = validate_config(config, base=base)
    if errors:
        raise ConfigErrors(errors)
    deadlines.check("validating the config")
    preview = preview_change(partition, config)
    deadlines.check("previewing the change")
    facts = yunikorn_facts(normalized_config(config), resource_type_warnings(partition, config))
    return Response({"dry_run": True, "valid": True, **preview.to_json(), **facts})


class ConfigView(APIView):
    """The whole partition config as JSON (GET, viewer); PUT replaces it atomically (admin),
    ``?dry_run=true`` previews. Both concern the whole partition: global roles only."""

    write_action = ADMINISTER
    parser_classes = [ConfigJSONParser]

    @extend_schema(
        summary="The whole partition config as JSON",
        description="What a PUT takes back: edit it and send it with a `comment`.",
        responses=ConfigSerializer,
    )
    def get(self, request: Request, partition: str) -> Response:
        obj = _partition(partition)
        response = Response(config_to_json(obj.current_config(), obj.version))
        return with_etag(response, "config", obj.name, obj.version)

    @extend_schema(
        summary="Replace the whole config from JSON (admin)",
        description="Validated as a whole and saved atomically as a new revision; with "
        "`?dry_run=true` the preview `{dry_run, valid, timers, plans, ...}`, nothing saved. "
        + DRY_RUN_RULE,
        request=ConfigPutBodySerializer,
        parameters=[*DRY_RUN_PARAMETERS, IF_MATCH],
        responses={200: saved_or_dry_run(ConfigSerializer, "ConfigOrDryRun")},
    )
    def put(self, request: Request, partition: str) -> Response:
        obj = _partition(partition)
        body = ConfigSerializer(data=request.data)
        config = config_or_every_fault(body, obj.name)
        deadlines.check("reading the config")
        return _replace_config(request, obj, config, body.validated_data.get("version"),
                               body.validated_data.get("comment", ""))  # fmt: skip


def _replace_config(
    request: Request, partition: Partition, config: PartitionConfig, body_version: Any,
    comment: str,
) -> Response:  # fmt: skip
    version = expected_version(request, body_version)
    if is_dry_run(request):
        if version is not None and version != partition.version:
            raise services.StaleVersion(
                f"partition {partition.name!r} is at version {partition.version}, not {version}",
                current=partition.version,
            )
        return _preview(partition, config)
    if version is None:
        raise ValidationError({"version": ["send the version you read (or If-Match)"]})
    services.save_partition_config(
        config, actor=request.user, comment=comment, expected_revision=version,
        authorize=access.authorizer(request.user, ADMINISTER, None),
    )  # fmt: skip
    partition.refresh_from_db()
    response = Response(config_to_json(partition.current_config(), partition.version))
    return with_etag(response, "config", partition.name, partition.version)


class ConfigYamlView(APIView):
    """The partition as YuniKorn ``queues.yaml`` (GET); PUT a YAML body replaces the config
    (admin; ``version`` and ``comment`` as query parameters or ``If-Match``), or creates the
    partition when it does not exist yet (201)."""

    write_action = ADMINISTER

    @extend_schema(
        summary="The partition as YuniKorn queues.yaml",
        description="`X-YuniKorn-Min-Version` names the oldest YuniKorn release that reads it "
        "as this product does, when there is one. `X-Config-Revision` is the number of the "
        "partition's newest revision, which this document is. With `?publish=true`, the "
        "document the cluster should run (what the cluster agent writes into YuniKorn's "
        "ConfigMap): the same, except that the partition's `quotapreemptionenabled` is off "
        "(left out, YuniKorn's default) unless the product setting "
        "PUBLISH_YUNIKORN_QUOTA_PREEMPTION is true, because the product itself enforces quota "
        "decreases and YuniKorn must not enforce them a second time.",
        parameters=[
            OpenApiParameter(
                "publish",
                FLAG_SCHEMA,
                description="The config for the cluster: YuniKorn's own quota preemption off "
                "(unless PUBLISH_YUNIKORN_QUOTA_PREEMPTION).",
            ),
            OpenApiParameter(
                "X-Config-Revision",
                {"type": "string", "pattern": "^[0-9]+$"},
                OpenApiParameter.HEADER,
                response=[200],
                description="The partition's newest revision number (absent only for a "
                "partition without any revision).",
            ),
        ],
        responses={(200, "application/yaml"): QUEUES_YAML},
    )
    def get(self, request: Request, partition: str) -> HttpResponse:
        obj = _partition(partition)
        publish = _bool_param(request, "publish")
        config = obj.current_config()
        tag = f"config-{obj.name}"
        if publish:
            quota = settings.PUBLISH_YUNIKORN_QUOTA_PREEMPTION
            config = config_to_publish(config, quota_preemption=quota)
            tag += "-published" + ("-with-quota-preemption" if quota else "")
        response = HttpResponse(render_queues_yaml([config]), content_type="application/yaml")
        response["ETag"] = f'"{tag}-v{obj.version}"'  # ends "-v<version>", as If-Match reads it
        version, _ = yunikorn_min_version([config])
        if version is not None:
            response["X-YuniKorn-Min-Version"] = version
        revision = services.newest_revision_number(obj)
        if revision is not None:
            response["X-Config-Revision"] = str(revision)
        return response

    @extend_schema(
        request={"application/yaml": QUEUES_YAML_PUT},
        parameters=[
            *DRY_RUN_PARAMETERS,
            OpenApiParameter(
                "version",
                {"type": "integer", "minimum": 1, "maximum": limits.POSITIVE_INT_MAX},
                description="The partition version you read; required to replace an existing "
                "partition (unless sent as If-Match), except with ?dry_run=true.",
            ),
            OpenApiParameter(
                "comment",
                {"type": "string", "maxLength": limits.COMMENT_MAX_LENGTH},
                description="Required to replace an existing partition.",
            ),
            IF_MATCH,
        ],
        summary="Replace the config from a queues.yaml body (admin)",
        description="Creates the partition (201) when it does not exist yet; otherwise "
        "replaces its config (200), or with `?dry_run=true` previews it, saving nothing. "
        + DRY_RUN_RULE,
        responses={
            200: saved_or_dry_run(ConfigSerializer, "ConfigOrDryRun"),
            201: OpenApiResponse(ConfigSerializer, description="The partition was created."),
        },
    )
    def put(self, request: Request, partition: str) -> Response:
        _comment_param(request)  # a bad comment is refused before the body is parsed
        dry_run = is_dry_run(request)
        configs = parse_queues_yaml(
            request.body, settings_for=services.settings_for_import, source="body"
        )
        mine = [_the_partition_of(configs, partition)]
        obj = Partition.objects.filter(name=partition).first()
        if obj is None and dry_run:  # a preview of a new partition: validated, nothing created
            return _preview_new_partition(mine[0])
        if obj is None:  # importing a new partition: nothing to be stale against
            [result] = services.import_partition_configs(
                mine,
                actor=request.user,
                comment=request.query_params.get("comment") or "Imported over the API",
                authorize=access.authorizer(request.user, ADMINISTER, None),
            )
            obj = result.partition
            response = Response(config_to_json(obj.current_config(), obj.version), status=201)
            return with_etag(response, "config", obj.name, obj.version)
        version = int_param(
            request.query_params.get("version"), "version",
            minimum=1, maximum=limits.POSITIVE_INT_MAX,
        )  # fmt: skip
        return _replace_config(request, obj, mine[0], version, _comment_param(request))


def _the_partition_of(configs: list[PartitionConfig], partition: str) -> PartitionConfig:
    """The one partition of a queues.yaml body, which must be the URL's."""
    mine = [config for config in configs if config.name == partition]
    if len(configs) != 1 or not mine:
        raise ValidationError({"partitions": [f"the body must hold exactly partition {partition}"]})
    return mine[0]


def _preview_new_partition(config: PartitionConfig) -> Response:
    """The dry run of a partition that does not exist yet: validated as a save would be; no
    timers or plans (a new partition has no cluster state yet). Nothing is created."""
    errors = validate_config(config)
    if errors:
        raise ConfigErrors(errors)
    facts = yunikorn_facts(normalized_config(config), resource_type_warnings(None, config))
    return Response({"dry_run": True, "valid": True, "timers": [], "plans": [], **facts})


def _comment_param(request: Request) -> str:
    comment = request.query_params.get("comment", "")
    if len(comment) > limits.COMMENT_MAX_LENGTH:
        raise ValidationError(
            {"comment": [f"must be at most {limits.COMMENT_MAX_LENGTH} characters"]}
        )
    return comment


class ConfigValidateView(APIView):
    """Check a config body without saving, as JSON (what ``GET .../config`` gives) or as a
    YuniKorn ``queues.yaml`` (what ``PUT .../config.yaml`` takes, chosen by ``Content-Type``):
    200 ``{"valid": true, ...}`` or 400 with every error. A viewer's read of the whole
    partition (its answer diffs against every queue)."""

    write_action = READ
    parser_classes = [ConfigJSONParser, *YAML_BODY_PARSERS]

    @extend_schema(
        summary="Check a config without saving (JSON or queues.yaml)",
        description="The body is the JSON config (`Content-Type: application/json`) or a "
        "YuniKorn queues.yaml holding this partition (`application/yaml`, also "
        "`application/x-yaml` or `text/yaml`). 200 `{valid: true, changes, ...}` with what "
        "saving it would change and its warnings, or 400 with every error.",
        request={"application/json": ConfigSerializer, "application/yaml": QUEUES_YAML},
        responses=ValidateResultSerializer,
    )
    def post(self, request: Request, partition: str) -> Response:
        obj = _partition(partition)
        if isinstance(request.data, bytes):  # a queues.yaml (YAML_BODY_PARSERS)
            config = _the_partition_of(
                parse_queues_yaml(
                    request.data, settings_for=services.settings_for_import, source="body"
                ),
                obj.name,
            )
        else:
            config = config_or_every_fault(ConfigSerializer(data=request.data), obj.name)
            deadlines.check("reading the config")
            errors = validate_config(config)
            if errors:
                raise ConfigErrors(errors)
        changes = diff_configs(obj.current_config(), config)
        return Response(
            {
                "valid": True,
                "changes": [c.to_json() for c in changes],
                **yunikorn_facts(normalized_config(config), resource_type_warnings(obj, config)),
            }
        )


@extend_schema(summary="List config revisions", description="Newest first.")
class RevisionList(ListAPIView):
    serializer_class = RevisionSerializer
    filterset_fields = ["kind", "author_name"]
    ordering_fields = ["number", "created_at"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no partition
            return ConfigRevision.objects.none()
        partition = _partition(self.kwargs["partition"])
        return partition.revisions.select_related("partition").order_by("-number")


class RevisionDetail(APIView):
    """One revision with its snapshot and its diff to the previous one (or ``?against=N``)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "against",
                {"type": "integer", "minimum": 1, "maximum": limits.POSITIVE_INT_MAX},
                description="The revision to diff against (default: the previous one).",
            )
        ],
        summary="One revision with its diff and config",
        responses=RevisionDetailSerializer,
    )
    def get(self, request: Request, partition: str, number: int) -> Response:
        obj = _partition(partition)
        revision = get_object_or_404(ConfigRevision, partition=obj, number=number)
        against_raw = request.query_params.get("against")
        against = int_param(against_raw, "against", minimum=1, maximum=limits.POSITIVE_INT_MAX)
        if against is None:
            against = number - 1
        base = ConfigRevision.objects.filter(partition=obj, number=against).first()
        if against_raw and base is None:
            raise ValidationError({"against": [f"no revision {against}"]})
        before = base.config() if base else replace(revision.config(), queues=())
        changes = diff_configs(before, revision.config())
        return Response(
            {
                **RevisionSerializer(revision).data,
                "against": base.number if base else None,
                "diff": [change.to_json() for change in changes],
                "config": config_to_json(revision.config(), revision.number),
            }
        )


class RevisionRevert(APIView):
    """Make revision N the current config again, as a new revision (admin)."""

    write_action = ADMINISTER
    parser_classes = FLAT_BODY_PARSERS

    @extend_schema(
        summary="Revert to revision N (admin)",
        description="A new revision equal to revision N, validated like any change. `version` "
        "(or `If-Match`) is the partition version you read, as for a whole-config PUT: 409 "
        "when the partition changed since, so a revert never silently undoes a newer change.",
        request=RevertBodySerializer,
        parameters=[IF_MATCH],
        responses={
            201: OpenApiResponse(RevisionSerializer, description="Reverted: the new revision."),
            200: OpenApiResponse(
                RevertUnchangedSerializer,
                description="The config already equals revision N: nothing was written.",
            ),
        },
    )
    def post(self, request: Request, partition: str, number: int) -> Response:
        body = RevertSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        obj = _partition(partition)
        version = expected_version(request, body.validated_data.get("version"))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        result = services.revert_config(
            obj.name, to_number=number, actor=request.user,
            comment=body.validated_data.get("comment", ""), expected_revision=version,
            authorize=access.authorizer(request.user, ADMINISTER, None),
        )  # fmt: skip
        if result.revision is None:
            return Response({"detail": f"already equal to revision {number}", "changed": False})
        return Response(RevisionSerializer(result.revision).data, status=201)


class SimulateView(APIView):
    """Plan one decision on the current state, saving nothing (viewer may simulate). A queue
    grant's holder may simulate the quota policy on a queue of their subtrees; an ask's or a
    job's plan may take victims anywhere in the partition, so it needs a global role."""

    scoped = True
    write_action = SIMULATE

    @extend_schema(
        summary="Plan one decision without saving anything",
        description="`quota`: a queue and a hypothetical max; `ask`: a pending ask; `job`: a "
        "job. Optional `state` overrides in the cluster-state vocabulary, in memory only.",
        request=SimulateSerializer,
        responses=PlanSerializer,
    )
    def post(self, request: Request, partition: str) -> Response:
        obj = _partition(partition)
        body = SimulateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        options = simulation_options(
            obj,
            victim_strategy=data.get("victim_strategy"),
            deviation_percent=data.get("deviation_percent"),
            max_victims=data.get("max_victims"),
        )
        target = data[{"quota": "queue", "ask": "ask", "job": "job"}[data["policy"]]]
        access.require(request.user, SIMULATE, obj, target if data["policy"] == "quota" else None)
        overrides = None
        if "state" in data:
            try:
                overrides = parse_cluster_state(obj, data["state"])
            except IngestErrors as exc:
                errors = {f"state.{path}": msgs for path, msgs in exc.errors.items()}
                raise ValidationError(errors) from exc
        try:
            simulated = simulation(
                obj, policy=data["policy"], target=target, new_max=data.get("max"),
                options=options, overrides=overrides,
            )  # fmt: skip
        except UnknownTarget as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        return Response(plan_json(simulated.plan, simulated.described()))
