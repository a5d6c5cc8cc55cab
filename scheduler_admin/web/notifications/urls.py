"""Notifications page routes: the page (GET), subscribe and unsubscribe (POST)."""

from django.urls import path

from scheduler_admin.web.notifications import views

urlpatterns = [
    path("account/notifications/", views.notifications, name="notifications"),
    path("account/notifications/subscribe/", views.subscribe, name="notifications-subscribe"),
    path(
        "account/notifications/<int:pk>/delete/",
        views.unsubscribe,
        name="notifications-unsubscribe",
    ),
]
