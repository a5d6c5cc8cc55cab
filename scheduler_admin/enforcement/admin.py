from django.contrib import admin

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunCandidate,
    RunVictim,
)


@admin.register(QuotaTimer)
class QuotaTimerAdmin(ReadOnlyAdmin):
    list_display = ("queue_path", "partition", "due_at", "status", "deferred_since")
    list_filter = ("partition", "status")


@admin.register(PreemptionRun)
class PreemptionRunAdmin(ReadOnlyAdmin):
    list_display = ("pk", "policy", "queue_path", "status", "outcome", "attempt", "created_at")
    list_filter = ("partition", "policy", "status", "outcome")


@admin.register(RunVictim)
class RunVictimAdmin(ReadOnlyAdmin):
    list_display = ("allocation_id", "run", "position", "preempted_at")


@admin.register(RunCandidate)
class RunCandidateAdmin(ReadOnlyAdmin):
    list_display = ("candidate", "run", "accepted", "reason", "position", "queue_path")
    list_filter = ("reason", "accepted")


@admin.register(EvictionOrder)
class EvictionOrderAdmin(ReadOnlyAdmin):
    list_display = ("pk", "allocation_id", "node_name", "status", "webhook_attempts", "created_at")
    list_filter = ("partition", "status")


@admin.register(QueueLock)
class QueueLockAdmin(ReadOnlyAdmin):
    list_display = ("queue_path", "partition", "token")
