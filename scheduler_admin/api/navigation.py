"""The API's own pages: the root at ``/api/v1/`` listing the resources, the OpenAPI schema and
its interactive docs. All of them need a signed-in user with a role, like every other endpoint:
an anonymous browser is sent to the sign-in page (``errors.exception_handler``), an anonymous
API client gets 401 and a user without a role 403, both with the API's JSON error body.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from scheduler_admin.accounts.permissions import visible_partitions
from scheduler_admin.api.permissions import RolePermission
from scheduler_admin.base.api.renderers import SafeJSONRenderer
from scheduler_admin.queues.models import Partition

#: Per partition: link name -> URL name (each takes the partition).
_PARTITION_LINKS = {
    "settings": "api-partition",
    "queues": "api-queues",
    "config": "api-config",
    "config_yaml": "api-config-yaml",
    "config_validate": "api-config-validate",
    "revisions": "api-revisions",
    "timers": "api-timer-list",
    "evictions": "api-eviction-list",
    "agents": "api-agent-list",
    "cluster_state": "api-cluster-state",
    "nodes": "api-node-list",
    "applications": "api-application-list",
    "allocations": "api-allocation-list",
    "asks": "api-ask-list",
    "budgets": "api-budget-list",
    "simulate": "api-simulate",
}
#: Link name -> URL name of the resources outside any partition.
_LINKS = {
    "partitions": "api-partitions",
    "runs": "api-run-list",
    "audit": "api-audit-list",
    "audit_export_csv": "audit-export-csv",
    "audit_export_json": "audit-export-json",
    "audit_export_pdf": "audit-export-pdf",
    "grants": "api-grant-list",
    "notification_subscriptions": "api-subscription-list",
    "token": "api-token",
    "schema": "api-schema",
    "docs": "api-docs",
}

ApiRootSerializer = inline_serializer(
    "ApiRoot",
    {
        "console": serializers.URLField(help_text="The web console."),
        **{name: serializers.URLField() for name in _LINKS},
        "by_partition": serializers.ListField(
            child=inline_serializer(
                "ApiRootPartition",
                {
                    "name": serializers.CharField(),
                    **{name: serializers.URLField() for name in _PARTITION_LINKS},
                },
            )
        ),
    },
)


class ApiRootView(APIView):
    """The API's resources: the lists, the audit exports, the schema and its docs, and for each
    partition its queues, config, revisions, timers, evictions, cluster state and simulator."""

    name = "API root"  # the browsable API's title and breadcrumb
    scoped = True  # a queue grant's holder reads it too, with the partitions of their grants

    @extend_schema(
        summary="The API root: links to every resource",
        description="Absolute URLs of the lists, the audit exports, the token endpoint, the "
        "OpenAPI schema and docs, the web console, and per partition each of its resources.",
        responses=ApiRootSerializer,
    )
    def get(self, request: Request) -> Response:
        def link(name: str, **kwargs: Any) -> str:
            return reverse(name, kwargs=kwargs or None, request=request)

        return Response(
            {
                "console": request.build_absolute_uri("/"),
                **{key: link(name) for key, name in _LINKS.items()},
                "by_partition": [
                    {
                        "name": partition,
                        **{
                            key: link(name, partition=partition)
                            for key, name in _PARTITION_LINKS.items()
                        },
                    }
                    for partition in visible_partitions(
                        request.user, Partition.objects.order_by("name")
                    ).values_list("name", flat=True)
                ],
            }
        )


class _SignedInPage:
    """A page of its own format (YAML, HTML) whose errors are the API's JSON error body.

    Negotiation never fails (``force``): an API client asking the HTML docs for JSON gets its
    401 or 403, not a 406, and a signed-in one gets the page.
    """

    permission_classes = [RolePermission]
    scoped = True  # any signed-in user with a role or a queue grant

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)  # type: ignore[misc]

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any):
        if isinstance(response, Response) and response.exception:
            request.accepted_renderer = SafeJSONRenderer()
            request.accepted_media_type = SafeJSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]


class SchemaView(_SignedInPage, SpectacularAPIView):
    """The OpenAPI 3 schema (YAML, or JSON with ``Accept: application/json``)."""


class DocsView(_SignedInPage, SpectacularSwaggerSplitView):
    """Swagger UI over the schema, with its assets served locally and a link to the console.

    The split view serves Swagger UI's start-up script at ``/api/docs/?script`` instead of
    inline in the page, so the Content-Security-Policy needs no inline script."""

    template_name = "api/swagger_ui.html"
