"""``/api/v1/audit/``: the audit trail, read-only, and its CSV, JSON and PDF exports (SPEC 7).

Lists and exports share one FilterSet (``AuditEventFilter``) and one ordering, newest first with
the id as tie-breaker, so pages are stable and an export lists exactly what the pages list.
"""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django_filters import utils as filter_utils
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler_admin.api.audit.serializers import AuditEventSerializer, ChainVerdictSerializer
from scheduler_admin.api.views import scoped_object
from scheduler_admin.audit import chain, exports
from scheduler_admin.audit.filtersets import AuditEventFilter
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.api.negotiation import SuffixChoosesFormat
from scheduler_admin.base.limits import BIGINT_MAX
from scheduler_admin.enforcement.visibility import visible_audit


def _export_schema(suffix: str, media_type: str, body: object, what: str):
    return extend_schema(
        operation_id=f"v1_audit_export_{suffix}",
        summary=f"Export the filtered audit events as {what}",
        description=(
            "Same filters as the audit list, newest first. Sent as an attachment named "
            "`audit-<UTC timestamp>.<suffix>`. The `Audit-Chain-Head` response header "
            "carries the audit chain's head at export time (`<event id>:<hash>`); keep it to "
            "check later, with `audit/verify?head=`, that nothing up to it changed."
        ),
        filters=True,
        responses={
            (200, media_type): OpenApiResponse(body, description=f"The {what} export."),
            400: OpenApiResponse(description="A filter value is invalid (field errors)."),
        },
    )


# Exports are whole documents: never paginated, and their format comes from the path.
_EXPORT_ACTION = {"pagination_class": None, "content_negotiation_class": SuffixChoosesFormat}


@extend_schema_view(
    list=extend_schema(
        summary="List audit events, newest first",
        description="Paginated; filter by kind, partition, queue (or subtree), actor, time, text.",
    ),
    retrieve=extend_schema(summary="One audit event", description="One audit event by id."),
)
class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    """Audit events for viewers and above; a queue grant's holder reads the events of their
    subtrees (``visibility.visible_audit``), in the list, one by one and in every export.
    Nothing here writes."""

    queryset = AuditEvent.objects.order_by("-created_at", "-id")
    scoped = True
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    # The order is fixed: a client-chosen one (``?ordering=``) would not be stable across pages.
    filter_backends = [DjangoFilterBackend]

    def get_queryset(self):
        return visible_audit(self.request.user, super().get_queryset())

    def get_object(self) -> AuditEvent:
        pk = self.kwargs["pk"]
        queryset = self.get_queryset()
        text = str(pk)
        valid = text.isascii() and text.isdigit() and int(text) <= BIGINT_MAX  # else: no event
        lookup = {"pk": int(pk)} if valid else {"pk__in": []}
        return scoped_object(self.request, queryset, f"audit event {pk}", **lookup)

    def validated_filterset(self) -> AuditEventFilter:
        """The request's filters, validated as the list validates them (400 naming the field)."""
        filterset = DjangoFilterBackend().get_filterset(self.request, self.get_queryset(), self)
        if not filterset.is_valid():
            raise filter_utils.translate_validation(filterset.errors)
        return filterset

    @_export_schema("csv", "text/csv", OpenApiTypes.STR, "CSV")
    @action(detail=False, url_path=r"export\.csv", **_EXPORT_ACTION)
    def export_csv(self, request: Request) -> StreamingHttpResponse:
        return exports.csv_response(self.validated_filterset().qs, now=timezone.now())

    @_export_schema("json", "application/json", AuditEventSerializer(many=True), "JSON")
    @action(detail=False, url_path=r"export\.json", **_EXPORT_ACTION)
    def export_json(self, request: Request) -> StreamingHttpResponse:
        return exports.json_response(self.validated_filterset().qs, now=timezone.now())

    @_export_schema("pdf", "application/pdf", OpenApiTypes.BINARY, "PDF report")
    @action(detail=False, url_path=r"export\.pdf", **_EXPORT_ACTION)
    def export_pdf(self, request: Request) -> HttpResponse:
        filterset = self.validated_filterset()
        return exports.pdf_response(filterset.qs, filterset.describe(), now=timezone.now())


class AuditVerifyView(APIView):
    """Checks the whole audit chain (``chain.verify``). It reads every event of every
    partition, so it needs a global role (viewer and above, as the audit trail does); a queue
    grant's holder reads their own subtrees' events only, and is refused."""

    @extend_schema(
        operation_id="v1_audit_verify",
        summary="Verify the audit log's hash chain",
        description="Each audit event carries the hash of its content and of the event before "
        "it, in one global chain and one chain per partition. This walks both and answers "
        "`ok`, or the first broken link: the event, and whether an event was changed, removed "
        "or inserted. `head` (an `Audit-Chain-Head` an earlier export carried, "
        "`<event id>:<hash>`) also checks that this head is still a link of the chain, so "
        "nothing up to it changed. A broken chain is still a 200 (the answer says so); a "
        "malformed `head` is a 400 naming it. Global roles only (viewer and above).",
        parameters=[
            OpenApiParameter(
                "head",
                OpenApiTypes.STR,
                description="`<event id>:<64 hex digits>` from an earlier export",
                allow_blank=False,
            )
        ],
        responses={
            200: ChainVerdictSerializer,
            400: OpenApiResponse(description="`head` is not `<event id>:<hash>`."),
        },
    )
    def get(self, request: Request) -> Response:
        raw = request.query_params.get("head")
        heads = []
        if raw is not None:
            try:
                heads.append(chain.parse_head(raw))
            except chain.BadHead as exc:
                raise ValidationError({"head": [str(exc)]}) from None
        return Response(chain.verify(expected_heads=heads).as_dict())
