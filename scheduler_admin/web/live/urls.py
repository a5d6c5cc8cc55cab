"""Live update routes: one small JSON document per page that updates itself."""

from django.urls import path

from scheduler_admin.web.live import views

urlpatterns = [
    path("live/dashboard.json", views.dashboard, name="live-dashboard"),
    path("live/queue.json", views.queue, name="live-queue"),
]
