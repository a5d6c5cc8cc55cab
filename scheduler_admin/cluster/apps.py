from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "scheduler_admin.cluster"
    label = "cluster"
