"""``/api/v1/``: the API root, and each app contributes its own routes (SPEC 7 paths are part of
the contract)."""

from django.urls import include, path

from scheduler_admin.accounts.api import ObtainTokenView
from scheduler_admin.api.navigation import ApiRootView

urlpatterns = [
    path("", ApiRootView.as_view(), name="api-root"),
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    path("", include("scheduler_admin.queues.api.urls")),
    path("", include("scheduler_admin.cluster.api.urls")),
    path("", include("scheduler_admin.enforcement.api.urls")),
    path("", include("scheduler_admin.agents.api.urls")),
    path("", include("scheduler_admin.audit.api.urls")),
    # Usage history (issue 16, usage history)
    path("", include("scheduler_admin.history.api.urls")),
]
