"""Aborts, acknowledgements and raised maxes racing a run that a real Celery worker executes,
each through the path an admin or the cluster's agent takes: HTTP to gunicorn, token
authentication, the view's checks and the in-write authorization (SPEC 5: "An admin's abort
takes effect before the next victim, whatever the run is doing"; "A run stops when it is no
longer needed").

The stack is the compose ``web`` and ``worker`` commands on the test database, started once for
the module and shared by every trial (a worker at its default settings: chunks of
``RUN_EVICTION_BATCH`` = 500 victims). Each trial has a partition of its own: a quota lowered
so that the run has 1,000 or 2,000 victims; the test creates the run with the product's sweep
and hands it to the worker, then races the request against it. What "no victim after the
answer" means here: the eviction orders of the run counted right after the request answered
are all the run ever gets, once the worker is done with the task (its ``succeeded`` line).

Before the lock order (``scheduler_admin.base.lock_order``) an abort locked the partition row, then
the run's; the worker's chunk held the run's row and needed the partition row for its eviction
orders (their foreign key): PostgreSQL killed one of them, the admin got a 500 and the run went
on evicting every victim left. A raised max was never looked at again: the run evicted them all.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from celery import Celery
from django.conf import settings
from django.utils import timezone

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunStatus
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Queue
from tests.support.compose import CONTAINER_BIND, load_compose, native_command, service
from tests.support.factories.cluster import ingest, one_node
from tests.support.factories.partitions import saved_partition
from tests.support.factories.users import token_key, user_with_role
from tests.support.processes import (
    ManagedProcess,
    describe,
    flush_redis_db,
    free_port,
    isolated_redis_url,
    test_database_env,
    wait_until,
)
from tests.support.racing import release_together

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]

#: Redis database of this module's worker (others: 4, 11, 12, 13, 14).
RACE_REDIS_DB = 10
TASK = "scheduler_admin.enforcement.tasks.execute_run"
#: Tasks the queue keeps (within its lowered max) besides the victims.
KEPT = 10
#: The queue's max before and after the lowering, in GiB (each task uses 1 GiB).
HIGH_MAX_GI = 100_000
#: How long one run may take on a loaded 2-core machine before a trial gives up.
RUN_TIMEOUT = 120.0

CONFIG = """
partitions:
  - name: NAME
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: team
            resources: {max: {memory: HIGHGi}}
            properties: {quota.preemption.delay: 1s}
"""


@dataclass
class Stack:
    """gunicorn and one Celery worker on the test database, and a Celery client of the
    worker's Redis database."""

    address: str
    worker: ManagedProcess
    web: ManagedProcess
    sender: Celery

    def send_run(self, run_id: int) -> str:
        """Hand the run to the worker, as the sweep's ``dispatch.enqueue_run`` does."""
        return self.sender.send_task(TASK, args=[run_id]).id

    def task_done(self, task_id: str) -> bool:
        return bool(re.search(rf"\[{re.escape(task_id)}\] succeeded", self.worker.log_text()))

    def wait_done(self, task_id: str) -> None:
        wait_until(
            lambda: self.task_done(task_id),
            RUN_TIMEOUT,
            interval=0.05,
            message=f"the worker never finished task {task_id}",
            watch=[self.worker, self.web],
        )


