from django.contrib import admin

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue


@admin.register(Partition)
class PartitionAdmin(ReadOnlyAdmin):
    list_display = ("name", "quota_preemption_enabled", "ask_policy", "miss_percent", "version")


@admin.register(Queue)
class QueueAdmin(ReadOnlyAdmin):
    list_display = ("path", "partition", "guaranteed", "max", "version")
    list_filter = ("partition",)
    search_fields = ("path",)


@admin.register(ConfigRevision)
class ConfigRevisionAdmin(ReadOnlyAdmin):
    list_display = ("partition", "number", "kind", "author_name", "created_at", "comment")
    list_filter = ("partition", "kind")
    search_fields = ("comment", "author_name")
