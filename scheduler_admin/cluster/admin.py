from django.contrib import admin

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin
from scheduler_admin.cluster.models import Allocation, Application, Ask, DisruptionBudget, Node


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    list_display = ("name", "partition", "capacity", "schedulable")
    list_filter = ("partition", "schedulable")
    search_fields = ("name",)


@admin.register(Application)
class ApplicationAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "partition", "queue_path", "user")
    search_fields = ("external_id", "queue_path")


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "queue_path", "node_name", "priority", "state")
    list_filter = ("partition", "state")
    search_fields = ("external_id", "queue_path", "node_name")


@admin.register(Ask)
class AskAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "queue_path", "priority", "state", "node")
    list_filter = ("partition", "state")
    search_fields = ("external_id", "queue_path")


@admin.register(DisruptionBudget)
class DisruptionBudgetAdmin(ReadOnlyAdmin):
    list_display = ("name", "partition", "allowed_disruptions")
