"""Routes of the top bar's search: the results, a task's history and an application's. Task and
application ids may contain ``/``: nothing follows them in the path, as on the queue page."""

from django.urls import path

from scheduler_admin.web.find import views

urlpatterns = [
    path("find/", views.find, name="find"),
    path("partitions/<str:partition>/tasks/<path:task>/", views.task_page, name="task-history"),
    path(
        "partitions/<str:partition>/applications/<path:application>/",
        views.application_page,
        name="application-history",
    ),
]