@pytest.fixture(scope="module")
def stack(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The compose ``web`` (3 gunicorn workers) and ``worker`` commands, started once."""
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    base = tmp_path_factory.mktemp("abort-races")
    url = isolated_redis_url(settings.REDIS_URL, RACE_REDIS_DB)
    flush_redis_db(url)
    compose = load_compose()
    port = free_port()
    web_args = native_command(
        service(compose, "web")["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    worker_args = native_command(service(compose, "worker")["command"], {})
    worker_args += ["-n", "racer@%h", "--without-mingle", "--without-gossip"]
    env = test_database_env({"XDG_RUNTIME_DIR": str(base)}, redis_url=url)
    sender = Celery("abort-races", broker=url, set_as_current=False)
    sender.conf.update(task_serializer="json", accept_content=["json"])
    with (
        ManagedProcess("race-web", web_args, env=env, log_dir=base) as web,
        ManagedProcess("race-worker", worker_args, env=env, log_dir=base) as worker,
    ):
        address = f"127.0.0.1:{port}"
        wait_until(
            lambda: _status(address, "/healthz") == 200,
            60,
            message="gunicorn never answered",
            watch=[web],
        )
        wait_until(
            lambda: " ready." in worker.log_text(),
            60,
            message="the worker never became ready",
            watch=[worker],
        )
        try:
            yield Stack(address, worker, web, sender)
        finally:
            sender.close()


def _status(address: str, path: str) -> int | None:
    try:
        return request(address, "GET", path, token=None)[0]
    except OSError:
        return None


def request(
    address: str, method: str, path: str, *, token: str | None, body: Any = None
) -> tuple[int, Any]:
    """One HTTP request as an API client makes it; (status, parsed JSON body or None)."""
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers=headers)  # fmt: skip
        response = connection.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw[:300]
    finally:
        connection.close()


def token_of(username: str, role: str) -> str:
    """An API key of a user holding ``role`` (created for this test)."""
    user = user_with_role(username, role, password="pw-race-12345")
    return token_key(user, name="race")


@dataclass
class Trial:
    name: str
    run_id: int
    task_id: str
    victims: int

    def orders(self) -> int:
        return EvictionOrder.objects.filter(run_id=self.run_id).count()

    def run(self) -> PreemptionRun:
        return PreemptionRun.objects.get(pk=self.run_id)


def start_run(stack: Stack, name: str, victims: int) -> Trial:
    """A partition of its own whose queue runs ``victims + KEPT`` tasks of 1 GiB; its max is
    lowered to ``KEPT`` GiB, the timer falls due, the product's sweep creates the run (which
    must preempt ``victims`` tasks) and the worker is handed it."""
    partition = saved_partition(CONFIG.replace("NAME", name).replace("HIGH", str(HIGH_MAX_GI)))
    ingest(
        partition,
        [
            {
                "id": f"t{i:05d}",
                "queue": "root.team",
                "node": "n1",
                "resources": {"memory": "1Gi"},
                "created_at": f"2026-03-01T{10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            }
            for i in range(victims + KEPT)
        ],
        nodes=one_node(f"{HIGH_MAX_GI}Gi"),
    )
    set_max(name, KEPT)
    due = timezone.now() + timedelta(seconds=2)
    [run_id] = runs.sweep_due_quota_timers(due)
    return Trial(name, run_id, stack.send_run(run_id), victims)


def set_max(name: str, gibibytes: int) -> None:
    version = Queue.objects.get(partition__name=name, path="root.team").version
    config_services.update_queue(
        name, "root.team", version=version, actor=None, comment=f"max {gibibytes}Gi",
        max={"memory": gibibytes * 2**30},
    )  # fmt: skip


def wait_for(predicate: Callable[[], bool], trial: Trial, stack: Stack, what: str) -> bool:
    """Wait until ``predicate`` holds (True) or the worker finished the run first (False)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        if predicate():
            return True
        if stack.task_done(trial.task_id):
            return predicate()
        time.sleep(0.005)
    raise AssertionError(f"{trial.name}: {what} never happened\n{describe([stack.worker])}")


def abort(stack: Stack, token: str, trial: Trial) -> Callable[[], tuple[int, Any]]:
    return lambda: request(
        stack.address, "POST", f"/api/v1/runs/{trial.run_id}/abort", token=token,
        body={"comment": f"race {trial.name}"},
    )  # fmt: skip


@dataclass
class Outcome:
    """What one race showed: the answer, the orders counted right after it, and at the end."""

    trial: str
    status: int
    at_answer: int
    at_end: int
    run_status: str
    detail: Any = None

    @property
    def after_answer(self) -> int:
        return self.at_end - self.at_answer


