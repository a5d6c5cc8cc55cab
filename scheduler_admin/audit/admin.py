from django.contrib import admin

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.admin_mixins import ReadOnlyAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "actor_name", "partition_name", "queue_path", "summary")
    list_filter = ("kind", "partition_name")
    search_fields = ("summary", "actor_name", "queue_path", "object_id")
    date_hierarchy = "created_at"
