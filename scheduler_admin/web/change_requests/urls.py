from django.urls import path

from scheduler_admin.web.change_requests.views import request_detail, request_list

urlpatterns = [
    path("partitions/<str:partition>/change-requests/", request_list, name="change-requests"),
    path(
        "partitions/<str:partition>/change-requests/<int:pk>/",
        request_detail,
        name="change-request",
    ),
]
