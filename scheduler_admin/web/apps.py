from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "scheduler_admin.web"
    label = "web"
