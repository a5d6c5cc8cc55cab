"""``/api/v1/``: each app contributes its own routes (SPEC 7 paths are part of the contract)."""

from django.urls import include, path

from scheduler_admin.accounts.api import ObtainTokenView

urlpatterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    path("", include("scheduler_admin.queues.api.urls")),
    path("", include("scheduler_admin.cluster.api.urls")),
    path("", include("scheduler_admin.enforcement.api.urls")),
    path("", include("scheduler_admin.audit.api.urls")),
]
