"""The live loop end to end: real Celery worker and beat processes, PostgreSQL and Redis.

These are the acceptance tests of SPEC 4.1 "Timer" and SPEC 5 "Execution" as the cluster sees
them. Nothing is mocked, nothing runs eagerly and no clock is moved: the test process saves
config changes through the product's services and commits them (``transactional_db``), worker
and beat processes started with the compose commands (see ``LiveLoop``) do the rest in real
time, and the test
watches the database until the expected state appears (or the wait times out, with the
processes' logs in the failure message).

Celery traffic goes to a Redis database of these tests' own (``LIVE_LOOP_REDIS_DB``), emptied at
the start of every test, so a killed worker's unacknowledged message never leaks into another
test and the tests can run next to ``test_compose_stack`` (which uses
``processes.ISOLATED_REDIS_DB``).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import math
import re
import secrets
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from django.conf import settings
from django.utils import timezone

from preemption.model import Plan
from preemption.policies import plan_quota
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.adapters import load_cluster_state, queue_usage
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    EvictionStatus,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunStatus,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from scheduler_admin.system.beat import beat_name
from scheduler_admin.system.models import ProcessKind, WorkerHeartbeat
from tests.api.conftest import client_for
from tests.integration.test_sweep_races import TRIALS as RACE_TRIALS
from tests.integration.test_sweep_races import make_partition as make_race_partition
from tests.support.factories.cluster import ingest, one_node
from tests.support.factories.partitions import saved_partition
from tests.support.processes import (
    ManagedProcess,
    describe,
    flush_redis_db,
    isolated_redis_url,
    test_database_env,
    venv_executable,
    wait_until,
)
from tests.support.team import GB, TEAM_TASKS, task, team_config

pytestmark = pytest.mark.redis

#: Redis database of these tests (``test_compose_stack`` uses ``ISOLATED_REDIS_DB``, 14).
LIVE_LOOP_REDIS_DB = 13
#: Period of beat's ``sweep-due-quota-timers`` entry (``scheduler_admin.celery.BEAT_SCHEDULE``).
SWEEP_PERIOD = 5.0
#: What a sweep, a short run and the processes' reaction time may add on a loaded 2-core machine.
SLACK = 3.0
TASK_PREFIX = "scheduler_admin.enforcement.tasks."
HOSTNAME = socket.gethostname()
PARTITION = "default"


# --- Cluster fixtures ----------------------------------------------------------------------------

BATCH_CONFIG = """
partitions:
  - name: default
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: batch
            resources: {max: {memory: 200G}}
            properties: {quota.preemption.delay: 1s}
