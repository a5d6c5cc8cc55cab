from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "scheduler_admin.agents"
    label = "agents"
