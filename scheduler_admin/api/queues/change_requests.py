"""Change requests over REST (SPEC 6 "Approvals", SPEC 7): list and read a partition's requests
with their diff, staleness and live preview; approve, reject and withdraw one.

A write that the partition's ``approval`` setting holds (queue PATCH, config PUT) answers
``202`` with the request as ``held_response`` renders it. Who may read or decide a request is
decided over every queue it touches (``accounts.approvals``): a queue grant's holder sees and
decides only requests inside their subtrees; the author never approves or rejects their own
(403 with the reason) and only the author withdraws.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler_admin.accounts import approvals
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import READ
from scheduler_admin.api.queues.serializers import RevisionSerializer
from scheduler_admin.base import limits
from scheduler_admin.base.api.errors import error_body
from scheduler_admin.base.api.parsers import FLAT_BODY_PARSERS
from scheduler_admin.base.api.strict import StrictSerializer
from scheduler_admin.base.errors import Forbidden
from scheduler_admin.enforcement.candidates import EXPLANATIONS_PARAMETER, every_explanation
from scheduler_admin.enforcement.request_previews import preview_request
from scheduler_admin.queues import change_requests, services
from scheduler_admin.queues.models import ChangeRequest, RequestStatus

STATUS_HELP = "pending (waiting for another admin), approved, rejected or withdrawn."


class FieldChangeSerializer(serializers.Serializer):
    queue = serializers.CharField(allow_null=True, help_text="null for a partition setting.")
    field = serializers.CharField()
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class ChangeRequestSerializer(serializers.ModelSerializer):
    """A request as every answer shows it (the detail adds ``preview``)."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    # Text, not a choice: a second "status" enum would collide in the schema's names.
    status = serializers.CharField(read_only=True, help_text=STATUS_HELP)
    author = serializers.CharField(source="author_name", read_only=True)
    queues = serializers.ListField(
        source="queue_paths", child=serializers.CharField(), read_only=True,
        help_text="Every queue the request adds, removes or changes.",
    )  # fmt: skip
    diff = FieldChangeSerializer(many=True, read_only=True, help_text="As it was requested.")
    decided_by = serializers.CharField(source="decided_by_name", read_only=True)
    revision = serializers.IntegerField(
        source="revision_number", read_only=True, allow_null=True,
        help_text="The revision an approval saved.",
    )  # fmt: skip
    stale = serializers.SerializerMethodField(
        help_text="A pending request whose queues a revision changed since it was made."
    )
    stale_queues = serializers.SerializerMethodField()

    class Meta:
        model = ChangeRequest
        fields = [
            "id", "partition", "status", "kind", "author", "created_at", "comment",
            "base_revision", "queues", "diff", "stale", "stale_queues", "decided_by",
            "decided_at", "decision_comment", "revision",
        ]  # fmt: skip

    def _stale(self, request: ChangeRequest) -> list[str]:
        cache = self.context.setdefault("stale", {})
        if request.pk not in cache:
            cache[request.pk] = change_requests.stale_queues(request) if request.is_pending else []
        return cache[request.pk]

    def get_stale(self, request: ChangeRequest) -> bool:
        return bool(self._stale(request))

    def get_stale_queues(self, request: ChangeRequest) -> list[str]:
        return self._stale(request)


class PreviewSerializer(serializers.Serializer):
    valid = serializers.BooleanField(help_text="Whether approving now would pass validation.")
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    victims = serializers.IntegerField(help_text="Tasks the plans below would evict.")
    timers = serializers.ListField(child=serializers.DictField())
    plans = serializers.ListField(child=serializers.DictField())


class ChangeRequestDetailSerializer(ChangeRequestSerializer):
    preview = PreviewSerializer(
        read_only=True,
        allow_null=True,
        help_text="What approving it now would do: the quota timers it would start and the "
        "plan each would run on the cluster as it is now (victims and reasons); null once "
        "decided.",
    )

    class Meta(ChangeRequestSerializer.Meta):
        fields = [*ChangeRequestSerializer.Meta.fields, "preview"]


class ApproveSerializer(StrictSerializer):
    comment = serializers.CharField(
        max_length=limits.COMMENT_MAX_LENGTH, required=False, allow_blank=True,
        help_text="Optional note kept with the decision.",
    )  # fmt: skip
    confirm_stale = serializers.BooleanField(
        default=False,
        help_text="Approve even though the request's queues changed since it was made.",
    )


class RejectSerializer(StrictSerializer):
    comment = serializers.CharField(
        max_length=limits.COMMENT_MAX_LENGTH, help_text="Why it is rejected (required)."
    )


class WithdrawSerializer(StrictSerializer):
    comment = serializers.CharField(
        max_length=limits.COMMENT_MAX_LENGTH, required=False, allow_blank=True
    )


class ApprovedSerializer(serializers.Serializer):
    request = ChangeRequestSerializer()
    revision = RevisionSerializer(allow_null=True)


def held_response(request: ChangeRequest) -> Response:
    """The 202 of a write held for approval: the request, and where to find it."""
    body = ChangeRequestSerializer(request).data
    return Response(
        {**body, "detail": f"The change needs approval: change request {request.pk} was made."},
        status=202,
        headers={"Location": request_url(request)},
    )


def request_url(request: ChangeRequest) -> str:
    return f"/api/v1/partitions/{request.partition.name}/change-requests/{request.pk}/"


