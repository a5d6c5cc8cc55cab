"""A partition's whole config over REST (SPEC 7): as JSON (``config``), as YuniKorn's
``queues.yaml`` (``config.yaml``, also the document to publish) and its validation.

A PUT replaces the whole config atomically (admin) with the ``version`` the client read (body or
``If-Match``); a stale version is a 409. ``?dry_run=true`` validates and returns what the change
would trigger (timers and their plans) without saving anything (``preview_views.dry_run_body``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption.config import PartitionConfig, diff_configs
from preemption.hierarchy import ConfigErrors, normalized_config, validate_config
from preemption.yunikorn import yunikorn_min_version
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import ADMINISTER, READ
from scheduler_admin.api.queues import scheduled
from scheduler_admin.api.queues.apply_at import APPLY_AT_HELP, ApplyAtField
from scheduler_admin.api.queues.change_requests import ACCEPTED_202, held_response
from scheduler_admin.api.queues.params import (
    FLAG_SCHEMA,
    IF_MATCH,
    QUEUES_YAML,
    QUEUES_YAML_PUT,
    bool_param,
)
from scheduler_admin.api.queues.preview_views import dry_run_body
from scheduler_admin.api.queues.responses import ValidateResultSerializer, saved_or_dry_run
from scheduler_admin.api.queues.serializers import (
    ConfigPutBodySerializer,
    ConfigSerializer,
    config_or_every_fault,
    config_to_json,
    yunikorn_facts,
)
from scheduler_admin.base import deadlines, limits
from scheduler_admin.base.api.concurrency import expected_version, with_etag
from scheduler_admin.base.api.dry_run import DRY_RUN_PARAMETERS, DRY_RUN_RULE, is_dry_run
from scheduler_admin.base.api.params import int_param
from scheduler_admin.base.api.parsers import YAML_BODY_PARSERS, ConfigJSONParser
from scheduler_admin.cluster.resource_types import resource_type_warnings
from scheduler_admin.enforcement.candidates import EXPLANATIONS_PARAMETER, every_explanation
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import config_to_publish, parse_queues_yaml, render_queues_yaml


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
        obj = services.get_partition(partition)
        response = Response(config_to_json(obj.current_config(), obj.version))
        return with_etag(response, "config", obj.name, obj.version)

    @extend_schema(
        summary="Replace the whole config from JSON (admin)",
        description="Validated as a whole and saved atomically as a new revision; with "
        "`?dry_run=true` the preview `{dry_run, valid, timers, plans, ...}`, nothing saved. "
        + DRY_RUN_RULE,
        request=ConfigPutBodySerializer,
        parameters=[*DRY_RUN_PARAMETERS, EXPLANATIONS_PARAMETER, IF_MATCH],
        responses={
            200: saved_or_dry_run(ConfigSerializer, "ConfigOrDryRun"),
            202: ACCEPTED_202,
        },
    )
    def put(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        body = ConfigSerializer(data=request.data)
        config = config_or_every_fault(body, obj.name)
        deadlines.check("reading the config")
        return _replace_config(request, obj, config, body.validated_data.get("version"),
                               body.validated_data.get("comment", ""),
                               body.validated_data.get("apply_at"))  # fmt: skip


def _replace_config(
    request: Request, partition: Partition, config: PartitionConfig, body_version: Any,
    comment: str, apply_at: datetime | None = None,
) -> Response:  # fmt: skip
    version = expected_version(request, body_version)
    if is_dry_run(request):
        if version is not None and version != partition.version:
            raise services.StaleVersion(
                f"partition {partition.name!r} is at version {partition.version}, not {version}",
                current=partition.version,
            )
        preview = dry_run_body(partition, config, every=every_explanation(request))
        return scheduled.judged_again(preview, apply_at)
    if version is None:
        raise ValidationError({"version": ["send the version you read (or If-Match)"]})
    if apply_at is not None:  # a scheduled change (api/queues/scheduled.py)
        return scheduled.schedule_whole_config(
            request, config, version=version, comment=comment, apply_at=apply_at
        )
    result = services.save_partition_config(
        config, actor=request.user, comment=comment, expected_revision=version,
        authorize=access.authorizer(request.user, ADMINISTER, None), request_approval=True,
    )  # fmt: skip
    if result.change_request is not None:
        return held_response(result.change_request)
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
        obj = services.get_partition(partition)
        publish = bool_param(request, "publish")
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
            EXPLANATIONS_PARAMETER,
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
            OpenApiParameter(
                "apply_at", {"type": "string", "format": "date-time"}, description=APPLY_AT_HELP
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
            202: ACCEPTED_202,
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
        return _replace_config(request, obj, mine[0], version, _comment_param(request),
                               _apply_at_param(request))  # fmt: skip


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


def _apply_at_param(request: Request) -> datetime | None:
    raw = request.query_params.get("apply_at")
    if not raw:
        return None
    try:
        return ApplyAtField().run_validation(raw)
    except ValidationError as exc:
        raise ValidationError({"apply_at": exc.detail}) from None


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
        obj = services.get_partition(partition)
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
