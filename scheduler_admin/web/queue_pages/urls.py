"""The queue page. Its POST actions (preview, save, cancel the timer) go to the same URL: a queue
path may contain ``/``, so no sub-path after it could be told apart from a longer queue name."""

from django.urls import path

from scheduler_admin.web.queue_pages.views import queue_detail

urlpatterns = [
    path("partitions/<str:partition>/queues/<path:queue>/", queue_detail, name="queue-detail"),
]
