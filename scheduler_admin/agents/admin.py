from django.contrib import admin

from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.base.admin_mixins import ReadOnlyAdmin


@admin.register(ClusterAgent)
class ClusterAgentAdmin(ReadOnlyAdmin):
    list_display = ("name", "partition", "cluster", "version", "last_heartbeat_at")
    list_filter = ("partition",)
    search_fields = ("name", "cluster")
