"""Scheduler Admin: the control plane for batch-cluster queue quotas and preemption."""

from scheduler_admin.celery import app as celery_app

__all__ = ("celery_app",)