def settle(stack: Stack, trial: Trial, status: int, detail: Any, at_answer: int) -> Outcome:
    stack.wait_done(trial.task_id)
    run = trial.run()
    return Outcome(trial.name, status, at_answer, trial.orders(), run.status, detail)


def check_aborts(outcomes: list[Outcome]) -> None:
    """No 5xx; an abort that answered 200 ended the run with no victim after it; one that
    answered 409 found the run finished with every victim."""
    print("aborts (trial, status, orders at answer, at end):",
          [(o.trial, o.status, o.at_answer, o.at_end) for o in outcomes])  # fmt: skip
    errors = [o for o in outcomes if o.status >= 500 or o.status not in (200, 409)]
    assert not errors, errors
    late = [o for o in outcomes if o.status == 200 and o.after_answer]
    assert not late, f"victims preempted after an answered abort: {late}"
    for outcome in outcomes:
        if outcome.status == 200:
            assert outcome.run_status == RunStatus.FAILED, outcome
        else:
            assert outcome.run_status == RunStatus.FINISHED, outcome


def test_aborting_a_2000_victim_run_0_to_1_2_s_in_stops_it_with_no_victim_after_the_answer(
    stack: Stack,
) -> None:
    """Ten 2,000-victim runs, each aborted over HTTP 0 to 1.2 s after it was handed to the
    worker (while it claims, plans, or preempts its first chunks). Before the lock order, 9 in
    10 of these aborts deadlocked with the worker (a 500, and the run evicted everything).
    Takes about a minute: ten runs of 2,000 victims planned and partly preempted."""
    token = token_of("abort-admin", "admin")
    outcomes = []
    for trial_number in range(10):
        trial = start_run(stack, f"early{trial_number}", 2000)
        time.sleep(0.12 * trial_number + 0.02)
        status, detail = abort(stack, token, trial)()
        outcomes.append(settle(stack, trial, status, detail, trial.orders()))
    check_aborts(outcomes)


def test_aborts_mid_run_and_near_the_end_never_let_a_victim_through_after_the_answer(
    stack: Stack,
) -> None:
    """Twenty aborts over HTTP against 1,000- and 2,000-victim runs, sent as soon as the worker
    has committed its first, second or third chunk of 500 (the next one is in flight), or right
    after its last but one: an abort that answered 200 is the end of the run's evictions, one
    that came too late answers 409 and the run finished. Takes about a minute (twenty runs)."""
    token = token_of("abort-admin", "admin")
    outcomes = []
    plans = [(2000, 500), (2000, 1000), (2000, 1500), (1000, 500)] * 5
    for trial_number, (victims, after) in enumerate(plans):
        trial = start_run(stack, f"mid{trial_number}", victims)
        wait_for(lambda trial=trial, after=after: trial.orders() >= after, trial, stack,
                 f"{after} orders")  # fmt: skip
        status, detail = abort(stack, token, trial)()
        outcomes.append(settle(stack, trial, status, detail, trial.orders()))
    check_aborts(outcomes)
    # The trials did land mid-run: most aborts stopped a run with victims left.
    stopped_mid = [o for o in outcomes if o.status == 200 and o.at_end > 0]
    assert len(stopped_mid) >= 10, outcomes


