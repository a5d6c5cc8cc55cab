"""Notifications page routes: the page (GET), subscribe, unsubscribe and the own e-mail
address (POST)."""

from django.urls import path

from scheduler_admin.web.notifications import views

urlpatterns = [
    path("account/notifications/", views.notifications, name="notifications"),
    path("account/notifications/subscribe/", views.subscribe, name="notifications-subscribe"),
    path("account/notifications/email/", views.set_email, name="notifications-email"),
    path(
        "account/notifications/<int:pk>/delete/",
        views.unsubscribe,
        name="notifications-unsubscribe",
    ),
]
