"""A partition's config revisions over REST (SPEC 7): the history, one revision with its diff,
and a revert (a new revision copied from an old one)."""

from __future__ import annotations

from dataclasses import replace

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption.config import diff_configs
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import ADMINISTER
from scheduler_admin.api.queues.change_requests import HELD_202, held_response
from scheduler_admin.api.queues.params import IF_MATCH
from scheduler_admin.api.queues.responses import RevisionDetailSerializer
from scheduler_admin.api.queues.serializers import (
    RevertBodySerializer,
    RevertSerializer,
    RevertUnchangedSerializer,
    RevisionSerializer,
    config_to_json,
)
from scheduler_admin.base import limits
from scheduler_admin.base.api.concurrency import expected_version
from scheduler_admin.base.api.params import int_param
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision


@extend_schema(summary="List config revisions", description="Newest first.")
class RevisionList(ListAPIView):
    serializer_class = RevisionSerializer
    filterset_fields = ["kind", "author_name"]
    ordering_fields = ["number", "created_at"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no partition
            return ConfigRevision.objects.none()
        partition = services.get_partition(self.kwargs["partition"])
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
        obj = services.get_partition(partition)
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
            202: HELD_202,
        },
    )
    def post(self, request: Request, partition: str, number: int) -> Response:
        body = RevertSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        obj = services.get_partition(partition)
        version = expected_version(request, body.validated_data.get("version"))
        if version is None:
            raise ValidationError({"version": ["send the version you read (or If-Match)"]})
        result = services.revert_config(
            obj.name, to_number=number, actor=request.user,
            comment=body.validated_data.get("comment", ""), expected_revision=version,
            authorize=access.authorizer(request.user, ADMINISTER, None), request_approval=True,
        )  # fmt: skip
        if result.change_request is not None:
            return held_response(result.change_request)
        if result.revision is None:
            return Response({"detail": f"already equal to revision {number}", "changed": False})
        return Response(RevisionSerializer(result.revision).data, status=201)
