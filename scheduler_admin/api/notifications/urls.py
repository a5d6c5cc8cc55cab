"""Notification routes under ``/api/v1/notifications/``."""

from django.urls import path

from scheduler_admin.api.notifications import views

urlpatterns = [
    path(
        "notifications/subscriptions/",
        views.SubscriptionViewSet.as_view({"get": "list", "post": "create"}),
        name="api-subscription-list",
    ),
    path(
        "notifications/subscriptions/<int:pk>/",
        views.SubscriptionViewSet.as_view(
            {"get": "retrieve", "put": "update", "delete": "destroy"}
        ),
        name="api-subscription-detail",
    ),
    path(
        "notifications/channels/",
        views.ChannelViewSet.as_view({"get": "list", "post": "create"}),
        name="api-channel-list",
    ),
    path(
        "notifications/channels/<int:pk>/",
        views.ChannelViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        name="api-channel-detail",
    ),
]
