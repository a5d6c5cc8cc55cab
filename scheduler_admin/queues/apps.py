from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "scheduler_admin.queues"
    label = "queues"
