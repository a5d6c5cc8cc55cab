"""What ``/metrics`` answers: the counters and histograms of every process (``metrics``) and
gauges read from the database at scrape time (``DatabaseCollector``).

Gauges describe how things stand now, which the database already knows; keeping them in the
processes would need every process to agree on them. Each is one cheap query per scrape on an
index or a small table: pending eviction orders (``eviction_partition_status``), pending quota
timers (``timer_status_due``), active runs (the partial unique index), the agents and heartbeat
rows (a handful), and the queues of the exported depth with their usage from the usage summary
(``cluster.QueueUsage`` on PostgreSQL; a few rows per queue path).

**Cardinality.** The per-queue gauges export at most ``METRICS_QUEUE_LIMIT`` queues in all, of
depth at most ``METRICS_QUEUE_MAX_DEPTH`` (root is depth 0, ``root.a`` 1), taken shallowest first
and, within a depth, by partition and path: the deepest queues are dropped first, then, at the
deepest exported depth, the last in partition and path order. Each exported queue gives one
series per resource name its usage, guarantee or max has. ``scheduler_admin_queues`` and
``scheduler_admin_queues_exported`` say how many there were and how many were exported. The
per-application preemptions export at most ``METRICS_APPLICATION_LIMIT`` applications per
partition, plus one ``OTHER`` series for the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, OuterRef, Subquery
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from scheduler_admin.base import metrics

#: Every gauge ``DatabaseCollector`` exports, with its labels (docs/reference/metrics.md and
#: the Grafana dashboard's test list them).
GAUGES: dict[str, tuple[str, ...]] = {
    "scheduler_admin_eviction_orders_pending": ("partition", "cluster_status"),
    "scheduler_admin_eviction_oldest_pending_age_seconds": ("partition",),
    "scheduler_admin_quota_timers_pending": ("partition",),
    "scheduler_admin_quota_timer_next_due_seconds": ("partition",),
    "scheduler_admin_runs_active": ("partition", "status"),
    "scheduler_admin_paced_victims_left": ("partition",),
    "scheduler_admin_paced_runs_waiting": ("partition",),
    "scheduler_admin_agent_last_push_age_seconds": ("partition", "agent"),
    "scheduler_admin_agent_heartbeat_age_seconds": ("partition", "agent"),
    "scheduler_admin_heartbeat_age_seconds": ("kind",),
    "scheduler_admin_queue_usage": ("partition", "queue", "resource"),
    "scheduler_admin_queue_guaranteed": ("partition", "queue", "resource"),
    "scheduler_admin_queue_max": ("partition", "queue", "resource"),
    "scheduler_admin_queues": ("partition",),
    "scheduler_admin_queues_exported": ("partition",),
    "scheduler_admin_application_preemptions": ("partition", "application"),
}


def scrape() -> bytes:
    """The text exposition of every metric: the processes' counters and histograms (their files
    added up in multiprocess mode, else this process's own) and the database gauges."""
    registry = CollectorRegistry(auto_describe=False)
    path = metrics.multiprocess_dir()
    if path:
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(metrics.REGISTRY)
    registry.register(DatabaseCollector())
    return generate_latest(registry)


def _gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=list(GAUGES[name]))


def _age(now: datetime, then: datetime) -> float:
    return max((now - then).total_seconds(), 0.0)


#: The label of the applications past ``METRICS_APPLICATION_LIMIT`` (and of victims whose run
#: recorded no application). Application ids are Kubernetes names, which hold no upper case.
OTHER_APPLICATIONS = "OTHER"


