"""Prometheus metrics: the one door the product's services call to count what happened.

Counters and histograms live here; a service calls one function in one line (``run_ended``,
``victims_preempted``, ``eviction_acknowledged``, ``evictions_acknowledged``) inside its
transaction, and the observation is made once that transaction commits
(``transaction.on_commit``, robust: a metric that cannot be written is logged and never fails the
write it describes). A rolled-back run therefore counts nothing. Gauges (how things stand now)
are not kept here: ``collectors.DatabaseCollector`` reads them from the database at scrape time.

**Several processes.** Counts are made where the work happens: runs and victims in the Celery
workers' pool processes, acknowledgements in gunicorn workers (the API), the webhook worker and
the simulator; ``/metrics`` is served by any gunicorn worker. With ``PROMETHEUS_MULTIPROC_DIR``
set, prometheus-client's multiprocess mode writes each process's values to files of its own in
that directory and a scrape adds them up (``MultiProcessCollector``), so counters never go back
when one process of many restarts. The files are named with ``process_identifier`` (the host
name and the pid, not the pid alone): docker-compose shares one directory between the web,
worker and webhook-worker containers, whose processes may have the same pid in their own pid
namespaces. Without the variable (the test process, a shell), values stay in this process.

The directory must be emptied when the whole stack starts (``scripts/run.sh``; compose's tmpfs
volume starts empty; the tests give each stack a new one): files of an earlier run would add
its counts to the new one's.
"""

from __future__ import annotations

import os
import re
import socket
from collections import Counter as Tally
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    values,
)
from prometheus_client import multiprocess as prometheus_multiprocess

if TYPE_CHECKING:
    from django.db.models import Model, QuerySet

    #: The base knows no app: a run, a victim and an order are the enforcement app's rows, typed
    #: here by what is read of them (``run.partition.name``, ``victim.queue_path``, ...).
    PreemptionRun = Model
    RunVictim = Model
    EvictionOrder = Model

#: Every metric the product exports starts with this.
PREFIX = "scheduler_admin_"

_HOST = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:64] or "host"


def multiprocess_dir() -> str:
    """``PROMETHEUS_MULTIPROC_DIR`` (blank: this process keeps its own values). Read from the
    environment, as prometheus-client itself reads it when it opens a process's file."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "").strip()


def process_identifier(pid: int | None = None) -> str:
    """What names a process's files: ``<host>-<pid>`` (see the module docstring). Changes in a
    forked child, which makes prometheus-client open files of the child's own."""
    return f"{_HOST}-{os.getpid() if pid is None else pid}"


def mark_dead(pid: int) -> None:
    """Bookkeeping when a process of the stack exits (gunicorn's ``child_exit``, Celery's
    ``worker_process_shutdown``): prometheus-client drops the dead process's live gauge files.
    The product keeps no gauge in these files today (gauges are read at scrape time), so this
    is what the library asks for should one be added; counters of dead processes stay counted."""
    path = multiprocess_dir()
    if path:
        prometheus_multiprocess.mark_process_dead(process_identifier(pid), path)


# Chosen before any metric below gets a value. A blank PROMETHEUS_MULTIPROC_DIR means one
# process (prometheus-client would take a set but blank variable as multiprocess mode, with
# its files in the working directory).
values.ValueClass = (
    values.MultiProcessValue(process_identifier) if multiprocess_dir() else values.MutexValue
)

# No ``*_created`` series: multiprocess mode has none, and a scrape should not depend on the mode.
disable_created_metrics()

#: This process's metrics (single-process mode only; the scrape reads the files otherwise).
REGISTRY = CollectorRegistry()

