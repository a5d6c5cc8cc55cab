"""The outbox, subscriptions and channels in the read-only Django admin: what was sent, what is
waiting and why a message failed. A channel's URL is a secret and is not shown here either."""

from django.contrib import admin

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin
from scheduler_admin.notifications.models import Channel, Notification, Subscription


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event_kind", "queue_path", "email_to", "channel", "status",
                    "attempts", "next_attempt_at")  # fmt: skip
    list_filter = ("status", "event_kind")
    search_fields = ("queue_path", "email_to", "title")


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyAdmin):
    list_display = ("partition", "queue_path", "subtree", "user", "group", "email", "channel")
    list_filter = ("partition",)
    search_fields = ("queue_path", "user__username", "group__name")


@admin.register(Channel)
class ChannelAdmin(ReadOnlyAdmin):
    list_display = ("name", "kind", "created_at", "created_by_name")
    fields = ("name", "kind", "created_at", "created_by_name")  # never the URL
