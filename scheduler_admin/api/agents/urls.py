"""Agent routes under ``/api/v1/``. The heartbeat is accepted with and without a trailing
slash, written ``(?:/)?`` so the OpenAPI schema shows the path without it."""

from django.urls import path, re_path

from scheduler_admin.api.agents import views

urlpatterns = [
    path(
        "partitions/<str:partition>/agents/",
        views.AgentViewSet.as_view({"get": "list"}),
        name="api-agent-list",
    ),
    re_path(
        r"^partitions/(?P<partition>[^/]+)/agents/heartbeat(?:/)?$",
        views.AgentViewSet.as_view({"post": "heartbeat"}, **views.AgentViewSet.heartbeat.kwargs),
        name="api-agent-heartbeat",
    ),
]
