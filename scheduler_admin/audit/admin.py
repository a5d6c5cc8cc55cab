from django.contrib import admin

from scheduler_admin.audit.kinds import AuditKind
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.admin_mixins import ReadOnlyAdmin


class KindFilter(admin.SimpleListFilter):
    """The registered kinds with their labels (the column itself has no ``choices``)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return AuditKind.choices

    def queryset(self, request, queryset):
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "actor_name", "partition_name", "queue_path", "summary")
    list_filter = (KindFilter, "partition_name")
    search_fields = ("summary", "actor_name", "queue_path", "object_id")
    date_hierarchy = "created_at"
