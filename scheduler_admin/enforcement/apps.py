from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "scheduler_admin.enforcement"
    label = "enforcement"