"""


#: batch uses 80G in eight 10G tasks; lowering its max to 25G takes six of them, newest first.
BATCH_TASKS = [task(f"batch{i}", "root.batch", 10, i) for i in range(1, 9)]


def make_partition(config_yaml: str, allocations: Sequence[Mapping[str, Any]]) -> Partition:
    """Save the config and push the cluster state through the product's services.

    Creating a queue with a max is a change of its max (from unlimited), so the first save
    starts a timer on every such queue; an admin cancels them, so each test starts from a
    partition without timers and its own change is the only one that counts.
    """
    partition = saved_partition(config_yaml)
    ingest(partition, list(allocations), nodes=one_node("10000G"))
    # A new partition's queues start no quota timer (nothing to enforce yet).
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()
    return partition


def set_max(path: str, memory_gb: int) -> None:
    """An admin saves a new max for one queue (the timer starts, resets or stops with it)."""
    version = Queue.objects.get(partition__name=PARTITION, path=path).version
    config_services.update_queue(
        PARTITION, path, version=version, actor=None, comment=f"max {memory_gb}G",
        max={"memory": memory_gb * GB},
    )  # fmt: skip


def pending_timer(path: str) -> QuotaTimer:
    return QuotaTimer.objects.get(queue_path=path, status=TimerStatus.PENDING)


def engine_plan(path: str) -> Plan:
    """What the engine plans for the queue on the state as saved now (the run must match it)."""
    partition = Partition.objects.get(name=PARTITION)
    return plan_quota(load_cluster_state(partition), path, timezone.now())


def victims_of(run: PreemptionRun) -> list[str]:
    return list(run.victims.order_by("position").values_list("allocation_id", flat=True))


def seconds(delta: timedelta) -> float:
    return delta.total_seconds()


# --- Processes -----------------------------------------------------------------------------------


def logged_ids(process: ManagedProcess, task_name: str, event: str) -> list[str]:
    """Ids of the ``task_name`` tasks whose ``Task <task>[<id>] <event>`` line (``received``,
    ``succeeded``) is in the process's log, in log order. A task discarded because it expired
    is logged ``received`` but never ``succeeded``."""
    pattern = rf"{re.escape(TASK_PREFIX + task_name)}\[([0-9a-f-]+)\] {event}"
    return re.findall(pattern, process.log_text())


def task_logged(processes: Sequence[ManagedProcess], task_id: str, event: str) -> list[str]:
    """Names of the processes whose log says task ``task_id`` was ``received``/``succeeded``."""
    needle = re.compile(rf"\[{re.escape(task_id)}\] {event}")
    return [process.name for process in processes if needle.search(process.log_text())]


class LiveLoop:
    """Worker and beat processes of one test, sharing its database and Redis database.

    Workers are the compose ``worker`` command with a node name of their own (``-n``) and the
    concurrency the test asks for (``--without-mingle --without-gossip`` only save a second of
    start-up: no test relies on workers talking to each other). Beat keeps its schedule file in
    the test's ``tmp_path``, so a restarted beat continues the same schedule, as the ``beat-var``
    volume does in compose. Tasks the test sends itself go through a Celery app of its own bound
    to the same Redis database.
    """

    def __init__(self, redis_url: str, tmp_path: Path) -> None:
        self.redis_url = redis_url
        self.log_dir = tmp_path / "logs"
        self.schedule = tmp_path / "celerybeat-schedule"
        self.processes: list[ManagedProcess] = []
        self.sender = Celery("live-loop-tests", broker=redis_url, set_as_current=False)
        self.sender.conf.update(
            task_serializer="json", accept_content=["json"], broker_connection_retry_on_startup=True
        )

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return test_database_env(extra, redis_url=self.redis_url, beat_schedule_file=self.schedule)

    def worker(
        self,
        name: str,
        *,
        concurrency: int = 2,
        env: Mapping[str, str] | None = None,
        wait: bool = True,
    ) -> ManagedProcess:
        """Start a worker called ``<name>@<host>`` and wait until it consumes (``wait=False``:
        the caller waits with ``wait_started``, after starting other processes meanwhile)."""
        args = [
            venv_executable("celery"), "-A", "scheduler_admin", "worker", "--loglevel", "INFO",
            "--concurrency", str(concurrency), "-n", f"{name}@%h",
            "--without-mingle", "--without-gossip",
        ]  # fmt: skip
        process = self._start(name, args, env)
        if wait:
            self.wait_started(process)
        return process

    def beat(self, name: str = "beat", *, wait: bool = True) -> ManagedProcess:
        args = [
            venv_executable("celery"), "-A", "scheduler_admin", "beat", "--loglevel", "INFO",
            "--schedule", str(self.schedule),
        ]  # fmt: skip
        process = self._start(name, args, None)
        if wait:
            self.wait_started(process)
        return process

    def wait_started(self, process: ManagedProcess) -> None:
        """Until a worker consumes (it logged ``<name>@<host> ready.``) or beat has started."""
        is_beat = process.args[3] == "beat"
        done = "beat: Starting..." if is_beat else f"{process.name}@{HOSTNAME} ready."
        wait_until(
            lambda: done in process.log_text(),
            45,
            message=f"{process.name} never {'started' if is_beat else 'became ready'}",
            watch=[process],
        )

    def _start(self, name: str, args: list[str], env: Mapping[str, str] | None) -> ManagedProcess:
        process = ManagedProcess(name, args, env=self.env(env), log_dir=self.log_dir)
        self.processes.append(process)
        return process.start()

    def send(self, task_name: str, *args: object) -> str:
        """Publish a task as beat or the product would (JSON, ids only); returns its id."""
        return self.sender.send_task(TASK_PREFIX + task_name, args=list(args)).id

    def stop(self, processes: Sequence[ManagedProcess]) -> None:
        """SIGTERM them all at once (like ``docker compose stop``) and wait for each group."""
        for process in processes:
            if process.returncode is None:
                process.terminate()
        for process in processes:
            process.wait_stopped()
            process.stop()  # kills anything its leader left behind in the group

    def running(self) -> list[ManagedProcess]:
        return [process for process in self.processes if process.returncode is None]

    def close(self) -> None:
        try:
            self.stop(self.processes)
        finally:
            self.sender.close()
        for process in self.processes:
            wait_until(
                lambda process=process: not process.group_members(),
                5,
                message=f"{process.name} left processes behind in its group {process.pid}",
            )


@pytest.fixture
def live(transactional_db: None, tmp_path: Path) -> Iterator[LiveLoop]:
    """The processes' playground; every process it started is stopped (its group emptied)
    before the test database is flushed."""
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    url = isolated_redis_url(settings.REDIS_URL, LIVE_LOOP_REDIS_DB)
    flush_redis_db(url)
    loop = LiveLoop(url, tmp_path)
    try:
        yield loop
    finally:
        loop.close()


def wait_for_finished_run(
    live: LiveLoop, timer: QuotaTimer, timeout: float, watch: Sequence[ManagedProcess] = ()
) -> PreemptionRun:
    wait_until(
        lambda: PreemptionRun.objects.filter(timer=timer, status=RunStatus.FINISHED).exists(),
        timeout,
        message=f"no finished run for timer {timer.pk} of {timer.queue_path}",
        watch=watch or live.running(),
    )
    return PreemptionRun.objects.get(timer=timer)


def wait_for_time(moment: datetime, message: str) -> None:
    wait_until(
        lambda: timezone.now() >= moment,
        max(seconds(moment - timezone.now()), 0) + 5,
        interval=0.05,
        message=message,
    )


def wait_for_sweep_after(worker: ManagedProcess, moment: datetime) -> None:
    """Wait until ``moment`` has passed and then until a sweep that the worker received after
    it has finished."""
    wait_for_time(moment, "the moment never came")
    earlier = set(logged_ids(worker, "sweep_due_quota_timers", "received"))
    wait_until(
        lambda: bool(set(logged_ids(worker, "sweep_due_quota_timers", "succeeded")) - earlier),
        SWEEP_PERIOD + SLACK + 5,
        message="no sweep ran after the moment",
        watch=[worker],
    )


# --- 1. Lowering a quota, resetting and cancelling its timer --------------------------------------


def test_lowering_a_quota_preempts_the_planned_victims_within_one_sweep_after_the_delay(
    live: LiveLoop,
) -> None:
    """With beat sweeping every 5 s, a quota lowered with a 2 s delay is enforced no earlier
    than ``due_at`` and at most one sweep period (plus slack) after it, and the run preempts
    exactly the victims the engine plans for the state right after the change."""
    make_partition(team_config("2s"), TEAM_TASKS)
    live.worker("worker")
    live.beat()

    set_max("root.team", 100)
    timer = pending_timer("root.team")
    expected = engine_plan("root.team")
    assert list(expected.victims) == ["a2", "b2", "b1"]  # the scenario needs preemption
    assert timer.due_at == timer.started_at + timedelta(seconds=2)

    run = wait_for_finished_run(live, timer, 2 + SWEEP_PERIOD + SLACK + 10)
    lag = seconds(run.finished_at - timer.due_at)
    assert run.created_at >= timer.due_at, "the run started before the delay had passed"
    assert lag < SWEEP_PERIOD + SLACK, f"run finished {lag:.2f} s after due_at"
    assert victims_of(run) == list(expected.victims)
    assert run.outcome == str(expected.outcome)
    assert run.targets == {path: dict(amounts) for path, amounts in expected.targets.items()}
    assert sorted(
        EvictionOrder.objects.filter(run=run).values_list("allocation_id", flat=True)
    ) == (sorted(expected.victims))
    assert set(
        Allocation.objects.filter(state=AllocationState.PREEMPTING).values_list(
            "external_id", flat=True
        )
    ) == set(expected.victims)
    timer.refresh_from_db()
    assert timer.status == TimerStatus.FIRED
    assert PreemptionRun.objects.count() == 1


def test_a_second_change_before_the_deadline_resets_the_timer_so_only_the_new_one_runs(
    live: LiveLoop,
) -> None:
    """A second lowering 1 s after the first (its 2 s delay not yet over) replaces the pending
    timer by one due 2 s after the second change: the first timer never runs and exactly one
    run, of the second timer, enforces the latest max no earlier than its due_at."""
    make_partition(team_config("2s"), TEAM_TASKS)
    live.worker("worker")
    live.beat()

    set_max("root.team", 100)
    first = pending_timer("root.team")
    time.sleep(1.0)  # the admin changes their mind a second later
    set_max("root.team", 90)
    second = pending_timer("root.team")
    assert timezone.now() < first.due_at, "the second change came too late to test a reset"
    first.refresh_from_db()
    assert first.status == TimerStatus.SUPERSEDED
    assert second.started_at >= first.started_at + timedelta(seconds=1)
    saved_at = ConfigRevision.objects.order_by("-number").values_list("created_at", flat=True)[0]
    assert second.started_at == saved_at
    assert second.due_at == saved_at + timedelta(seconds=2)  # reset, not added to
    expected = engine_plan("root.team")
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_RESET).count() == 1

    run = wait_for_finished_run(live, second, 3 + SWEEP_PERIOD + SLACK + 10)
    assert list(PreemptionRun.objects.values_list("timer_id", flat=True)) == [second.pk]
    assert not first.runs.exists()
    assert run.created_at >= second.due_at
    assert seconds(run.finished_at - second.due_at) < SWEEP_PERIOD + SLACK
    assert victims_of(run) == list(expected.victims)
    assert AuditEvent.objects.filter(kind=AuditKind.RUN_STARTED).count() == 1
    first.refresh_from_db()
    assert first.status == TimerStatus.SUPERSEDED


def test_a_pure_increase_before_the_deadline_cancels_the_timer_and_nothing_runs(
    live: LiveLoop,
) -> None:
    """Raising the max back up (still below the usage) before the delay is over cancels the
    pending timer: after due_at and a sweep that ran after it, there is no run at all."""
    partition = make_partition(team_config("2s"), TEAM_TASKS)
    worker = live.worker("worker")
    live.beat()

    set_max("root.team", 100)
    timer = pending_timer("root.team")
    set_max("root.team", 150)
    assert timezone.now() < timer.due_at
    assert queue_usage(partition)["root.team"]["memory"] > 150 * GB  # still over max
    timer.refresh_from_db()
    assert timer.status == TimerStatus.CANCELLED
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()

    wait_for_sweep_after(worker, timer.due_at)
    assert not PreemptionRun.objects.exists()
    assert set(QuotaTimer.objects.values_list("status", flat=True)) == {TimerStatus.CANCELLED}
    assert not Allocation.objects.exclude(state=AllocationState.RUNNING).exists()


def test_victims_with_the_longest_ids_the_api_accepts_are_preempted_and_audited_in_full(
    live: LiveLoop,
) -> None:
    """Kubernetes names reach 253 characters, and so may every id ``cluster-state`` accepts:
    such tasks, pushed over the REST API, are preempted by the real worker, and their eviction
    orders and audit events carry the whole id (a column shorter than the edge's limit made the
    run fail on every retry and block its queue for ever)."""
    make_partition(team_config("1s"), [])
    operator = client_for("operator")
    long_ids = [f"{n}-" + "x" * 251 for n in range(3)]
    pushed = operator.post(
        f"/api/v1/partitions/{PARTITION}/cluster-state",
        {
            "allocations": [
                {**task(long_id, "root.team.b", 40, n), "app": "a" * 253, "job": "j" * 253,
                 "user": "u" * 253, "pdb": "p" * 253}
                for n, long_id in enumerate(long_ids)
            ]
        },
        format="json",
    )  # fmt: skip
    assert pushed.status_code == 200, pushed.content
    assert all(len(long_id) == 253 for long_id in long_ids)
    live.worker("worker")
    live.beat()

    set_max("root.team", 50)  # 120G running: the two newest tasks go
    run = wait_for_finished_run(live, pending_timer("root.team"), 1 + SWEEP_PERIOD + SLACK + 10)
    assert run.outcome == "complete" and run.error == ""
    assert victims_of(run) == [long_ids[2], long_ids[1]]
    assert sorted(EvictionOrder.objects.values_list("allocation_id", flat=True)) == sorted(
        long_ids[1:]
    )
    preempted = AuditEvent.objects.filter(kind=AuditKind.VICTIM_PREEMPTED)
    assert sorted(preempted.values_list("object_id", flat=True)) == sorted(long_ids[1:])


# --- 2. Timers survive restarts -------------------------------------------------------------------


def test_a_timer_that_fell_due_while_worker_and_beat_were_down_runs_on_the_first_sweep(
    live: LiveLoop,
) -> None:
    """The timer is stored, not held by a process: worker and beat stop before its due_at and
    come back after it passed; the restarted beat's first sweep runs it at once, with the
    original due_at."""
    # 15 s: stopping a worker and beat (warm shutdown) took over 6 s on a loaded CI machine; the
    # test waits for the due time either way, so the margin costs only what the stop did not use.
    make_partition(team_config("15s"), TEAM_TASKS)
    before = [live.worker("worker"), live.beat("beat")]
    set_max("root.team", 100)
    timer = pending_timer("root.team")
    due_at = timer.due_at

    live.stop(before)
    assert timezone.now() < due_at, "worker and beat took too long to stop"
    wait_for_time(due_at + timedelta(seconds=1), "the timer never fell due")
    timer.refresh_from_db()
    assert (timer.status, timer.due_at) == (TimerStatus.PENDING, due_at)
    assert not PreemptionRun.objects.exists()

    worker = live.worker("worker-restarted")
    restarted_at = timezone.now()
    live.beat("beat-restarted")
    # Beat records its own heartbeat right after its first tick has sent what was due (and then
    # every 10 s): that row, not the moment this test noticed beat had started, is when the
    # restarted beat's first sweep went out. On a loaded machine beat's start-up alone may take
    # seconds, which a delay measured from the test's side wrongly counted.
    first_tick = beat_first_tick_after(restarted_at, watch=live.running())
    run = wait_for_finished_run(live, timer, SWEEP_PERIOD + SLACK + 10)
    wait_until(
        lambda: logged_ids(worker, "sweep_due_quota_timers", "succeeded"),
        5,
        message="the sweep that started the run never finished",
        watch=[worker],
    )
    assert run.created_at >= due_at
    # Beat's schedule file says the sweep is overdue, so it sweeps as soon as it is up: the run is
    # started by the first sweep the restarted worker ran (no sweep finished before the line
    # announcing the run), and before beat's next sweep was due, SWEEP_PERIOD after its first.
    log = worker.log_text()
    announced = log.find(f"quota timer sweep started run(s) {run.pk}")
    assert announced >= 0, f"no sweep announced run {run.pk}\n{describe(live.running())}"
    earlier = re.findall(
        rf"{re.escape(TASK_PREFIX)}sweep_due_quota_timers\[[0-9a-f-]+\] succeeded", log[:announced]
    )
    assert not earlier, f"{len(earlier)} sweeps ran before the run\n{describe(live.running())}"
    delay = seconds(run.created_at - first_tick)
    assert delay < SWEEP_PERIOD, f"the run started {delay:.2f} s after beat's first tick"
    timer.refresh_from_db()
    assert (timer.status, timer.due_at) == (TimerStatus.FIRED, due_at)


def beat_first_tick_after(moment: datetime, watch: Sequence[ManagedProcess]) -> datetime:
    """When a beat started after ``moment`` first ticked: its heartbeat row's first ``last_seen``
    after ``moment`` (``system.beat.HeartbeatScheduler`` writes it right after sending what the
    first tick found due, and again only 10 s later)."""
    beat = WorkerHeartbeat.objects.filter(kind=ProcessKind.BEAT, worker=beat_name())

    def ticked() -> bool:
        return beat.filter(last_seen__gt=moment).exists()

    wait_until(ticked, 30, interval=0.05, message="beat never recorded a tick", watch=watch)
    return beat.get().last_seen


def test_a_timer_still_pending_after_a_restart_runs_no_earlier_than_its_due_at(
    live: LiveLoop,
) -> None:
    """Worker and beat stop and come back before the timer's due_at: the timer keeps its
    original due_at, and the run starts no earlier than it (and within one sweep after it).

    The delay is 12 s, or more where starting worker and beat took long (a loaded machine):
    three times that start, so the stop and the second start fit before due_at."""
    started = time.monotonic()
    before = [live.worker("worker"), live.beat("beat")]
    delay = max(12, math.ceil(3 * (time.monotonic() - started)))
    make_partition(team_config(f"{delay}s"), TEAM_TASKS)
    set_max("root.team", 100)
    timer = pending_timer("root.team")
    due_at = timer.due_at

    live.stop(before)
    live.worker("worker-restarted")
    live.beat("beat-restarted")
    assert timezone.now() < due_at, "the restart took too long to come back before due_at"
    timer.refresh_from_db()
    assert (timer.status, timer.due_at) == (TimerStatus.PENDING, due_at)

    run = wait_for_finished_run(live, timer, seconds(due_at - timezone.now()) + SWEEP_PERIOD + 15)
    assert run.created_at >= due_at
    assert run.started_at >= due_at
    assert seconds(run.finished_at - due_at) < SWEEP_PERIOD + SLACK
    timer.refresh_from_db()
    assert (timer.status, timer.due_at) == (TimerStatus.FIRED, due_at)
    assert PreemptionRun.objects.count() == 1


# --- 3. Concurrent sweeps -------------------------------------------------------------------------

RACE_QUEUES = [f"root.race.q{i:02d}" for i in range(12)]
RACE_ROUNDS = 5
RACE_TASKS_PER_QUEUE = RACE_ROUNDS + 1


def race_config() -> str:
    leaves = "".join(
        f"""
              - name: {path.rsplit(".", 1)[1]}
                resources: {{max: {{memory: 1000G}}}}
                properties: {{quota.preemption.delay: 1s}}"""
        for path in RACE_QUEUES
    )
    return f"""
