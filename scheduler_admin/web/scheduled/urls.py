"""Routes of the scheduled changes' console actions."""

from django.urls import path

from scheduler_admin.web.scheduled.views import cancel

urlpatterns = [
    path(
        "partitions/<str:partition>/scheduled/<int:pk>/cancel",
        cancel,
        name="scheduled-cancel",
    ),
]
