from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Notifications to people: subscriptions, channels and the outbox the webhook worker
    delivers. It sits above every app whose events it reports (it reads their audit events
    and agents); no lower app imports it."""

    name = "scheduler_admin.notifications"
    label = "notifications"