partitions:
  - name: default
    preemption: {{enabled: true, quotapreemptionenabled: true}}
    queues:
      - name: root
        queues:
          - name: race
            queues:{leaves}
"""


def lower_race_queues(memory_gb: int) -> None:
    """One saved change lowering every race queue's max (one timer each, all due together)."""
    config = Partition.objects.get(name=PARTITION).current_config()
    for path in RACE_QUEUES:
        queue = config.queue(path)
        assert queue is not None
        config = config.with_queue(replace(queue, max={"memory": memory_gb * GB}))
    config_services.save_partition_config(config, actor=None, comment=f"race {memory_gb}G")


def test_two_workers_sweeping_at_the_same_moment_start_exactly_one_run_per_due_timer(
    live: LiveLoop,
) -> None:
    """Two workers (no beat) receive a sweep at the same moment, round after round, each round
    with a fresh due timer on every one of 12 queues (12 x 5 = 60 independent races): every due
    timer fires once and gets exactly one run, never two."""
    make_partition(
        race_config(),
        [
            task(f"{path}-t{n}", path, 10, n)
            for path in RACE_QUEUES
            for n in range(RACE_TASKS_PER_QUEUE)
        ],
    )
    workers = [
        live.worker("sweeper-a", concurrency=1),
        live.worker("sweeper-b", concurrency=1),
    ]
    races = 0
    for round_number in range(1, RACE_ROUNDS + 1):
        # Usage is 10G per task still running; 5G under it, so each round takes one task.
        lower_race_queues(10 * (RACE_TASKS_PER_QUEUE - round_number + 1) - 5)
        timers = list(QuotaTimer.objects.filter(status=TimerStatus.PENDING))
        assert sorted(timer.queue_path for timer in timers) == RACE_QUEUES
        wait_for_time(max(timer.due_at for timer in timers), "the timers never fell due")

        sweeps = [live.send("sweep_due_quota_timers"), live.send("sweep_due_quota_timers")]
        wait_until(
            lambda sweeps=sweeps: all(task_logged(workers, s, "succeeded") for s in sweeps),
            30,
            message=f"round {round_number}: the sweeps did not both finish",
            watch=workers,
        )
        swept_by = sorted(
            name for sweep in sweeps for name in task_logged(workers, sweep, "received")
        )
        assert swept_by == ["sweeper-a", "sweeper-b"], "the two sweeps did not run side by side"
        wait_until(
            lambda timers=timers: (
                PreemptionRun.objects.filter(timer__in=timers, status=RunStatus.FINISHED).count()
                >= len(timers)
            ),
            30,
            message=f"round {round_number}: not every timer's run finished",
            watch=workers,
        )
        for timer in timers:
            timer.refresh_from_db()
            runs = list(PreemptionRun.objects.filter(timer=timer))
            assert len(runs) == 1, f"round {round_number}: {timer.queue_path} got {len(runs)} runs"
            assert timer.status == TimerStatus.FIRED
            started = AuditEvent.objects.filter(kind=AuditKind.RUN_STARTED, data__timer=timer.pk)
            assert started.count() == 1
            assert len(victims_of(runs[0])) == 1
            races += 1
        for path in RACE_QUEUES:
            assert PreemptionRun.objects.filter(queue_path=path).count() == round_number
    assert races >= 50
    assert PreemptionRun.objects.count() == races
    assert EvictionOrder.objects.count() == races  # every run preempted its one task, once


