"""Routes of "why was my pod evicted?" (``task_history``) under ``/api/v1/``.

Included before the cluster's routes: their detail routes take any id, ``/`` included
(``allocations/<cluster_id>/``), so they would read ``a1/history/`` as the allocation
``a1/history``. The price: an allocation or application whose own id ends in ``/history``
(the server decodes ``%2F`` before routing) answers here, not at its detail route.
"""

from django.urls import path

# Imported for its converter ``cluster_id`` (any character, as the cluster's routes take ids).
from scheduler_admin.api.cluster import urls as _cluster_urls  # noqa: F401
from scheduler_admin.api.enforcement import task_history

P = "partitions/<str:partition>"

urlpatterns = [
    path(
        f"{P}/allocations/<cluster_id:external_id>/history/",
        task_history.TaskHistoryView.as_view(),
        name="api-allocation-history",
    ),
    path(
        f"{P}/applications/<cluster_id:external_id>/history/",
        task_history.ApplicationHistoryView.as_view(),
        name="api-application-history",
    ),
]
