from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "scheduler_admin.audit"
    label = "audit"
