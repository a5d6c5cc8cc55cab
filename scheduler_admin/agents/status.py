"""Reading cluster agents for the console: each agent with what an admin wants to know at a
glance (stale or not, how old its last push is, which revision the cluster runs against the
newest). One query for the agents and one for the newest revision of their partitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.queues.models import ConfigRevision, Partition


@dataclass(frozen=True)
class AgentStatus:
    """One agent as the dashboard shows it."""

    agent: ClusterAgent
    #: Whole seconds since its last heartbeat, and since its last push (None: never pushed).
    silent_seconds: int
    push_age_seconds: int | None
    stale: bool
    #: The partition's newest revision (what the cluster should run).
    newest_revision: int | None

    @property
    def partition_name(self) -> str:
        return self.agent.partition.name

    @property
    def behind(self) -> bool:
        """A publishing agent whose cluster runs an older revision than the newest (or none
        yet)."""
        agent = self.agent
        return agent.publishing and (
            agent.running_revision is None or agent.running_revision != self.newest_revision
        )

    def state(self) -> dict[str, object]:
        """What the dashboard's live updates compare: only what changes when something happens.
        Not the times of the last heartbeat and push, which move every few seconds while all
        is well (the page ticks their ages itself), nor the lag to the tenth of a second: an
        open dashboard still gets its ``304 Not Modified`` while an agent pushes."""
        agent = self.agent
        return {
            "partition": self.partition_name,
            "name": agent.name,
            "cluster": agent.cluster,
            "version": agent.version,
            "stale": self.stale,
            "pushed": agent.last_push_at is not None,
            "lag": None if agent.lag_seconds is None else round(agent.lag_seconds),
            "last_error": agent.last_error,
            "running_revision": agent.running_revision,
            "newest_revision": self.newest_revision,
            "publishing": agent.publishing,
            "counts": agent.counts,
        }


def agent_statuses(now: datetime, partition: Partition | None = None) -> list[AgentStatus]:
    """Every agent (of ``partition`` only, when given), by partition and name."""
    agents = ClusterAgent.objects.select_related("partition").order_by(
        "partition__name", "name", "id"
    )
    if partition is not None:
        agents = agents.filter(partition=partition)
    rows = list(agents)
    newest = dict(
        ConfigRevision.objects.filter(partition_id__in={agent.partition_id for agent in rows})
        .values("partition_id")
        .annotate(newest=Max("number"))
        .values_list("partition_id", "newest")
    )
    return [
        AgentStatus(
            agent=agent,
            silent_seconds=int(agent.silent_for(now).total_seconds()),
            push_age_seconds=(
                max(int((now - agent.last_push_at).total_seconds()), 0)
                if agent.last_push_at is not None
                else None
            ),
            stale=agent.is_stale(now),
            newest_revision=newest.get(agent.partition_id),
        )
        for agent in rows
    ]


def running_revisions(partition: Partition) -> dict[int, list[ClusterAgent]]:
    """Revision number -> the partition's agents whose cluster runs it (history page)."""
    found: dict[int, list[ClusterAgent]] = {}
    for agent in ClusterAgent.objects.filter(
        partition=partition, running_revision__isnull=False
    ).order_by("name", "id"):
        found.setdefault(agent.running_revision, []).append(agent)
    return found
