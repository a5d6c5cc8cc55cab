from django.urls import path

from scheduler_admin.web.placeholder import not_built

urlpatterns = [
    path("partitions/<str:partition>/queues/<path:queue>/", not_built, name="queue-detail"),
]
