"""Live-loop routes under ``/api/v1/`` (SPEC 7; the paths are part of the contract).

The writes (``timers/{id}/cancel``, ``evictions/{id}/ack``, ``evictions/acknowledge``,
``evictions/report`` and ``runs/{id}/abort``) are accepted
with and without a trailing slash; the optional slash is written ``(?:/)?`` rather than ``/?`` so
the OpenAPI schema shows the SPEC's paths, without the slash.
"""

from django.urls import path, re_path

from scheduler_admin.api.enforcement import views

P = "partitions/<str:partition>"


def _detail_action(name: str):
    """A run's export, wired as a router would wire the ``@action`` (its decorator arguments
    become the view's attributes), as the audit exports are."""
    method = getattr(views.RunViewSet, name)
    return views.RunViewSet.as_view({"get": name}, detail=True, **method.kwargs)


RE_P = r"^partitions/(?P<partition>[^/]+)"


def _write(viewset: type, name: str):
    """A POST action wired as a router would wire it: its ``@action`` arguments (parsers, name,
    description) become the view's attributes."""
    return viewset.as_view({"post": name}, **getattr(viewset, name).kwargs)


urlpatterns = [
    path(f"{P}/timers/", views.TimerViewSet.as_view({"get": "list"}), name="api-timer-list"),
    re_path(
        rf"{RE_P}/timers/(?P<pk>[0-9]+)/cancel(?:/)?$",
        _write(views.TimerViewSet, "cancel"),
        name="api-timer-cancel",
    ),
    path("runs/", views.RunViewSet.as_view({"get": "list"}), name="api-run-list"),
    path("runs/<int:pk>/", views.RunViewSet.as_view({"get": "retrieve"}), name="api-run-detail"),
    path("runs/<int:pk>/candidates/", _detail_action("candidates"), name="api-run-candidates"),
    path("runs/<int:pk>/export.csv", _detail_action("export_csv"), name="api-run-export-csv"),
    path("runs/<int:pk>/export.json", _detail_action("export_json"), name="api-run-export-json"),
    re_path(
        r"^runs/(?P<pk>[0-9]+)/abort(?:/)?$",
        _write(views.RunViewSet, "abort"),
        name="api-run-abort",
    ),
    path(
        f"{P}/evictions/",
        views.EvictionViewSet.as_view({"get": "list"}),
        name="api-eviction-list",
    ),
    path(
        f"{P}/evictions/<int:pk>/",
        views.EvictionViewSet.as_view({"get": "retrieve"}),
        name="api-eviction-detail",
    ),
    re_path(
        rf"{RE_P}/evictions/acknowledge(?:/)?$",
        _write(views.EvictionViewSet, "acknowledge"),
        name="api-eviction-acknowledge",
    ),
    re_path(
        rf"{RE_P}/evictions/report(?:/)?$",
        _write(views.EvictionViewSet, "report"),
        name="api-eviction-report",
    ),
    re_path(
        rf"{RE_P}/evictions/(?P<pk>[0-9]+)/ack(?:/)?$",
        _write(views.EvictionViewSet, "ack"),
        name="api-eviction-ack",
    ),
]