def test_two_workers_sweeping_a_leaf_and_its_parent_at_once_preempt_what_one_sweeper_does(
    live: LiveLoop,
) -> None:
    """Two beats (a double deployment): two worker processes receive a sweep at the same moment
    while a leaf and its parent are both due, 10 times over. One sweeper alone runs the leaf,
    then the parent on what the leaf's run left: 6 of the 16 tasks. The two sweepers must do
    exactly that; and, read afterwards from the runs' own times, no two related runs were ever
    active at once (``tests/integration/test_sweep_races.py`` has the same race in threads)."""
    workers = [
        live.worker("sweeper-a", concurrency=2),
        live.worker("sweeper-b", concurrency=2),
    ]
    for trial in range(RACE_TRIALS):
        name = f"beats{trial}"
        make_race_partition(name)  # both timers are already due
        first = [live.send("sweep_due_quota_timers"), live.send("sweep_due_quota_timers")]
        wait_until(
            lambda first=first: all(task_logged(workers, s, "succeeded") for s in first),
            30,
            message=f"trial {trial}: the two sweeps did not both finish",
            watch=workers,
        )

        def settled(name: str = name) -> bool:
            pending = QuotaTimer.objects.filter(partition__name=name, status=TimerStatus.PENDING)
            active = PreemptionRun.objects.filter(
                partition__name=name, status__in=[RunStatus.PENDING, RunStatus.RUNNING]
            )
            if pending.exists() or active.exists():
                live.send("sweep_due_quota_timers")  # the next beat tick
                return False
            return True

        wait_until(settled, 60, interval=1.0, message=f"trial {trial} never settled",
                   watch=workers)  # fmt: skip
        trial_runs = list(
            PreemptionRun.objects.filter(partition__name=name).order_by("created_at", "pk")
        )
        assert [(r.queue_path, r.outcome) for r in trial_runs] == [
            ("root.team.b", "complete"),
            ("root.team", "complete"),
        ], f"trial {trial}"
        for one, other in itertools.combinations(trial_runs, 2):
            overlap = one.created_at < other.finished_at and other.created_at < one.finished_at
            assert not overlap, f"trial {trial}: runs {one.pk} and {other.pk} overlapped"
            # The same, by the order the audit rows were written (no clock involved): the later
            # run started after the earlier one had finished.
            events = AuditEvent.objects.filter(object_type="run")
            finished = events.get(kind=AuditKind.RUN_FINISHED, object_id=str(one.pk)).pk
            started = events.get(kind=AuditKind.RUN_STARTED, object_id=str(other.pk)).pk
            assert started > finished, f"trial {trial}: {other.pk} started before {one.pk} ended"
        assert EvictionOrder.objects.filter(partition__name=name).count() == 6, f"trial {trial}"


