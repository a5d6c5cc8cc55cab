from django.apps import AppConfig


class DemoClusterConfig(AppConfig):
    """The demo cluster: no models, only the ``simulate_cluster`` command and what it runs."""

    name = "scheduler_admin.demo_cluster"
    label = "demo_cluster"
