"""Cluster agents: the processes that connect a real cluster to the product (issue 15).

An agent (``scheduler_admin_agent``, which imports nothing of Django) pushes cluster state,
carries out eviction orders and, when allowed, publishes the saved config into YuniKorn's
ConfigMap. It talks to the product only over the REST API, and says how it is doing with a
heartbeat every few seconds (``POST partitions/{p}/agents/heartbeat``). Rows here are written
only by ``scheduler_admin.agents.services``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

from scheduler_admin.base.limits import (
    AGENT_CLUSTER_MAX_LENGTH,
    AGENT_NAME_MAX_LENGTH,
    AGENT_VERSION_MAX_LENGTH,
)
from scheduler_admin.queues.models import Partition

#: The counts an agent reports with each heartbeat: what its last push held, and the pods it
#: could not report (``skipped``).
COUNT_KEYS = ("nodes", "allocations", "asks", "budgets", "skipped")
#: At most this many of the skipped pods come with their reason (``ClusterAgent.not_placed``).
NOT_PLACED_LIMIT = 20


class ClusterAgent(models.Model):
    """One agent of one partition, as its last heartbeat described it (an upsert by name).

    ``last_heartbeat_at`` is the product's clock when the heartbeat arrived; the other times are
    the agent's own (``started_at``, ``last_push_at``). ``running_revision`` is the config
    revision the cluster's ConfigMap holds as far as the agent knows (null: it does not know,
    e.g. read-only and never published); ``publishing`` says whether the agent writes the
    ConfigMap at all. An agent silent for ``STALE_AGENT_SECONDS`` is *stale* (``is_stale``).
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=AGENT_NAME_MAX_LENGTH)
    cluster = models.CharField(max_length=AGENT_CLUSTER_MAX_LENGTH, blank=True)
    version = models.CharField(max_length=AGENT_VERSION_MAX_LENGTH, blank=True)
    started_at = models.DateTimeField()
    registered_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField()
    last_push_at = models.DateTimeField(null=True, blank=True)
    lag_seconds = models.FloatField(null=True, blank=True)
    #: At most ``limits.CLUSTER_MESSAGE_MAX_LENGTH`` characters (longer ones are cut).
    last_error = models.TextField(blank=True)
    running_revision = models.PositiveIntegerField(null=True, blank=True)
    publishing = models.BooleanField(default=False)
    counts = models.JSONField(default=dict, blank=True)
    #: Up to ``NOT_PLACED_LIMIT`` of the pods the agent left out (``counts.skipped`` is how
    #: many): ``[{"pod": id, "reason": text}]``, e.g. an application YuniKorn rejects (SPEC 3.4).
    not_placed = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["partition", "name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "name"], name="agent_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.partition_id})"

    def silent_for(self, now: datetime) -> timedelta:
        return max(now - self.last_heartbeat_at, timedelta(0))

    def is_stale(self, now: datetime) -> bool:
        """No heartbeat for ``STALE_AGENT_SECONDS``: the agent stopped, or cannot reach us."""
        return self.silent_for(now) >= timedelta(seconds=settings.STALE_AGENT_SECONDS)
