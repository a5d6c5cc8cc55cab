"""Cluster-state routes under ``/api/v1/`` (SPEC 7; the paths are part of the contract).

Detail routes take the id with a ``path``-like converter, so ids and names may contain ``/``
or ``:`` as they are or percent-encoded (``a%2Fb``): the server decodes the path before routing.
``cluster-state`` is accepted with and without a trailing slash; the optional slash is written
``(?:/)?`` rather than ``/?`` so the OpenAPI schema shows the SPEC's path, without the slash.
"""

from django.urls import path, re_path, register_converter
from django.urls.converters import PathConverter

from scheduler_admin.api.cluster import views


class ClusterIdConverter(PathConverter):
    """Django's ``path`` converter (``/`` allowed) for any character, line breaks included, so
    every id reaches the view and an unknown one gets the API's JSON 404."""

    regex = r"[\s\S]+"


register_converter(ClusterIdConverter, "cluster_id")

LIST = {"get": "list"}
DETAIL = {"get": "retrieve"}
P = "partitions/<str:partition>"


def _read_only(noun: str, viewset: type, lookup: str) -> list:
    return [
        path(f"{P}/{noun}s/", viewset.as_view(LIST), name=f"api-{noun}-list"),
        path(
            f"{P}/{noun}s/<cluster_id:{lookup}>/",
            viewset.as_view(DETAIL),
            name=f"api-{noun}-detail",
        ),
    ]


urlpatterns = [
    re_path(
        r"^partitions/(?P<partition>[^/]+)/cluster-state(?:/)?$",
        views.ClusterStateView.as_view(),
        name="api-cluster-state",
    ),
    *_read_only("node", views.NodeViewSet, "name"),
    *_read_only("application", views.ApplicationViewSet, "external_id"),
    *_read_only("allocation", views.AllocationViewSet, "external_id"),
    *_read_only("ask", views.AskViewSet, "external_id"),
    *_read_only("budget", views.BudgetViewSet, "name"),
    *_read_only("dynamic-queue", views.DynamicQueueViewSet, "path"),
]
