"""Console routes, one module per page family (each package owns its views and templates)."""

from django.urls import include, path

from scheduler_admin.web import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("", include("scheduler_admin.web.dashboard.urls")),
    path("", include("scheduler_admin.web.queue_pages.urls")),
    path("", include("scheduler_admin.web.fences.urls")),
    path("", include("scheduler_admin.web.history.urls")),
    path("", include("scheduler_admin.web.activity.urls")),
    path("", include("scheduler_admin.web.simulator.urls")),
    path("", include("scheduler_admin.web.timers.urls")),
    path("", include("scheduler_admin.web.users.urls")),
    path("", include("scheduler_admin.web.live.urls")),
    path("", include("scheduler_admin.web.glossary.urls")),
    path("", include("scheduler_admin.web.partition_settings.urls")),
    path("", include("scheduler_admin.web.change_requests.urls")),
    path("", include("scheduler_admin.web.help.urls")),
    path("", include("scheduler_admin.web.find.urls")),
    path("", include("scheduler_admin.web.scheduled.urls")),
    path("", include("scheduler_admin.web.notifications.urls")),
]