RUNS = Counter(
    "scheduler_admin_runs",
    "Preemption runs ended, by partition, policy and outcome: the plan's outcome (complete, "
    "best_effort, short, does_not_help, not_triggered) for a finished run, failed for a run "
    "that gave up after RUN_MAX_ATTEMPTS, aborted for one an admin aborted, stopped for one "
    "that ended early because it was no longer needed (its queue back within max, quota "
    "preemption switched off, its ask no longer pending), observed for one of a partition that "
    "only observes (nothing evicted).",
    ["partition", "policy", "outcome"],
    registry=REGISTRY,
)
VICTIMS = Counter(
    "scheduler_admin_victims",
    "Tasks preempted by runs (an eviction order created), by partition, the run's policy, the "
    "victim's queue (cut to METRICS_QUEUE_MAX_DEPTH levels below root) and the reason the run "
    "was started: quota_timer (a lowered max), ask (a waiting task) or job (a gang).",
    ["partition", "policy", "queue", "reason"],
    registry=REGISTRY,
)
VICTIMS_OBSERVED = Counter(
    "scheduler_admin_victims_observed",
    "Tasks runs would have preempted in a partition that only observes (no eviction order "
    "created), by the same labels as scheduler_admin_victims; counted when the run ends "
    "observed.",
    ["partition", "policy", "queue", "reason"],
    registry=REGISTRY,
)
EVICTION_ACK_SECONDS = Histogram(
    "scheduler_admin_eviction_ack_seconds",
    "Seconds from an eviction order's creation to its acknowledgement by the cluster (or its "
    "webhook receiver), by partition and outcome (evicted, gone); observed when acknowledged.",
    ["partition", "outcome"],
    buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200),
    registry=REGISTRY,
)
RUN_DURATION_SECONDS = Histogram(
    "scheduler_admin_run_duration_seconds",
    "Seconds from a run's first claim by a worker to its end (planning and every eviction "
    "order included), by partition and policy; observed when the run ends.",
    ["partition", "policy"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
    registry=REGISTRY,
)


#: Every counter and histogram (docs/reference/metrics.md and the Grafana dashboard's test list
#: them; tests/unit/test_docs_site.py checks the first).
COUNTERS = (RUNS, VICTIMS, VICTIMS_OBSERVED)
HISTOGRAMS = (EVICTION_ACK_SECONDS, RUN_DURATION_SECONDS)


def queue_label(path: str) -> str:
    """A queue path cut to ``METRICS_QUEUE_MAX_DEPTH`` levels below root (``root.a.b.c`` at
    depth 2: ``root.a``), so a counter labelled by queue has at most one series per queue of
    the exported depth, however many leaves a cluster has."""
    from django.conf import settings

    return ".".join(path.split(".")[: settings.METRICS_QUEUE_MAX_DEPTH + 1])


def _after_commit(observe: Callable[[], None]) -> None:
    """Observe once the current transaction commits (at once outside one); never raises."""
    transaction.on_commit(observe, robust=True)


def run_ended(run: PreemptionRun, *, outcome: str, ended_at: datetime) -> None:
    """A run ended (finished with ``outcome``, or ``failed``/``aborted``/``stopped``) at
    ``ended_at``."""
    partition, policy = run.partition.name, str(run.policy)
    started = run.started_at
    duration = (ended_at - started).total_seconds() if started is not None else None

    def observe() -> None:
        RUNS.labels(partition, policy, outcome or "none").inc()
        if duration is not None:
            RUN_DURATION_SECONDS.labels(partition, policy).observe(max(duration, 0.0))

    _after_commit(observe)


def victims_preempted(run: PreemptionRun, victims: Iterable[RunVictim]) -> None:
    """Eviction orders were created for ``victims`` of ``run`` (one chunk)."""
    _count_victims(VICTIMS, run, victims)


def victims_observed(run: PreemptionRun, victims: Iterable[RunVictim]) -> None:
    """An observed run would have preempted ``victims`` (none of them was)."""
    _count_victims(VICTIMS_OBSERVED, run, victims)


def _count_victims(counter: Counter, run: PreemptionRun, victims: Iterable[RunVictim]) -> None:
    per_queue = Tally(queue_label(victim.queue_path) for victim in victims)
    partition, policy, reason = run.partition.name, str(run.policy), str(run.trigger)

    def observe() -> None:
        for queue, count in per_queue.items():
            counter.labels(partition, policy, queue, reason).inc(count)

    _after_commit(observe)


def eviction_acknowledged(order: EvictionOrder) -> None:
    """One order was acknowledged (its row in memory, as saved)."""
    _observe_acks_after_commit(
        [(order.partition.name, order.outcome, order.created_at, order.acknowledged_at)]
    )


def evictions_acknowledged(orders: QuerySet) -> None:
    """Many orders were acknowledged (a bulk acknowledgement): ``orders``, a lazy query of them,
    is read once the acknowledgement has committed, in one query."""

    def observe() -> None:
        _observe_acks(
            orders.values_list("partition__name", "outcome", "created_at", "acknowledged_at")
        )

    _after_commit(observe)


_AckRow = tuple[str, str, datetime, "datetime | None"]


def _observe_acks_after_commit(rows: list[_AckRow]) -> None:
    _after_commit(lambda: _observe_acks(rows))


def _observe_acks(rows: Iterable[_AckRow]) -> None:
    for partition, outcome, created_at, acknowledged_at in rows:
        if acknowledged_at is None:
            continue
        seconds = max((acknowledged_at - created_at).total_seconds(), 0.0)
        EVICTION_ACK_SECONDS.labels(partition, outcome or "evicted").observe(seconds)
