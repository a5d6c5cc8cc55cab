from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "scheduler_admin.history"
    label = "history"
    verbose_name = "Usage history"
