"""Routes of the queue-configuration API (SPEC 7). ``{path}`` is a queue path, percent-encoded by
clients where it holds ``/ # @ :``; the ``path`` converter accepts the decoded slashes.
``simulate`` is accepted with and without a trailing slash, written ``(?:/)?`` so the schema
shows the SPEC's path."""

from django.urls import path, re_path

from scheduler_admin.api.queues import (
    change_requests,
    config_views,
    preview_views,
    queue_views,
    revision_views,
    scheduled,
)

P = "partitions/<str:partition>"

urlpatterns = [
    path("partitions/", queue_views.PartitionList.as_view(), name="api-partitions"),
    path(f"{P}/", queue_views.PartitionDetail.as_view(), name="api-partition"),
    path(f"{P}/queues/", queue_views.QueueList.as_view(), name="api-queues"),
    path(f"{P}/queues/<path:path>/", queue_views.QueueDetail.as_view(), name="api-queue"),
    path(f"{P}/config", config_views.ConfigView.as_view(), name="api-config"),
    path(f"{P}/config.yaml", config_views.ConfigYamlView.as_view(), name="api-config-yaml"),
    path(
        f"{P}/config/validate",
        config_views.ConfigValidateView.as_view(),
        name="api-config-validate",
    ),
    path(f"{P}/revisions/", revision_views.RevisionList.as_view(), name="api-revisions"),
    path(
        f"{P}/revisions/<int:number>/", revision_views.RevisionDetail.as_view(), name="api-revision"
    ),
    path(
        f"{P}/revisions/<int:number>/revert",
        revision_views.RevisionRevert.as_view(),
        name="api-revision-revert",
    ),
    path(
        f"{P}/change-requests/",
        change_requests.ChangeRequestList.as_view(),
        name="api-change-requests",
    ),
    path(
        f"{P}/change-requests/<int:request_id>/",
        change_requests.ChangeRequestDetail.as_view(),
        name="api-change-request",
    ),
    path(
        f"{P}/change-requests/<int:request_id>/approve/",
        change_requests.ChangeRequestApprove.as_view(),
        name="api-change-request-approve",
    ),
    path(
        f"{P}/change-requests/<int:request_id>/reject/",
        change_requests.ChangeRequestReject.as_view(),
        name="api-change-request-reject",
    ),
    path(
        f"{P}/change-requests/<int:request_id>/withdraw/",
        change_requests.ChangeRequestWithdraw.as_view(),
        name="api-change-request-withdraw",
    ),
    re_path(
        r"^partitions/(?P<partition>[^/]+)/simulate(?:/)?$",
        preview_views.SimulateView.as_view(),
        name="api-simulate",
    ),
    *scheduled.urlpatterns_for(P, r"^partitions/(?P<partition>[^/]+)"),
]
