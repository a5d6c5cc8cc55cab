"""URL routes. Everything except sign-in and the health check requires a signed-in user: pages
through ``LoginRequiredMiddleware``, the API (its schema and docs included) through DRF's
authentication and ``RolePermission`` (``scheduler_admin.api.navigation``)."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from scheduler_admin.api.navigation import DocsView, SchemaView
from scheduler_admin.web.query_guard import takes_query

urlpatterns = [
    path("", include("scheduler_admin.web.urls")),
    # Django's sign-in and sign-out read ``next`` from the address as well as from the form.
    path("accounts/login/", takes_query("next")(auth_views.LoginView.as_view()), name="login"),
    path("accounts/logout/", takes_query("next")(auth_views.LogoutView.as_view()), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("scheduler_admin.api.urls")),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", DocsView.as_view(url_name="api-schema"), name="api-docs"),
    # issue 16, observability: /readyz and /metrics (no sign-in; /metrics by token or address)
    path("", include("scheduler_admin.observability.urls")),
]

# Single sign-on (issue 16, part "auth"): /oidc/authenticate/ and /oidc/callback/, only when
# OpenID Connect is configured (OIDC_RP_CLIENT_ID).
if settings.OIDC_ENABLED:
    urlpatterns.append(path("oidc/", include("scheduler_admin.accounts.oidc")))

handler400 = "scheduler_admin.base.api.errors.api_bad_request"
handler403 = "scheduler_admin.base.api.errors.api_forbidden"
handler404 = "scheduler_admin.base.api.errors.api_not_found"
handler500 = "scheduler_admin.base.api.errors.api_server_error"