# --- 4. A worker dies in the middle of a run ----------------------------------------------------


def test_a_run_whose_worker_is_killed_mid_run_is_resumed_by_the_reaper_on_another_worker(
    live: LiveLoop,
) -> None:
    """Worker A is SIGKILLed after preempting some victims; once its 3 s lease expires the
    reaper hands the run to worker B, which finishes the stored victim list under a new fence
    token: every planned victim is preempted exactly once, the audit trail tells the whole
    story, and nothing is written under A's stale token after the takeover."""
    make_partition(BATCH_CONFIG, BATCH_TASKS)
    env = {"RUN_LEASE_SECONDS": "3", "EVICTION_PACING_SECONDS": "1"}
    workers = {
        f"{name}@{HOSTNAME}": live.worker(name, concurrency=1, env=env)
        for name in ("worker-a", "worker-b")
    }
    set_max("root.batch", 25)
    timer = pending_timer("root.batch")
    planned = list(engine_plan("root.batch").victims)
    assert planned == [f"batch{i}" for i in (8, 7, 6, 5, 4, 3)]

    wait_for_time(timer.due_at, "the timer never fell due")
    live.send("sweep_due_quota_timers")
    wait_until(
        lambda: RunVictim.objects.filter(run__timer=timer, preempted_at__isnull=False).count() >= 2,
        20,
        message="the run never preempted two victims",
        watch=list(workers.values()),
    )
    run = PreemptionRun.objects.get(timer=timer)
    doomed = workers[run.worker]
    doomed.kill()
    wait_until(lambda: not doomed.group_members(), 5, message="the killed worker left processes")
    [survivor_name] = [name for name in workers if name != run.worker]
    survivor = workers[survivor_name]
    run.refresh_from_db()
    preempted_before = run.victims.filter(preempted_at__isnull=False).count()
    assert run.status == RunStatus.RUNNING
    assert 2 <= preempted_before < len(planned), "the worker was not killed in the middle"
    old_token = run.fence_token

    wait_for_time(run.lease_expires_at + timedelta(milliseconds=100), "the lease never expired")
    live.send("reap_stale_runs")
    run = wait_for_finished_run(live, timer, 20, watch=[survivor])

    assert run.attempt == 2 and run.worker == survivor_name
    assert run.fence_token == old_token + 1
    assert QueueLock.objects.get(queue_path="root.batch").token == run.fence_token
    assert victims_of(run) == planned
    assert not run.victims.filter(preempted_at__isnull=True).exists()
    orders = Counter(EvictionOrder.objects.values_list("allocation_id", flat=True))
    assert orders == Counter(planned)

    events = list(
        AuditEvent.objects.filter(data__run=run.pk)
        .order_by("id")
        .values_list("kind", "object_id", "data")
    )
    kinds = [kind for kind, _, _ in events]
    after = len(planned) - preempted_before
    assert kinds == (
        [AuditKind.RUN_STARTED, AuditKind.RUN_PLANNED]
        + [AuditKind.VICTIM_PREEMPTED] * preempted_before
        + [AuditKind.RUN_RESUMED]
        + [AuditKind.VICTIM_PREEMPTED] * after
        + [AuditKind.RUN_FINISHED]
    )
    preempted = [obj for kind, obj, _ in events if kind == AuditKind.VICTIM_PREEMPTED]
    assert preempted == planned  # each victim once, in the planned order
    takeover = kinds.index(AuditKind.RUN_RESUMED)
    tokens_before = {data["fence_token"] for _, _, data in events[1:takeover]}
    tokens_after = {data["fence_token"] for _, _, data in events[takeover:]}
    assert tokens_before == {old_token}
    assert tokens_after == {run.fence_token}, "something was written under the stale token"
    assert events[takeover][2]["attempt"] == 2


