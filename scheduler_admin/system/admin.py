from django.contrib import admin

from scheduler_admin.system.models import WorkerHeartbeat
from scheduler_admin.web.admin_mixins import ReadOnlyAdmin


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("worker", "kind", "last_seen")