def test_an_acknowledgement_racing_an_abort_both_answer_and_no_victim_follows_the_abort(
    stack: Stack,
) -> None:
    """Twelve times, while the worker preempts a 2,000-victim run (its first chunk committed),
    the cluster's agent acknowledges an eviction order of it and an admin aborts it, released
    at the same instant, both over HTTP. Both answer (no 5xx), the acknowledgement lands, and
    no victim is preempted after the abort answered. Takes about 30 s (twelve runs)."""
    admin = token_of("abort-admin", "admin")
    agent = token_of("agent", "operator")
    outcomes, acks = [], []
    for trial_number in range(12):
        trial = start_run(stack, f"ack{trial_number}", 2000)
        wait_for(lambda trial=trial: trial.orders() >= 1, trial, stack, "a first order")
        order = EvictionOrder.objects.filter(run_id=trial.run_id).order_by("pk").first()
        ack = lambda order=order, trial=trial: request(  # noqa: E731 - one request
            stack.address, "POST",
            f"/api/v1/partitions/{trial.name}/evictions/{order.pk}/ack", token=agent, body={},
        )  # fmt: skip
        acked, aborted = release_together(ack, abort(stack, admin, trial))
        at_answer = trial.orders()
        assert not isinstance(aborted, BaseException), aborted
        assert not isinstance(acked, BaseException), acked
        outcomes.append(settle(stack, trial, aborted[0], aborted[1], at_answer))
        acks.append((trial.name, acked[0], acked[1]))
        order.refresh_from_db()
        assert order.status == "acknowledged", (trial.name, acked)
    assert all(status == 200 for _, status, _ in acks), acks
    check_aborts(outcomes)


def test_raising_the_max_back_mid_run_stops_the_run_with_no_victim_after_the_answer(
    stack: Stack,
) -> None:
    """5,000-victim runs; once the worker has committed a chunk or two, an admin raises the
    queue's max back over HTTP. Once that PATCH answered, the run preempts nothing more: it ends
    ``stopped`` saying why (its queue is within its max again), audited; the victims already
    preempted stay preempted. Before, the run evicted every victim left. A raise that reaches
    the server only after the run's last chunk proves nothing, so trials go on (at most 30)
    until ten raises landed mid-run. Takes one to two minutes: each run plans and preempts
    thousands of victims, which is what gives an HTTP request time to land mid-run."""
    token = token_of("raise-admin", "admin")
    warm_up(stack, token)
    landed: list[Outcome] = []
    too_late: list[Outcome] = []
    for trial_number in range(30):
        if len(landed) >= 10:
            break
        trial = start_run(stack, f"raise{trial_number}", 5000)
        version = Queue.objects.get(partition__name=trial.name, path="root.team").version
        body = {"max": {"memory": f"{HIGH_MAX_GI}Gi"}, "version": version, "comment": "back"}
        after = 500 * (1 + trial_number % 2)
        wait_for(lambda trial=trial, after=after: trial.orders() >= after, trial, stack,
                 f"{after} orders")  # fmt: skip
        status, detail = request(
            stack.address, "PATCH", f"/api/v1/partitions/{trial.name}/queues/root.team/",
            token=token, body=body,
        )  # fmt: skip
        assert status == 200, (trial.name, status, detail)
        outcome = settle(stack, trial, status, detail, trial.orders())
        assert outcome.after_answer == 0, outcome
        run = trial.run()
        if outcome.at_answer == trial.victims:
            assert run.status == RunStatus.FINISHED, outcome
            too_late.append(outcome)
            continue
        landed.append(outcome)
        assert run.status == RunStatus.STOPPED, (outcome, run.error)
        assert "max of root.team was raised or removed" in run.stop_reason, run.stop_reason
        preempted = run.victims.filter(preempted_at__isnull=False).count()
        assert preempted == outcome.at_end
        event = AuditEvent.objects.get(kind=AuditKind.RUN_STOPPED, object_id=str(run.pk))
        assert f"stopped after {preempted} of {trial.victims} victims" in event.summary
        assert event.data["reason"] == run.stop_reason
    print(f"raises mid-run: {[(o.trial, o.at_answer) for o in landed]}; too late: {len(too_late)}")
    assert len(landed) >= 10, f"only {len(landed)} raises landed mid-run; late: {too_late}"


def warm_up(stack: Stack, token: str) -> None:
    """A few reads, so each gunicorn worker has imported everything and opened its database
    connection before a race depends on how fast it answers."""
    for _ in range(6):
        assert request(stack.address, "GET", "/api/v1/partitions/", token=token)[0] == 200
