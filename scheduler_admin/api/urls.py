"""``/api/v1/``: the API root, and each app contributes its own routes (SPEC 7 paths are part of
the contract)."""

from django.urls import include, path

from scheduler_admin.api.grants import GrantViewSet
from scheduler_admin.api.navigation import ApiRootView
from scheduler_admin.api.tokens import ObtainTokenView

urlpatterns = [
    path("", ApiRootView.as_view(), name="api-root"),
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    path("", include("scheduler_admin.api.queues.urls")),
    # Before the cluster's routes, whose detail routes take any id (history_urls says why).
    path("", include("scheduler_admin.api.enforcement.history_urls")),
    path("", include("scheduler_admin.api.cluster.urls")),
    path("", include("scheduler_admin.api.enforcement.urls")),
    path("", include("scheduler_admin.api.agents.urls")),
    path("", include("scheduler_admin.api.audit.urls")),
    # Queue grants (issue 16, tenant admins).
    path(
        "grants/",
        GrantViewSet.as_view({"get": "list", "post": "create"}),
        name="api-grant-list",
    ),
    path(
        "grants/<int:pk>/",
        GrantViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="api-grant-detail",
    ),
    # Usage history (issue 16, usage history)
    path("", include("scheduler_admin.api.history.urls")),
    # Notifications to people: subscriptions and channels.
    path("", include("scheduler_admin.api.notifications.urls")),
]