HELD_202 = OpenApiResponse(
    ChangeRequestSerializer,
    description="The partition's approval setting holds the change: nothing was saved, a "
    "change request was made for another admin to approve.",
)


@extend_schema(
    summary="List change requests",
    description="Newest first. A queue grant's holder sees the requests inside their subtrees.",
    parameters=[
        OpenApiParameter(
            "status",
            {"type": "string", "enum": RequestStatus.values},
            allow_blank=True,
            description=STATUS_HELP,
        )
    ],
)
class ChangeRequestList(ListAPIView):
    serializer_class = ChangeRequestSerializer
    scoped = True
    filter_backends: list[Any] = []

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no partition
            return ChangeRequest.objects.none()
        partition = services.get_partition(self.kwargs["partition"])
        status = self.request.query_params.get("status") or None
        found = change_requests.requests_of(partition, status)
        if access.is_scoped(self.request.user):
            visible = [r.pk for r in found if approvals.may_read(self.request.user, r)]
            found = found.filter(pk__in=visible)
        return found


class ChangeRequestDetail(APIView):
    """One request with its diff, staleness and live preview."""

    scoped = True

    @extend_schema(
        summary="One change request with its preview",
        parameters=[EXPLANATIONS_PARAMETER],
        responses=ChangeRequestDetailSerializer,
    )
    def get(self, request: Request, partition: str, request_id: int) -> Response:
        found = _readable(request, partition, request_id)
        body = dict(ChangeRequestSerializer(found).data)
        if found.is_pending:
            body["preview"] = preview_request(found).to_json(every=every_explanation(request))
        else:
            body["preview"] = None
        return Response(body)


class _Decision(APIView):
    scoped = True
    write_action = READ  # the services check the real right under the lock (module docstring)
    parser_classes = FLAT_BODY_PARSERS


class ChangeRequestApprove(_Decision):
    @extend_schema(
        summary="Approve a change request (another admin)",
        description="Saves the change as a new revision naming its author and you, validated "
        "again against the config as it is now (400 with every error; the request stays "
        "pending). 403 for its author and outside your queues; 409 when it is no longer "
        "pending, or stale (its queues changed since it was made) without `confirm_stale`.",
        request=ApproveSerializer,
        responses={200: ApprovedSerializer},
    )
    def post(self, request: Request, partition: str, request_id: int) -> Response:
        body = ApproveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        found = _readable(request, partition, request_id)
        try:
            decided, result = change_requests.approve_request(
                found.partition.name, found.pk, actor=request.user,
                comment=body.validated_data.get("comment", ""),
                confirm_stale=body.validated_data["confirm_stale"],
                authorize=approvals.request_authorizer(request.user, access.APPROVE_CHANGE, found),
            )  # fmt: skip
        except change_requests.RequestStale as exc:
            answer = error_body(str(exc), exc.code)
            answer["stale_queues"] = exc.queues
            return Response(answer, status=409)
        revision = RevisionSerializer(result.revision).data if result.revision else None
        return Response({"request": ChangeRequestSerializer(decided).data, "revision": revision})


class ChangeRequestReject(_Decision):
    @extend_schema(
        summary="Reject a change request (another admin, with a comment)",
        request=RejectSerializer,
        responses=ChangeRequestSerializer,
    )
    def post(self, request: Request, partition: str, request_id: int) -> Response:
        body = RejectSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        found = _readable(request, partition, request_id)
        decided = change_requests.reject_request(
            found.partition.name, found.pk, actor=request.user,
            comment=body.validated_data["comment"],
            authorize=approvals.request_authorizer(request.user, access.APPROVE_CHANGE, found),
        )  # fmt: skip
        return Response(ChangeRequestSerializer(decided).data)


class ChangeRequestWithdraw(_Decision):
    @extend_schema(
        summary="Withdraw your change request",
        request=WithdrawSerializer,
        responses=ChangeRequestSerializer,
    )
    def post(self, request: Request, partition: str, request_id: int) -> Response:
        body = WithdrawSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        found = _readable(request, partition, request_id)
        decided = change_requests.withdraw_request(
            found.partition.name, found.pk, actor=request.user,
            comment=body.validated_data.get("comment", ""),
            authorize=approvals.request_authorizer(request.user, READ, found),
        )  # fmt: skip
        return Response(ChangeRequestSerializer(decided).data)


def _readable(request: Request, partition: str, request_id: int) -> ChangeRequest:
    """The request, or 404; 403 with the reason when the user may not read all it touches."""
    found = change_requests.get_request(services.get_partition(partition), request_id)
    decision = approvals.can_on_request(request.user, READ, found)
    if not decision:
        raise Forbidden(decision.reason)
    return found


def _accepted_202() -> OpenApiResponse:
    """A write's 202, which is one of two things: a change scheduled for its ``apply_at``, or
    (without ``apply_at``) a change the partition's approval setting held as a request."""
    from scheduler_admin.api.queues.scheduled import ScheduledChangeSerializer

    return OpenApiResponse(
        PolymorphicProxySerializer(
            component_name="ScheduledOrHeldChange",
            serializers=[ScheduledChangeSerializer, ChangeRequestSerializer],
            resource_type_field_name=None,
        ),
        description="Nothing was saved yet. With `apply_at` the change was scheduled for that "
        "time (a scheduled change); otherwise the partition's approval setting held it: a "
        "change request was made for another admin to approve.",
    )


ACCEPTED_202 = _accepted_202()
