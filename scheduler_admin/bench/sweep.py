"""Bench section ``sweep``: the runs list after big runs, and one sweep of 2,000 due timers.

Rows (issue 14):

- ``GET /api/v1/runs/?partition=bench`` once five big runs are stored (10,000 explained
  candidates and 2,000 victims each), against the same list of five runs of a partition that
  stores no candidate or victim rows (``bench-bare``), measured in the same run; and the
  console's Runs page for both (a ratio only: the page must not grow with what runs store).
- ``sweep_due_quota_timers(now)`` with 2,000 timers due on distinct queues of the bench tree
  (most within max: not needed; the leaves over max start runs; groups above a leaf that
  starts a run, and leaves under three groups with an active run, are deferred), against the
  engine's decisions for the same timers on one loaded state (``decide_due`` per timer). The
  sweep runs in-process with ``now`` moved past the due times; the runs it creates are not
  handed to a worker (the bench has none), and the timers, runs and audit events are put back
  between repeats.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from scheduler_admin.bench.harness import Row, once, timed

#: Big runs stored before the runs list is measured, and what each keeps.
BIG_RUNS = 5
CANDIDATES_PER_RUN = 10_000
VICTIMS_PER_RUN = 2_000
#: Due timers in the sweep row, and how many of its repeats are measured.
TIMERS = 2_000
SWEEP_REPEATS = 3
BARE = "bench-bare"


def rows(context) -> Iterator[Row]:
    yield from runs_list(context)
    yield sweep(context)


# --------------------------------------------------------------------------------------------
# GET runs/ after five big runs
# --------------------------------------------------------------------------------------------


def runs_list(context) -> Iterator[Row]:
    from django.db import connection

    big = _store_big_runs(context)
    _bare_partition_runs()
    with connection.cursor() as cursor:
        for table in ("preemptionrun", "runvictim", "runcandidate"):
            cursor.execute(f"ANALYZE enforcement_{table}")
    client = context.api_client("viewer")

    def get(partition: str):
        def call() -> None:
            response = client.get("/api/v1/runs/", {"partition": partition})
            assert response.status_code == 200, response.content[:300]
            assert len(response.json()["results"]) == BIG_RUNS

        return call

    figure, baseline = side_by_side(get(context.partition.name), get(BARE))
    yield Row(
        f"GET runs/ after {BIG_RUNS} big runs",
        figure * 1000,
        "ms",
        baseline=baseline * 1000,
        baseline_name=f"the same list, {BIG_RUNS} runs without candidate or victim rows",
        goal=30,
        note=f"{big:,} candidate rows and {BIG_RUNS * VICTIMS_PER_RUN:,} victims stored",
    )

    console = context.client("viewer")

    def page() -> None:
        response = console.get("/runs/", {"partition": context.partition.name})
        assert response.status_code == 200

    def page_bare() -> None:
        response = console.get("/runs/", {"partition": BARE})
        assert response.status_code == 200

    figure, baseline = side_by_side(page, page_bare)
    yield Row(
        "console /runs/ after the same runs",
        figure * 1000,
        "ms",
        baseline=baseline * 1000,
        baseline_name="the same page, runs without candidate or victim rows",
        ratio_goal=1.5,
        note="not in the original goals: the page must not grow with the stored explanations",
    )


def side_by_side(figure, baseline, *, rounds: int = 3) -> tuple[float, float]:
    """Both calls timed in alternating rounds, the best round's median of each: on a machine
    other work keeps busy, load that comes and goes then weighs on both alike."""
    figures, baselines = [], []
    for _ in range(rounds):
        figures.append(timed(figure, runs=7))
        baselines.append(timed(baseline, runs=7))
    return min(figures), min(baselines)


def _store_big_runs(context) -> int:
    """Five finished quota runs on tenants of the bench tree, each with 10,000 explained
    candidates (real tasks of the tenant, written by ``record.store_candidates`` as a run's plan
    writes them) and its first 2,000 as victims. Returns the number of candidate rows."""
    from django.db import transaction
    from django.utils import timezone

    from preemption.explain import CandidateRecord
    from preemption.model import Reason
    from scheduler_admin.cluster.models import Allocation
    from scheduler_admin.enforcement.models import PreemptionRun, RunVictim
    from scheduler_admin.enforcement.record import store_candidates

    now = timezone.now()
    total = 0
    for index in range(BIG_RUNS):
        tenant = f"root.t{index + 1:02d}"
        tasks = list(
            Allocation.objects.filter(
                partition=context.partition, queue_path__startswith=tenant + "."
            )
            .order_by("external_id")
            .values_list("external_id", "queue_path", "node_name", "resources", "priority",
                         "created_at")[:CANDIDATES_PER_RUN]
        )  # fmt: skip
        with transaction.atomic():
            run = PreemptionRun.objects.create(
                **_run_fields(context.partition, tenant, now - timedelta(minutes=10 - index)),
                planned=True,
                outcome="satisfied",
                subject={"queue": tenant, "usage": {"vcore": 1_000_000}},
                targets={tenant: {"vcore": 400_000}},
                freed={"vcore": 300_000},
            )
            records = []
            for position, (task, queue, node, amounts, priority, created) in enumerate(tasks, 1):
                victim = position <= VICTIMS_PER_RUN
                records.append(
                    CandidateRecord(
                        candidate=task,
                        accepted=victim,
                        reason=Reason.VICTIM if victim else Reason.TARGET_MET,
                        detail="bench: " + ("taken" if victim else "target already met"),
                        position=position if victim else None,
                        rank=position,
                        queue=queue,
                        node=node,
                        resources=amounts,
                        priority=priority,
                        created_at=created,
                        remaining_before={queue: {"vcore": "1000"}},
                        remaining_after={queue: {"vcore": "900"}},
                    )
                )
            store_candidates(run, records)
            RunVictim.objects.bulk_create(
                RunVictim(
                    run=run, position=record.position, allocation_id=record.candidate,
                    queue_path=record.queue, node_name=record.node,
                    resources=dict(record.resources), preempted_at=now,
                )
                for record in records[:VICTIMS_PER_RUN]
            )  # fmt: skip
        total += len(records)
    return total


def _bare_partition_runs() -> None:
    """A small partition with five finished runs like the big ones, but nothing stored under
    them: the baseline of the same list."""
    from django.utils import timezone

    from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
    from scheduler_admin.enforcement.models import PreemptionRun
    from scheduler_admin.queues.models import Partition
    from scheduler_admin.queues.services import save_partition_config

    config = PartitionConfig(
        settings=PartitionSettings(name=BARE), queues=(QueueConfig.child_of(None, "root"),)
    )
    save_partition_config(config, actor=None, comment="bench")
    partition = Partition.objects.get(name=BARE)
    now = timezone.now()
    PreemptionRun.objects.bulk_create(
        PreemptionRun(
            **_run_fields(partition, f"root.t{index + 1:02d}", now - timedelta(minutes=10 - index)),
            planned=True,
            outcome="satisfied",
            subject={"queue": "root", "usage": {"vcore": 1_000_000}},
            targets={"root": {"vcore": 400_000}},
            freed={"vcore": 300_000},
        )
        for index in range(BIG_RUNS)
    )


def _run_fields(partition, queue: str, created: datetime) -> dict:
    return {
        "partition": partition,
        "policy": "quota",
        "queue_path": queue,
        "trigger": "quota_timer",
        "status": "finished",
        "created_at": created,
        "started_at": created,
        "finished_at": created + timedelta(seconds=30),
        "attempt": 1,
        "worker": "bench",
    }


# --------------------------------------------------------------------------------------------
# One sweep with 2,000 timers due
# --------------------------------------------------------------------------------------------


def sweep(context) -> Row:
    from django.db import connection

    from preemption import timers as engine_timers
    from scheduler_admin.cluster.adapters import load_cluster_state
    from scheduler_admin.enforcement import dispatch, runs
    from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer
    from scheduler_admin.enforcement.timers import as_engine_timer

    partition = context.partition
    due, blocked = _timer_queues(context)
    at = datetime.now(UTC)
    due_at = at + timedelta(minutes=2)
    timers = QuotaTimer.objects.bulk_create(
        QuotaTimer(
            partition=partition, queue_path=path, started_at=at, due_at=due_at,
            delay_seconds=120, revision_number=1,
        )
        for path in due
    )  # fmt: skip
    # Runs active on three groups when the sweep starts: their leaves' timers are deferred.
    active = PreemptionRun.objects.bulk_create(
        PreemptionRun(
            partition=partition, policy="quota", queue_path=path, trigger="quota_timer",
            status="running", created_at=at, started_at=at, attempt=1, worker="bench",
            lease_expires_at=at + timedelta(hours=1),
        )
        for path in blocked
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE enforcement_quotatimer")
        cursor.execute("ANALYZE enforcement_preemptionrun")

    # Baseline: the engine's decisions for the same timers on one loaded state.
    state = load_cluster_state(partition, running_runs=blocked)
    order = engine_timers.due_order(as_engine_timer(row) for row in timers)
    counts: dict[str, int] = {}
    for timer in order:
        decision = engine_timers.decide_due(state, timer)
        counts[decision] = counts.get(decision, 0) + 1

    def decide_all() -> None:
        for timer in order:
            engine_timers.decide_due(state, timer)

    baseline = timed(decide_all, runs=5)

    enqueued: list[int] = []
    real_enqueue = dispatch.enqueue_run
    dispatch.enqueue_run = enqueued.append  # the bench has no worker: the runs stay pending
    sweep_at = due_at + timedelta(seconds=1)
    times = []
    created: list[int] = []
    try:
        for _ in range(SWEEP_REPEATS):
            created.clear()
            times.append(once(lambda: created.extend(runs.sweep_due_quota_timers(sweep_at))))
            outcome = _outcome(timers)
            _reset(timers, created, at)
    finally:
        dispatch.enqueue_run = real_enqueue
        PreemptionRun.objects.filter(pk__in=[run.pk for run in active]).delete()
        QuotaTimer.objects.filter(pk__in=[timer.pk for timer in timers]).delete()
    expected = f"{counts.get('run', 0)} run, {counts.get('deferred', 0)} deferred, " + (
        f"{counts.get('not_needed', 0)} not needed"
    )
    return Row(
        f"one sweep with {len(timers):,} timers due",
        statistics.median(times),
        "s",
        baseline=baseline,
        baseline_name="decide_due for each timer on one loaded state",
        goal=2,
        note=f"engine on one state: {expected}; the sweep: {outcome}, {len(created)} runs "
        f"created (median of {SWEEP_REPEATS})",
    )


def _timer_queues(context) -> tuple[list[str], list[str]]:
    """2,000 distinct queues: every leaf over its max (they start runs), the groups above some
    of them (deferred behind the leaf's new run), every leaf of three groups that have an
    active run (deferred), and leaves within max up to 2,000 (not needed). Also returns the
    three groups with an active run."""
    from scheduler_admin.cluster.usage import leaf_usage

    partition, config = context.partition, context.config
    maxima = {queue.path: dict(queue.max) for queue in config.queues}
    usage = {row.queue: row.resources for row in leaf_usage(partition)}
    over = sorted(
        leaf
        for leaf in context.leaves
        if any(usage.get(leaf, {}).get(kind, 0) > limit for kind, limit in maxima[leaf].items())
    )
    blocked = ["root.t05.g03", "root.t06.g07", "root.t07.g11"]
    under_blocked = [leaf for leaf in context.leaves if leaf.rpartition(".")[0] in blocked]
    groups = sorted({leaf.rpartition(".")[0] for leaf in over if leaf.count(".") == 3})[:20]
    chosen = list(dict.fromkeys([*over, *groups, *under_blocked]))
    taken = set(chosen)
    for leaf in context.leaves:
        if len(chosen) >= TIMERS:
            break
        if leaf not in taken:
            chosen.append(leaf)
    return chosen[:TIMERS], blocked


def _outcome(timers) -> str:
    """How the sweep left the timers: counts by status, pending ones that were deferred apart."""
    from collections import Counter

    from scheduler_admin.enforcement.models import QuotaTimer

    counts = Counter(
        "deferred" if status == "pending" and deferred else status
        for status, deferred in QuotaTimer.objects.filter(
            pk__in=[timer.pk for timer in timers]
        ).values_list("status", "deferred_since")
    )
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))


def _reset(timers, created: list[int], since: datetime) -> None:
    """Put the timers back as they were before the sweep and delete what it wrote."""
    from scheduler_admin.audit.models import AuditEvent
    from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer

    PreemptionRun.objects.filter(pk__in=created).delete()
    QuotaTimer.objects.filter(pk__in=[timer.pk for timer in timers]).update(
        status="pending", ended_at=None, deferred_since=None
    )
    AuditEvent.objects.filter(object_type__in=["timer", "run"], created_at__gte=since).delete()
