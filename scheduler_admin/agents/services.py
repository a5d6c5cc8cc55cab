"""Writing cluster agents: the heartbeat upsert, with its audit events.

A heartbeat arrives every few seconds from every agent; it changes the agent's row each time
(the product's clock, the lag, the counts) but is audited only when something an admin must be
able to trace happens: an agent name seen for the first time in the partition
(``agent.registered``), and the cluster running another config revision
(``agent.config_applied``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from scheduler_admin.agents.models import COUNT_KEYS, NOT_PLACED_LIMIT, ClusterAgent
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event
from scheduler_admin.base.limits import cap_text
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.services import newest_revision_number

#: Longest reason kept for a pod left out (a placement trail can be long).
NOT_PLACED_TEXT = 500

if TYPE_CHECKING:
    from scheduler_admin.accounts.permissions import Authorize


@dataclass(frozen=True)
class Heartbeat:
    """What an agent says about itself (the body of ``agents/heartbeat``, checked)."""

    name: str
    started_at: datetime
    cluster: str = ""
    version: str = ""
    last_push_at: datetime | None = None
    lag_seconds: float | None = None
    last_error: str = ""
    running_revision: int | None = None
    publishing: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    #: ``[{"pod", "reason"}]``: some of the pods left out, and why (at most ``NOT_PLACED_LIMIT``).
    not_placed: list[dict[str, str]] = field(default_factory=list)

    def fields(self) -> dict[str, object]:
        """The model fields a heartbeat sets (the error cut to its limit, every count)."""
        values = asdict(self)
        del values["name"]
        values["last_error"] = cap_text(self.last_error)
        values["counts"] = {key: int(self.counts.get(key, 0)) for key in COUNT_KEYS}
        values["not_placed"] = [
            {"pod": str(item["pod"]), "reason": cap_text(str(item["reason"]), NOT_PLACED_TEXT)}
            for item in self.not_placed[:NOT_PLACED_LIMIT]
        ]
        return values


def config_revision(partition: Partition) -> int | None:
    """The revision a publishing agent should put into the cluster: the partition's newest."""
    return newest_revision_number(partition)


@retry_on_conflict
def record_heartbeat(
    partition: Partition,
    beat: Heartbeat,
    *,
    actor: AbstractBaseUser | None,
    now: datetime | None = None,
    authorize: Authorize | None = None,
) -> ClusterAgent:
    """Store ``beat`` as the state of the partition's agent of that name, creating it on its
    first heartbeat.

    One transaction, its locks in the order of ``scheduler_admin.base.lock_order``:

    0. the caller's in-write authorization (``authorize``: the account checked again, then the
       partition row, shared), or the partition row alone, shared (the agent's row references
       it);
    1. lock the agent's row, or create it (``get_or_create`` on a locking queryset: two first
       heartbeats of one new name racing both try the insert; the unique constraint lets one
       through, and the other, its savepoint rolled back, waits for that row and locks it), so
       exactly one of them registers the agent;
    2. write every field of the heartbeat and the product's time of arrival;
    3. audit ``agent.registered`` when the row was created, and ``agent.config_applied`` when
       the revision the cluster runs is known and differs from the one stored (a new agent that
       already runs one counts as a change).
    """
    now = now or timezone.now()
    values = beat.fields()
    with transaction.atomic():
        if authorize is not None:
            authorize(partition, exclusive=False)
        else:
            lock_partition(partition.pk, exclusive=False)
        agent, created = ClusterAgent.objects.select_for_update().get_or_create(
            partition=partition,
            name=beat.name,
            defaults={**values, "registered_at": now, "last_heartbeat_at": now},
        )
        before = None if created else agent.running_revision
        if not created:
            for name, value in values.items():
                setattr(agent, name, value)
            agent.last_heartbeat_at = now
            agent.save()
        if created:
            record_event(
                AuditKind.AGENT_REGISTERED,
                actor=actor,
                at=now,
                partition_name=partition.name,
                object_type="agent",
                object_id=agent.name,
                summary=f"Cluster agent {agent.name}{_of_cluster(agent)} registered for "
                f"partition {partition.name} ({_mode(agent)})",
                data={
                    "agent": agent.name, "cluster": agent.cluster, "version": agent.version,
                    "publishing": agent.publishing, "started_at": agent.started_at.isoformat(),
                },
            )  # fmt: skip
        if beat.running_revision is not None and beat.running_revision != before:
            record_event(
                AuditKind.AGENT_CONFIG_APPLIED,
                actor=actor,
                at=now,
                partition_name=partition.name,
                object_type="agent",
                object_id=agent.name,
                summary=f"{_cluster(agent)} runs revision {beat.running_revision} of partition "
                f"{partition.name} (agent {agent.name}"
                + (f"; before: revision {before})" if before is not None else ")"),
                data={
                    "agent": agent.name, "cluster": agent.cluster,
                    "revision": beat.running_revision, "previous": before,
                },
            )  # fmt: skip
    return agent


def _of_cluster(agent: ClusterAgent) -> str:
    return f" of cluster {agent.cluster}" if agent.cluster else ""


def _cluster(agent: ClusterAgent) -> str:
    return f"Cluster {agent.cluster}" if agent.cluster else "The cluster"


def _mode(agent: ClusterAgent) -> str:
    return "publishes the config" if agent.publishing else "read-only: does not publish the config"
