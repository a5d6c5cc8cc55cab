"""The dashboard's cards besides the tree: queues over max, alerts, recent runs and revisions,
workers and cluster agents. Built here once for the page (``views.dashboard``) and for its live
updates (``web.live``), so both show the same thing from the same queries.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q

from scheduler_admin.accounts import permissions
from scheduler_admin.agents.status import agent_statuses
from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.enforcement.task_history import TOP_WINDOW, most_preempted
from scheduler_admin.enforcement.visibility import visible_runs
from scheduler_admin.queues.models import Partition
from scheduler_admin.system.models import WorkerHeartbeat
from scheduler_admin.web.dashboard.tree import QueueTree
from scheduler_admin.web.explanations import (
    ALERT_OUTCOMES,
    glossary_url,
    outcome_anchor,
    outcome_text,
)

#: A worker whose heartbeat is older than this is shown as not running.
HEARTBEAT_STALE_AFTER = timedelta(seconds=30)
#: Runs that ended ``short`` or ``does_not_help`` this recently are raised as alerts.
ALERT_WINDOW = timedelta(hours=24)
RECENT = 10
#: What the recent runs card and the alerts read of a run (a run row also holds its plan's
#: victims and nominations: not read for a list).
RUN_CARD_FIELDS = ("partition_id", "policy", "queue_path", "status", "outcome", "created_at")
ALERT_FIELDS = (*RUN_CARD_FIELDS, "error")


def panels(tree: QueueTree, user: Any) -> dict[str, Any]:
    """Context of the partition's cards (names as the templates use them); a handful of
    queries, none per queue. What ``user`` may read: a queue grant's holder gets the runs of
    their subtrees and no revisions (each is the whole partition's config)."""
    partition, now = tree.partition, tree.now
    over_max, over_max_count = tree.over_max()
    runs = visible_runs(user, PreemptionRun.objects.filter(partition=partition))
    # The newest revisions come with the shared roll-up (no query); none for a grant holder.
    whole = permissions.can(user, permissions.READ, partition)
    return {
        "over_max": over_max,
        "over_max_count": over_max_count,
        "alerts": alerts(partition, now, user),
        "runs": list(runs.listed().only(*RUN_CARD_FIELDS)[:RECENT]),
        "revisions": list(tree.recent_revisions[:RECENT]) if whole else [],
    }


def most_preempted_panel(tree: QueueTree, user: Any) -> dict[str, Any]:
    """The applications whose tasks were preempted most lately, in the reader's subtrees: the
    page's card only (the live updates do not follow it, so a poll does not query it)."""
    return {
        "most_preempted": most_preempted(tree.partition, user, tree.now),
        "most_preempted_days": TOP_WINDOW.days,
    }


def alerts(partition: Partition, now: datetime, user: Any) -> list[dict[str, object]]:
    """Recent runs that left their queue over max (SPEC 4.1: the dashboard shows an alert):
    those that fell short, and those that failed or were aborted before they finished. A run
    that stopped because it was no longer needed left its queue within max: no alert, whatever
    its plan said."""
    runs = (
        visible_runs(user, PreemptionRun.objects.all())
        .filter(
            Q(outcome__in=ALERT_OUTCOMES) | Q(status=RunStatus.FAILED),
            partition=partition,
            created_at__gte=now - ALERT_WINDOW,
        )
        .exclude(status=RunStatus.STOPPED)
        .only(*ALERT_FIELDS)[:RECENT]
    )
    return [
        {
            "run": run,
            "label": "failed" if run.status == RunStatus.FAILED else run.outcome,
            "text": run.error if run.status == RunStatus.FAILED else outcome_text(run.outcome),
            "link": ""
            if run.status == RunStatus.FAILED
            else glossary_url(outcome_anchor(run.outcome)),
        }
        for run in runs
    ]


def agents(now: datetime) -> dict[str, Any]:
    """The cluster agents card: every agent of every partition (a handful), with whether each
    is stale and which revision its cluster runs against the newest."""
    return {
        "agents": agent_statuses(now),
        "agent_stale_seconds": settings.STALE_AGENT_SECONDS,
    }


def heartbeats(now: datetime) -> list[dict[str, object]]:
    return [
        {
            "worker": beat.worker,
            "last_seen": beat.last_seen,
            "alive": now - beat.last_seen < HEARTBEAT_STALE_AFTER,
        }
        for beat in WorkerHeartbeat.objects.all()[:RECENT]
    ]