# --- 5. Signed, retried, idempotent webhook delivery ----------------------------------------------


class WebhookReceiver:
    """The cluster's side of eviction webhooks, on loopback in a thread of the test process.

    It checks every request's signature, answers HTTP 500 to the first ``failures`` deliveries
    of each order and 200 afterwards, and records the ``Idempotency-Key`` of every 2xx answer,
    so a test can tell how often each order was taken.
    """

    path = "/evictions"

    def __init__(self, secret: str, failures: int = 2) -> None:
        self.secret = secret.encode()
        self.failures = failures
        self.lock = threading.Lock()
        self.attempts: dict[str, list[float]] = defaultdict(list)
        self.acknowledged: list[str] = []
        self.problems: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def receive(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> int:
        key = headers.get("Idempotency-Key", "")
        signature = headers.get("X-Scheduler-Signature", "")
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        with self.lock:
            if (method, path) != ("POST", self.path):
                self.problems.append(f"{method} {path}")
                return 404
            if not hmac.compare_digest(signature.encode(), expected.encode()):
                self.problems.append(f"bad signature {signature!r} for key {key!r}")
                return 401
            try:
                payload = json.loads(body)
            except ValueError:
                self.problems.append(f"body is not JSON: {body!r}")
                return 400
            if str(payload.get("order_id")) != key:
                self.problems.append(f"Idempotency-Key {key!r} is not order {payload!r}")
                return 400
            self.attempts[key].append(time.time())
            if len(self.attempts[key]) <= self.failures:
                return 500
            self.acknowledged.append(key)
            return 200

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = receiver.receive(self.command, self.path, self.headers, body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = do_PUT = _answer  # http.server calls do_<METHOD>

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the receiver keeps its own record

        return Handler


def keep_sending_until(
    live: LiveLoop,
    task_name: str,
    done: Callable[[], bool],
    timeout: float,
    watch: Sequence[ManagedProcess],
) -> list[str]:
    """Send the task every half second until ``done()``; returns the ids sent."""
    sent: list[str] = []

    def send_and_check() -> bool:
        if done():
            return True
        sent.append(live.send(task_name))
        return False

    wait_until(send_and_check, timeout, interval=0.5, message=f"{task_name}: not done", watch=watch)
    return sent


def test_webhook_deliveries_that_fail_twice_are_retried_with_backoff_and_taken_once(
    live: LiveLoop,
) -> None:
    """A receiver answering HTTP 500 to the first two deliveries of every order gets each order
    a third time after 1 s then 2 s of backoff, correctly signed, and acknowledges each exactly
    once; every order ends ``acknowledged`` and its task ``released``."""
    secret = secrets.token_hex(16)
    with WebhookReceiver(secret) as receiver:
        make_partition(BATCH_CONFIG, BATCH_TASKS)
        worker = live.worker(
            "worker",
            concurrency=2,
            env={"EVICTION_WEBHOOK_URL": receiver.url, "EVICTION_WEBHOOK_SECRET": secret},
        )
        set_max("root.batch", 25)
        timer = pending_timer("root.batch")
        planned = list(engine_plan("root.batch").victims)
        wait_for_time(timer.due_at, "the timer never fell due")
        live.send("sweep_due_quota_timers")
        run = wait_for_finished_run(live, timer, 15)
        orders = dict(EvictionOrder.objects.filter(run=run).values_list("pk", "allocation_id"))
        assert sorted(orders.values()) == sorted(planned)

        sent = keep_sending_until(
            live,
            "deliver_eviction_webhooks",
            lambda: not EvictionOrder.objects.filter(status=EvictionStatus.PENDING).exists(),
            30,
            watch=[worker],
        )
        # Let every delivery task already sent finish, so a duplicate would have shown up.
        wait_until(
            lambda: set(sent) <= set(logged_ids(worker, "deliver_eviction_webhooks", "succeeded")),
            15,
            message="delivery tasks still running",
            watch=[worker],
        )

    assert receiver.problems == []
    assert Counter(receiver.acknowledged) == Counter(str(pk) for pk in orders)
    for key, times in receiver.attempts.items():
        assert len(times) == 3, f"order {key} was delivered {len(times)} times"
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert gaps[0] >= 1 - 0.05 and gaps[1] >= 2 - 0.05, f"order {key}: retried after {gaps}"
    for order in EvictionOrder.objects.all():
        assert order.status == EvictionStatus.ACKNOWLEDGED
        assert order.acknowledged_by.endswith("(webhook)")
        assert (order.webhook_attempts, order.last_error) == (2, "HTTP 500")
    assert set(
        Allocation.objects.filter(state=AllocationState.RELEASED).values_list(
            "external_id", flat=True
        )
    ) == set(planned)
    assert AuditEvent.objects.filter(kind=AuditKind.EVICTION_DELIVERY_FAILED).count() == 2 * len(
        orders
    )
    assert AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).count() == len(orders)
