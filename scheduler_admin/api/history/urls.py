"""Route of the usage history: ``queues/{path}/usage``, without a trailing slash. A queue name
may hold ``/``, so ``queues/root.a/usage/`` (with one) stays the queue ``root.a/usage`` itself;
the usage of that queue is ``queues/root.a/usage/usage``."""

from django.urls import path

from scheduler_admin.api.history import views

urlpatterns = [
    path(
        "partitions/<str:partition>/queues/<path:path>/usage",
        views.QueueUsageHistory.as_view(),
        name="api-queue-usage",
    ),
]