class DatabaseCollector:
    """The gauges (``GAUGES`` lists their names); reads the database on every ``collect``."""

    def collect(self) -> Iterator[Metric]:
        from scheduler_admin.queues.models import Partition

        now = timezone.now()
        partitions = dict(Partition.objects.values_list("pk", "name"))
        yield from self._evictions(partitions, now)
        yield from self._timers(partitions, now)
        yield from self._runs(partitions)
        yield from self._paced(partitions)
        yield from self._agents(now)
        yield from self._heartbeats(now)
        yield from self._queues(partitions)
        yield from self._applications(partitions, now)

    def _evictions(self, partitions: dict[int, str], now: datetime) -> Iterator[Metric]:
        from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus

        pending = _gauge(
            "scheduler_admin_eviction_orders_pending",
            "Eviction orders not acknowledged yet, by partition and what the cluster last "
            "reported on them: none (no report), blocked (a disruption budget), failed "
            "(retrying) or waiting (a soft eviction). Acknowledged orders are counted by "
            "scheduler_admin_eviction_ack_seconds_count.",
        )
        oldest = _gauge(
            "scheduler_admin_eviction_oldest_pending_age_seconds",
            "Age of the oldest eviction order not acknowledged yet, by partition (0: none).",
        )
        rows = (
            EvictionOrder.objects.filter(status=EvictionStatus.PENDING)
            .values("partition_id", "cluster_status")
            .annotate(count=Count("id"), first=Min("created_at"))
            .order_by()
        )
        counts: dict[tuple[str, str], int] = {(name, "none"): 0 for name in partitions.values()}
        firsts: dict[str, float] = dict.fromkeys(partitions.values(), 0.0)
        for row in rows:
            name = partitions.get(row["partition_id"])
            if name is None:
                continue
            counts[(name, row["cluster_status"] or "none")] = row["count"]
            firsts[name] = max(firsts[name], _age(now, row["first"]))
        for labels, count in sorted(counts.items()):
            pending.add_metric(list(labels), count)
        for name, age in sorted(firsts.items()):
            oldest.add_metric([name], age)
        yield pending
        yield oldest

    def _timers(self, partitions: dict[int, str], now: datetime) -> Iterator[Metric]:
        from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus

        pending = _gauge(
            "scheduler_admin_quota_timers_pending",
            "Quota timers waiting to fire (a lowered max not enforced yet), by partition.",
        )
        next_due = _gauge(
            "scheduler_admin_quota_timer_next_due_seconds",
            "Seconds until the partition's next quota timer is due; negative when a timer is "
            "overdue (deferred behind a related run, or waiting for the next sweep). No sample "
            "for a partition without pending timers.",
        )
        rows = (
            QuotaTimer.objects.filter(status=TimerStatus.PENDING)
            .values("partition_id")
            .annotate(count=Count("id"), first=Min("due_at"))
            .order_by()
        )
        counts = dict.fromkeys(partitions.values(), 0)
        for row in rows:
            name = partitions.get(row["partition_id"])
            if name is None:
                continue
            counts[name] = row["count"]
            next_due.add_metric([name], (row["first"] - now).total_seconds())
        for name, count in sorted(counts.items()):
            pending.add_metric([name], count)
        yield pending
        yield next_due

    def _runs(self, partitions: dict[int, str]) -> Iterator[Metric]:
        from scheduler_admin.enforcement.models import ACTIVE_RUN_STATUSES, PreemptionRun

        active = _gauge(
            "scheduler_admin_runs_active",
            "Preemption runs not ended yet, by partition and status (pending: waiting for a "
            "worker; running: claimed).",
        )
        counts = {
            (name, str(status)): 0 for name in partitions.values() for status in ACTIVE_RUN_STATUSES
        }
        rows = (
            PreemptionRun.objects.filter(status__in=ACTIVE_RUN_STATUSES)
            .values("partition_id", "status")
            .annotate(count=Count("id"))
            .order_by()
        )
        for row in rows:
            name = partitions.get(row["partition_id"])
            if name is not None:
                counts[(name, row["status"])] = row["count"]
        for labels, count in sorted(counts.items()):
            active.add_metric(list(labels), count)
        yield active

    def _paced(self, partitions: dict[int, str]) -> Iterator[Metric]:
        from scheduler_admin.enforcement.models import (
            ACTIVE_RUN_STATUSES,
            PreemptionRun,
            RunVictim,
        )

        left = _gauge(
            "scheduler_admin_paced_victims_left",
            "Victims of active runs not preempted yet, in partitions with a pace "
            "(max_evictions_per_minute); divided by the pace, the minutes left at the earliest.",
        )
        waiting = _gauge(
            "scheduler_admin_paced_runs_waiting",
            "Runs the partition's pace holds until its last minute's eviction orders leave "
            "the window, by partition.",
        )
        from scheduler_admin.queues.models import Partition

        paced = set(
            Partition.objects.filter(max_evictions_per_minute__gt=0).values_list("pk", flat=True)
        )
        victims = (
            RunVictim.objects.filter(
                run__partition_id__in=paced,
                run__status__in=ACTIVE_RUN_STATUSES,
                preempted_at__isnull=True,
            )
            .values("run__partition_id")
            .annotate(count=Count("id"))
            .order_by()
        )
        counts = dict.fromkeys(paced, 0)
        for row in victims:
            counts[row["run__partition_id"]] = row["count"]
        held = (
            PreemptionRun.objects.filter(partition_id__in=paced, paced_until__isnull=False)
            .filter(status__in=ACTIVE_RUN_STATUSES)
            .values("partition_id")
            .annotate(count=Count("id"))
            .order_by()
        )
        holds = dict.fromkeys(paced, 0)
        for row in held:
            holds[row["partition_id"]] = row["count"]
        for pk in sorted(paced, key=lambda pk: partitions.get(pk, "")):
            if pk in partitions:
                left.add_metric([partitions[pk]], counts[pk])
                waiting.add_metric([partitions[pk]], holds[pk])
        yield left
        yield waiting

    def _agents(self, now: datetime) -> Iterator[Metric]:
        from scheduler_admin.agents.models import ClusterAgent

        push = _gauge(
            "scheduler_admin_agent_last_push_age_seconds",
            "Seconds since the cluster agent's last successful cluster-state push (its own "
            "clock, as its last heartbeat reported it), by partition and agent; no sample for "
            "an agent that never pushed.",
        )
        heartbeat = _gauge(
            "scheduler_admin_agent_heartbeat_age_seconds",
            "Seconds since the cluster agent's last heartbeat reached the product, by partition "
            "and agent (stale past STALE_AGENT_SECONDS).",
        )
        rows = ClusterAgent.objects.values_list(
            "partition__name", "name", "last_push_at", "last_heartbeat_at"
        ).order_by("partition__name", "name")
        for partition, name, last_push_at, last_heartbeat_at in rows:
            if last_push_at is not None:
                push.add_metric([partition, name], _age(now, last_push_at))
            heartbeat.add_metric([partition, name], _age(now, last_heartbeat_at))
        yield push
        yield heartbeat

    def _heartbeats(self, now: datetime) -> Iterator[Metric]:
        from scheduler_admin.system.models import ProcessKind, WorkerHeartbeat

        age = _gauge(
            "scheduler_admin_heartbeat_age_seconds",
            "Seconds since the youngest heartbeat of each kind of background process: beat, "
            "worker (sweeps and runs), webhook_worker. No sample for a kind never seen.",
        )
        rows = WorkerHeartbeat.objects.values("kind").annotate(last=Max("last_seen")).order_by()
        seen = {row["kind"]: row["last"] for row in rows}
        for kind in ProcessKind.values:
            if kind in seen:
                age.add_metric([kind], _age(now, seen[kind]))
        yield age

    def _applications(self, partitions: dict[int, str], now: datetime) -> Iterator[Metric]:
        """Tasks preempted per application over the last week (``task_history.TOP_WINDOW``):
        the victims preempted since then (index ``victim_preempted_at``), each with the
        application its run recorded, counted in one grouped query."""
        from scheduler_admin.enforcement.models import RunCandidate, RunVictim
        from scheduler_admin.enforcement.task_history import TOP_WINDOW

        gauge = _gauge(
            "scheduler_admin_application_preemptions",
            f"Tasks preempted in the last {TOP_WINDOW.days} days, by partition and application: "
            "the METRICS_APPLICATION_LIMIT applications preempted most in each partition, and "
            f"{OTHER_APPLICATIONS} for the others together.",
        )
        application = RunCandidate.objects.filter(
            run=OuterRef("run"), candidate=OuterRef("allocation_id")
        ).values("application")[:1]
        rows = (
            RunVictim.objects.filter(preempted_at__gte=now - TOP_WINDOW)
            .annotate(app=Subquery(application))
            .values_list("run__partition_id", "app")
            .annotate(count=Count("*"))
            .order_by()
        )
        counts: dict[str, dict[str, int]] = {name: {} for name in partitions.values()}
        for partition_id, app, count in rows:
            name = partitions.get(partition_id)
            if name is not None:
                key = app or OTHER_APPLICATIONS
                counts[name][key] = counts[name].get(key, 0) + count
        for labels in _top_applications(counts, settings.METRICS_APPLICATION_LIMIT):
            gauge.add_metric(list(labels[:2]), labels[2])
        yield gauge

    def _queues(self, partitions: dict[int, str]) -> Iterator[Metric]:
        from scheduler_admin.queues.models import Queue

        unit = "(the config's units: memory in bytes, vcore in millicores, counts as numbers)"
        usage = _gauge(
            "scheduler_admin_queue_usage",
            f"Resources used by the queue's subtree (running and preempting tasks) {unit}.",
        )
        guaranteed = _gauge(
            "scheduler_admin_queue_guaranteed",
            f"The queue's configured guaranteed resources {unit}; no sample for a resource "
            "without a guarantee.",
        )
        maximum = _gauge(
            "scheduler_admin_queue_max",
            f"The queue's configured max resources {unit}; no sample for an unlimited resource.",
        )
        total = _gauge(
            "scheduler_admin_queues",
            "Queues configured, by partition.",
        )
        exported = _gauge(
            "scheduler_admin_queues_exported",
            "Queues with per-queue series in this scrape, by partition (METRICS_QUEUE_MAX_DEPTH "
            "and METRICS_QUEUE_LIMIT leave the others out).",
        )
        chosen = list(
            Queue.objects.filter(depth__lte=settings.METRICS_QUEUE_MAX_DEPTH)
            .order_by("depth", "partition__name", "path")
            .values_list("partition_id", "path", "guaranteed", "max")[
                : settings.METRICS_QUEUE_LIMIT
            ]
        )
        counts = dict(
            Queue.objects.values("partition_id")
            .annotate(count=Count("id"))
            .order_by()
            .values_list("partition_id", "count")
        )
        by_partition: dict[int, list[tuple[str, dict[str, Any], dict[str, Any]]]] = defaultdict(
            list
        )
        for partition_id, path, own_guaranteed, own_max in chosen:
            by_partition[partition_id].append((path, own_guaranteed, own_max))
        for partition_id, name in sorted(partitions.items(), key=lambda item: item[1]):
            queues = by_partition.get(partition_id, [])
            total.add_metric([name], counts.get(partition_id, 0))
            exported.add_metric([name], len(queues))
            if not queues:
                continue
            used = _usage(partition_id, [path for path, _, _ in queues])
            for path, own_guaranteed, own_max in queues:
                for resource, amount in sorted(used.get(path, {}).items()):
                    usage.add_metric([name, path, resource], amount)
                for resource, amount in sorted(own_guaranteed.items()):
                    guaranteed.add_metric([name, path, resource], amount)
                for resource, amount in sorted(own_max.items()):
                    maximum.add_metric([name, path, resource], amount)
        yield usage
        yield guaranteed
        yield maximum
        yield total
        yield exported


def _top_applications(
    counts: dict[str, dict[str, int]], limit: int
) -> Iterator[tuple[str, str, int]]:
    """Per partition: its ``limit`` applications preempted most by name, then ``other`` with the
    sum of the rest (always, 0 when none), so the series stay few whatever the cluster does."""
    for name in sorted(counts):
        ranked = sorted(counts[name].items(), key=lambda item: (-item[1], item[0]))
        for application, count in ranked[:limit]:
            yield name, application, count
        yield name, OTHER_APPLICATIONS, sum(count for _, count in ranked[limit:])


def _usage(partition_id: int, paths: list[str]) -> dict[str, dict[str, int]]:
    """Usage of the exported queues of one partition, as the dashboard and the queues API
    read it (``cluster.adapters.usage_of_queues``: the usage summary, rolled up the tree)."""
    from scheduler_admin.cluster.adapters import usage_of_queues
    from scheduler_admin.cluster.dynamic import cluster_tree
    from scheduler_admin.queues.models import Partition

    partition = Partition.objects.get(pk=partition_id)
    _, hierarchy, _ = cluster_tree(partition)  # dynamic queues count in their ancestors
    return usage_of_queues(partition, hierarchy, [p for p in paths if p in hierarchy.queues])
