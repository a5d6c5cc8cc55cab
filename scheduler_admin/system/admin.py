from django.contrib import admin

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin
from scheduler_admin.system.models import WorkerHeartbeat


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("worker", "kind", "last_seen")
