from django.apps import AppConfig


class SystemConfig(AppConfig):
    name = "scheduler_admin.system"
    label = "system"
