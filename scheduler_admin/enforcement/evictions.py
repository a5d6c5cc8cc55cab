"""Eviction orders: acknowledged by the cluster, or delivered to it by a signed webhook (SPEC 5).

An order is created for every victim (``runs.execution._preempt_chunk``). The cluster either
polls the pending orders and acknowledges each, or — when ``EVICTION_WEBHOOK_URL`` is set —
receives each order as a POST signed with HMAC-SHA256 over the raw body
(``X-Scheduler-Signature: sha256=<hex>``), with the order id as ``Idempotency-Key``. A 2xx
answer acknowledges the order; anything else is retried with exponential backoff.
Acknowledging releases the allocation: it stops counting towards usage.

Deliveries are bounded, because the receiver is outside our control: each request has a deadline
for the whole exchange (``EVICTION_WEBHOOK_TIMEOUT``), a delivery task stops starting requests
when its budget is spent (``EVICTION_WEBHOOK_TASK_BUDGET``) and has at most
``EVICTION_WEBHOOK_CONCURRENCY`` in flight; the task runs on a Celery queue and worker of its own,
so however slow the receiver, sweeps and runs never wait for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from scheduler_admin.accounts.permissions import Authorize
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import actor_name, new_event, record_event, record_events
from scheduler_admin.base import metrics
from scheduler_admin.base.errors import NotFound
from scheduler_admin.base.limits import ACKNOWLEDGED_BY_MAX_LENGTH, cap_text
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.locking import lock_allocations
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOrder,
    EvictionOutcome,
    EvictionStatus,
)
from scheduler_admin.queues.models import Partition

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Scheduler-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Longest wait between two deliveries of one order.
MAX_BACKOFF_SECONDS = 300


class OrderNotFound(NotFound):
    """No eviction order with that id in the partition (HTTP 404)."""


@retry_on_conflict
def acknowledge_eviction(
    order_id: int, *, partition_name: str | None = None, actor: AbstractBaseUser | None,
    via: str = "api", authorize: Authorize | None = None,
) -> EvictionOrder:  # fmt: skip
    """Mark the order acknowledged (outcome ``evicted``: the cluster or the webhook receiver
    says it carried the eviction out) and release its allocation, if it is still there;
    acknowledging twice is harmless (the second call changes nothing and writes no event).

    Locks in the order of ``lock_order``: ``authorize`` (the in-write authorization: the
    account, then the partition row) or the partition row alone, shared; then the order's row
    (only it: the partition and the victim are read, not locked); then the task."""
    now = timezone.now()
    with transaction.atomic():
        found = EvictionOrder.objects.filter(pk=order_id)
        if partition_name is not None:
            found = found.filter(partition__name=partition_name)
        partition_id = found.values_list("partition_id", flat=True).first()
        partition = Partition.objects.filter(pk=partition_id).first() if partition_id else None
        if partition is None:
            raise OrderNotFound(f"no eviction order {order_id}")
        _lock_partition_for(partition, authorize)
        order = (
            EvictionOrder.objects.select_for_update(of=("self",))
            .select_related("partition", "victim")
            .filter(pk=order_id)
            .first()
        )
        if order is None:
            raise OrderNotFound(f"no eviction order {order_id}")
        if order.status == EvictionStatus.ACKNOWLEDGED:
            return order
        order.status = EvictionStatus.ACKNOWLEDGED
        order.acknowledged_at = now
        order.acknowledged_by = f"{actor_name(actor)} ({via})"
        order.next_attempt_at = None
        order.outcome = EvictionOutcome.EVICTED
        order.save(
            update_fields=[
                "status",
                "acknowledged_at",
                "acknowledged_by",
                "next_attempt_at",
                "outcome",
            ]
        )
        Allocation.objects.filter(
            partition=order.partition, external_id=order.allocation_id
        ).exclude(state=AllocationState.RELEASED).update(
            state=AllocationState.RELEASED, state_changed_at=now
        )
        _eviction_event(
            AuditKind.EVICTION_ACKNOWLEDGED,
            order,
            actor=actor,
            at=now,
            summary=f"Eviction of {order.allocation_id} acknowledged ({via}); "
            "the task no longer counts towards usage",
            data={"via": via, "outcome": str(EvictionOutcome.EVICTED)},
        )
        metrics.eviction_acknowledged(order)
    return order


#: What the cluster says happened to a task it acknowledges (kept on the order as ``outcome``).
AckOutcome = EvictionOutcome


class AckResult(models.TextChoices):
    """What a bulk acknowledgement did with one order."""

    ACKNOWLEDGED = "acknowledged", "Acknowledged now"
    ALREADY_ACKNOWLEDGED = "already_acknowledged", "Already acknowledged (nothing changed)"
    NOT_FOUND = "not_found", "No such order in the partition (nothing changed)"


@retry_on_conflict
def acknowledge_evictions(
    partition: Partition,
    items: list[tuple[int, str]],
    *,
    actor: AbstractBaseUser | None,
    via: str = "api",
    authorize: Authorize | None = None,
    reasons: dict[int, str] | None = None,
) -> list[tuple[int, AckResult]]:
    """Acknowledge many orders of ``partition`` at once: ``items`` are ``(order id, outcome)``
    (an ``AckOutcome``), ids distinct. Returns each id with what was done, in the items' order.

    The same effect as ``acknowledge_eviction`` on each, in one transaction and a few
    statements: the pending orders are locked (in id order, so two bulk calls never deadlock),
    marked acknowledged, their allocations released, and one ``eviction.acknowledged`` audit
    event written per order acknowledged now (with the outcome in its data). An order already
    acknowledged is left as it is and reported so (idempotent: an agent may send an
    acknowledgement again after a lost answer); an id that names no order of the partition is
    reported ``not_found`` and changes nothing.

    An order acknowledged ``refused`` (the cluster cannot carry it out) ends too, with the
    cluster's reason (``reasons``: order id -> text) kept as ``cluster_reason``; its task is
    not released but running again (no longer a victim awaiting eviction, so the engine sees
    it as it is; the order, unique per task, keeps it from being ordered out twice), and the
    run page shows the victim as refused, with the reason.

    Locks in the order of ``lock_order``: ``authorize`` (or the partition row alone, shared),
    the orders in id order, then their tasks in id order.
    """
    reasons = reasons or {}
    now = timezone.now()
    outcomes = dict(items)
    results: dict[int, AckResult] = {}
    with transaction.atomic():
        _lock_partition_for(partition, authorize)
        rows = list(
            EvictionOrder.objects.select_for_update(of=("self",))
            .filter(partition=partition, pk__in=list(outcomes))
            .order_by("pk")
            .values_list("pk", "status", "allocation_id", "run_id", "soft", "victim__queue_path")
        )  # tuples, not models: thousands of orders
        pending = []
        for row in rows:
            if row[1] == EvictionStatus.ACKNOWLEDGED:
                results[row[0]] = AckResult.ALREADY_ACKNOWLEDGED
            else:
                results[row[0]] = AckResult.ACKNOWLEDGED
                pending.append(row)
        if pending:
            by = f"{actor_name(actor)} ({via})"[:ACKNOWLEDGED_BY_MAX_LENGTH]
            by_outcome: dict[str, list[int]] = {}
            for row in pending:
                by_outcome.setdefault(outcomes[row[0]], []).append(row[0])
            for outcome, order_ids in sorted(by_outcome.items()):
                if outcome == AckOutcome.REFUSED:
                    continue
                EvictionOrder.objects.filter(pk__in=order_ids).update(
                    status=EvictionStatus.ACKNOWLEDGED,
                    acknowledged_at=now,
                    acknowledged_by=by,
                    next_attempt_at=None,
                    outcome=outcome,
                )
            for order_id in by_outcome.get(AckOutcome.REFUSED, []):
                EvictionOrder.objects.filter(pk=order_id).update(
                    status=EvictionStatus.ACKNOWLEDGED,
                    acknowledged_at=now,
                    acknowledged_by=by,
                    next_attempt_at=None,
                    outcome=AckOutcome.REFUSED,
                    cluster_reason=cap_text(reasons.get(order_id, "")),
                    cluster_reported_at=now,
                )
            refused = {row[2] for row in pending if outcomes[row[0]] == AckOutcome.REFUSED}
            tasks = [row[2] for row in pending]
            lock_allocations(partition, tasks)  # in id order, as a cluster-state push does
            Allocation.objects.filter(
                partition=partition, external_id__in=[t for t in tasks if t not in refused]
            ).exclude(state=AllocationState.RELEASED).update(
                state=AllocationState.RELEASED, state_changed_at=now
            )
            if refused:
                Allocation.objects.filter(
                    partition=partition,
                    external_id__in=sorted(refused),
                    state=AllocationState.PREEMPTING,
                ).update(state=AllocationState.RUNNING, state_changed_at=now)
            record_events(
                [
                    _ack_event(
                        partition, row, outcomes[row[0]], actor, now, via, reasons.get(row[0], "")
                    )
                    for row in pending
                ]
            )
            metrics.evictions_acknowledged(
                EvictionOrder.objects.filter(
                    pk__in=[row[0] for row in pending], status=EvictionStatus.ACKNOWLEDGED
                )
            )
    return [(order_id, results.get(order_id, AckResult.NOT_FOUND)) for order_id, _ in items]


class ReportResult(models.TextChoices):
    """What a report did with one order."""

    REPORTED = "reported", "Kept on the pending order"
    ALREADY_ACKNOWLEDGED = "already_acknowledged", "Already acknowledged (left as it is)"
    NOT_FOUND = "not_found", "No such order in the partition (nothing changed)"


@dataclass(frozen=True)
class ClusterReport:
    """The cluster's answer to one pending order it could not carry out yet."""

    order_id: int
    status: ClusterStatus
    reason: str = ""
    code: int | None = None


@retry_on_conflict
def report_evictions(
    partition: Partition,
    reports: list[ClusterReport],
    *,
    actor: AbstractBaseUser | None,
    now: datetime | None = None,
    authorize: Authorize | None = None,
) -> list[tuple[int, ReportResult]]:
    """Keep on each pending order what the cluster answered when it tried to carry it out
    (``reports``: order ids distinct). Returns each id with what was done, in the reports'
    order.

    One transaction, its locks in the order of ``lock_order``:

    0. ``authorize`` (the in-write authorization), or the partition row alone, shared;
    1. lock the partition's orders named (in id order, as acknowledgements lock them: a report
       and a bulk acknowledgement of the same orders never deadlock, and a report never writes
       over an order acknowledged meanwhile, since it reads the status under the lock);
    2. an acknowledged order is left alone (``already_acknowledged``); an id of no order of the
       partition is ``not_found``;
    3. each pending order gets the report: ``cluster_status``, ``cluster_reason`` (cut to
       ``CLUSTER_MESSAGE_MAX_LENGTH``), ``cluster_code``, ``cluster_reported_at`` and one more
       ``cluster_attempts``, with one update per distinct answer (an agent reports the same
       budget refusal for many orders);
    4. an ``eviction.reported`` audit event for each order whose status or reason changed: an
       agent retrying a blocked eviction every few seconds keeps the attempts counting without
       writing an event each time.
    """
    now = now or timezone.now()
    wanted = {report.order_id: report for report in reports}
    results: dict[int, ReportResult] = {}
    events: list[AuditEvent] = []
    with transaction.atomic():
        _lock_partition_for(partition, authorize)
        rows = list(
            EvictionOrder.objects.select_for_update(of=("self",))
            .filter(partition=partition, pk__in=list(wanted))
            .order_by("pk")
            .values_list(
                "pk", "status", "allocation_id", "run_id", "soft", "victim__queue_path",
                "cluster_status", "cluster_reason", "cluster_attempts",
            )
        )  # fmt: skip
        groups: dict[tuple[str, str, int | None], list[int]] = {}
        for pk, status, allocation_id, run_id, soft, queue_path, was, was_reason, tries in rows:
            if status == EvictionStatus.ACKNOWLEDGED:
                results[pk] = ReportResult.ALREADY_ACKNOWLEDGED
                continue
            results[pk] = ReportResult.REPORTED
            report = wanted[pk]
            reason = cap_text(report.reason)
            groups.setdefault((str(report.status), reason, report.code), []).append(pk)
            if (was, was_reason) != (report.status, reason):
                events.append(
                    _report_event(
                        partition, (pk, allocation_id, run_id, soft, queue_path), report,
                        reason, tries + 1, actor, now,
                    )
                )  # fmt: skip
        for (status, reason, code), order_ids in sorted(
            groups.items(), key=lambda item: item[1][0]
        ):
            EvictionOrder.objects.filter(pk__in=order_ids).update(
                cluster_status=status,
                cluster_reason=reason,
                cluster_code=code,
                cluster_attempts=models.F("cluster_attempts") + 1,
                cluster_reported_at=now,
            )
        record_events(events)
    return [(report.order_id, results.get(report.order_id, ReportResult.NOT_FOUND))
            for report in reports]  # fmt: skip


def _lock_partition_for(partition: Partition, authorize: Authorize | None) -> None:
    """The first locks of an acknowledgement or a report (``lock_order`` levels 1 and 2): the
    in-write authorization of the caller when there is one, else the partition row alone;
    shared either way (these writes leave the partition as it is)."""
    if authorize is not None:
        authorize(partition, exclusive=False)
    else:
        lock_partition(partition.pk, exclusive=False)


def _report_event(
    partition: Partition,
    order: tuple[int, str, int, bool, str],
    report: ClusterReport,
    reason: str,
    attempts: int,
    actor: AbstractBaseUser | None,
    at: datetime,
) -> AuditEvent:
    """The ``eviction.reported`` event of one order whose cluster status or reason changed."""
    order_id, allocation_id, run_id, soft, queue_path = order
    status = ClusterStatus(report.status)
    code = f" ({report.code})" if report.code is not None else ""
    because = f": {reason}" if reason else ""
    return new_event(
        AuditKind.EVICTION_REPORTED,
        actor=actor,
        at=at,
        partition_name=partition.name,
        queue_path=queue_path,
        object_type="eviction",
        object_id=str(order_id),
        summary=f"Eviction of {allocation_id} not carried out yet: {status.label.lower()}"
        f"{code}{because}",
        data={
            "order": order_id, "run": run_id, "allocation": allocation_id, "soft": soft,
            "status": str(status), "reason": reason, "code": report.code, "attempts": attempts,
        },
    )  # fmt: skip


def _ack_event(
    partition: Partition,
    row: tuple[int, str, str, int, bool, str],
    outcome: str,
    actor: AbstractBaseUser | None,
    at: datetime,
    via: str,
    reason: str = "",
) -> AuditEvent:
    """The ``eviction.acknowledged`` event of one order of a bulk acknowledgement: the same
    content as ``_eviction_event`` gives the single acknowledgement's, with the outcome."""
    order_id, _, allocation_id, run_id, soft, queue_path = row
    if outcome == AckOutcome.GONE:
        what = "the task was already gone"
    elif outcome == AckOutcome.REFUSED:
        what = f"the cluster refused it, the task stays: {cap_text(reason, 300)}"
    else:
        what = "the task no longer counts towards usage"
    return new_event(
        AuditKind.EVICTION_ACKNOWLEDGED,
        actor=actor,
        at=at,
        partition_name=partition.name,
        queue_path=queue_path,
        object_type="eviction",
        object_id=str(order_id),
        summary=f"Eviction of {allocation_id} acknowledged ({via}); {what}",
        data={
            "order": order_id, "run": run_id, "allocation": allocation_id, "soft": soft,
            "via": via, "outcome": str(outcome),
            **({"reason": cap_text(reason)} if outcome == AckOutcome.REFUSED else {}),
        },
    )  # fmt: skip


def _eviction_event(
    kind: AuditKind,
    order: EvictionOrder,
    *,
    actor: AbstractBaseUser | None,
    at: datetime,
    summary: str,
    data: dict[str, Any],
) -> AuditEvent:
    """Audit one step of an eviction with where it happened: the partition and the victim's
    queue on the event (so the audit filters by partition and queue find it), and the run,
    the order, the task (allocation id) and whether the eviction is soft in its data."""
    return record_event(
        kind,
        actor=actor,
        at=at,
        partition_name=order.partition.name,
        queue_path=order.victim.queue_path,
        object_type="eviction",
        object_id=str(order.pk),
        summary=summary,
        data={
            "order": order.pk,
            "run": order.run_id,
            "allocation": order.allocation_id,
            "soft": order.soft,
            **data,
        },
    )


def order_payload(order: EvictionOrder) -> dict[str, Any]:
    return {
        "order_id": order.pk,
        "partition": order.partition.name,
        "allocation_id": order.allocation_id,
        "node": order.node_name,
        "run_id": order.run_id,
        "soft": order.soft,
        "created_at": order.created_at.isoformat(),
    }


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver_eviction_webhooks(now: datetime | None = None, *, batch: int = 100) -> int:
    """POST due pending orders to the webhook, a few at a time; returns how many were acknowledged.

    A slow receiver must cost this task bounded time and nothing else (the task has a Celery
    queue and worker of its own, see ``scheduler_admin/celery.py``). Steps:

    1. Read up to ``batch`` due orders (pending, next attempt passed), oldest attempt first.
    2. While the task's time budget (``EVICTION_WEBHOOK_TASK_BUDGET``) lasts and fewer than
       ``EVICTION_WEBHOOK_CONCURRENCY`` requests are in flight, claim the next order and hand its
       request to the thread pool. The claim pushes the order's ``next_attempt_at`` past the
       request's deadline with a conditional update on the value read in step 1, so two tasks
       never send the same order at the same moment; the receiver still dedups by
       ``Idempotency-Key`` because a worker may die after sending.
    3. Record each answer as it comes, in this thread (the pool threads only do HTTP and never
       touch the database): a 2xx acknowledges the order, anything else schedules a retry with
       backoff. A request without a complete answer at its deadline (``EVICTION_WEBHOOK_TIMEOUT``
       after it started) is cut off (``_RequestGuard``) and counts as failed.

    Orders not started before the budget ran out are left untouched: still due, the next task
    (beat sends one every 5 s) takes them first. Should the task be stopped half-way (Celery's
    soft time limit), the requests in flight are cut off and their orders, still claimed, are
    due again once the claim has passed.
    """
    url = settings.EVICTION_WEBHOOK_URL
    if not url:
        return 0
    timeout = settings.EVICTION_WEBHOOK_TIMEOUT
    concurrency = settings.EVICTION_WEBHOOK_CONCURRENCY
    started = time.monotonic()
    budget_ends = started + settings.EVICTION_WEBHOOK_TASK_BUDGET
    base = now or timezone.now()

    def current() -> datetime:
        # ``now`` moved on by the time this task has spent: each claim must outlast its own
        # request, not one that started at the beginning of the task.
        return base + timedelta(seconds=time.monotonic() - started)

    due = deque(
        EvictionOrder.objects.filter(status=EvictionStatus.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=base))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", "next_attempt_at")[:batch]
    )
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="eviction-webhook")
    in_flight: dict[Future[str | None], _Delivery] = {}  # answers this task still waits for
    threads: list[Future[str | None]] = []  # every request started, to count busy threads
    delivered = 0
    try:
        while True:
            threads = [future for future in threads if not future.done()]
            while due and len(threads) < concurrency and time.monotonic() < budget_ends:
                delivery = _claim(*due.popleft(), claim_until=current() + _claim_for(timeout))
                if delivery is None:
                    continue  # another task took it
                future = pool.submit(_post, url, delivery, timeout)
                in_flight[future] = delivery
                threads.append(future)
            if not in_flight:
                # Nothing left, the budget is spent, or (rare) every thread is still stuck in a
                # request that could not be cut off (a DNS lookup): the next task goes on.
                break
            next_deadline = min(delivery.deadline for delivery in in_flight.values())
            done, _ = wait(
                list(in_flight),
                timeout=max(next_deadline - time.monotonic(), 0.0),
                return_when=FIRST_COMPLETED,
            )
            for future in done:
                delivered += _record(in_flight.pop(future), future.result())
            for future, delivery in list(in_flight.items()):
                if not future.done() and time.monotonic() >= delivery.deadline:
                    delivery.guard.cut()
                    del in_flight[future]
                    _record(delivery, f"timed out: no complete answer within {timeout} s")
    finally:
        for delivery in in_flight.values():
            delivery.guard.cut()
        pool.shutdown(wait=False, cancel_futures=True)
    return delivered


def _claim_for(timeout: int) -> timedelta:
    """How long a claimed order stays out of other tasks' reach: its request's deadline, and as
    much again for this task to record the answer."""
    return timedelta(seconds=timeout * 2)


class _RequestGuard:
    """Cuts one webhook request off at its deadline, from outside the thread that sends it.

    urllib's (http.client's) ``timeout`` bounds each socket operation, not the request: a
    receiver that sends a byte every few seconds keeps a request, and the task waiting for it,
    alive for ever. So the sending thread registers every socket it opens here (through the
    connection's ``_create_connection`` hook, the one place http.client opens its socket) and at
    the deadline the delivering task calls ``cut``, which shuts those sockets down: whatever the
    sending thread is blocked in (sending, the TLS handshake, waiting for or reading the answer)
    fails at once. What is registered is a duplicate of the socket's descriptor: ``shutdown``
    acts on the connection whichever descriptor it is called on, and the duplicate stays valid
    when TLS wraps (and detaches) the original. A socket opened after the cut is closed at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.cut_off = False

    def connect(
        self,
        address: tuple[str, int],
        timeout: float | None = None,
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        sock = socket.create_connection(address, timeout, source_address)
        with self._lock:
            if self.cut_off:
                sock.close()
                raise TimeoutError("the request's deadline passed while it was connecting")
            self._sockets.append(sock.dup())
        return sock

    def cut(self) -> None:
        """Called by the delivering task at the deadline."""
        with self._lock:
            self.cut_off = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):  # already closed by the other side
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Called by the sending thread when the request is over."""
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


@dataclass
class _Delivery:
    """One order's request: what to send, and when it must have been answered (monotonic)."""

    order: EvictionOrder
    body: bytes
    headers: dict[str, str]
    deadline: float
    guard: _RequestGuard = field(default_factory=_RequestGuard)


def _claim(order_id: int, seen_next: datetime | None, *, claim_until: datetime) -> _Delivery | None:
    """Claim the order (conditional update on the ``next_attempt_at`` read before) and prepare its
    request; None when another task claimed or settled it in between."""
    claimed = EvictionOrder.objects.filter(
        pk=order_id, status=EvictionStatus.PENDING, next_attempt_at=seen_next
    ).update(next_attempt_at=claim_until)
    if not claimed:
        return None
    order = EvictionOrder.objects.select_related("partition", "victim").get(pk=order_id)
    body = json.dumps(order_payload(order), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(body, settings.EVICTION_WEBHOOK_SECRET),
        IDEMPOTENCY_HEADER: str(order.pk),
    }
    deadline = time.monotonic() + settings.EVICTION_WEBHOOK_TIMEOUT
    return _Delivery(order=order, body=body, headers=headers, deadline=deadline)


def _record(delivery: _Delivery, error: str | None) -> int:
    """Write the outcome of one request; 1 if the order was acknowledged."""
    if error is None:
        acknowledge_eviction(delivery.order.pk, actor=None, via="webhook")
        return 1
    _schedule_retry(delivery.order, error)
    return 0


def _post(url: str, delivery: _Delivery, timeout: int) -> str | None:
    """Send one order (in a pool thread, no database access); None on a 2xx answer, else what
    went wrong. ``timeout`` bounds each socket operation; the delivering task enforces the
    deadline of the whole request through ``delivery.guard``."""
    guard = delivery.guard
    request = urllib.request.Request(  # noqa: S310 - an http(s) URL, checked by settings.py
        url, data=delivery.body, method="POST", headers=delivery.headers
    )
    opener = urllib.request.build_opener(_GuardedHTTPHandler(guard), _GuardedHTTPSHandler(guard))
    try:
        with opener.open(request, timeout=timeout) as response:
            if 200 <= response.status < 300:
                return None
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"HTTP {exc.code}"
    except Exception as exc:  # the thread must always hand back an answer, whatever broke
        # Cut off at the deadline, or one socket operation ran into ``timeout``: the same
        # failure, told the same way (urllib wraps socket errors in ``URLError.reason``).
        if guard.cut_off or isinstance(getattr(exc, "reason", exc), TimeoutError):
            return f"timed out: no complete answer within {timeout} s"
        return f"{type(exc).__name__}: {exc}"
    finally:
        guard.close()


def _guarded_connection(
    http_class: type[http.client.HTTPConnection], guard: _RequestGuard
) -> Callable[..., http.client.HTTPConnection]:
    def connection(host: str, **kwargs: Any) -> http.client.HTTPConnection:
        conn = http_class(host, **kwargs)
        conn._create_connection = guard.connect  # type: ignore[attr-defined]
        return conn

    return connection


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    """urllib's http handler, opening its connections through a ``_RequestGuard`` (proxies from
    the environment and redirects keep working as with plain ``urlopen``)."""

    def __init__(self, guard: _RequestGuard) -> None:
        super().__init__()
        self._guard = guard

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_guarded_connection(http.client.HTTPConnection, self._guard), req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    """The https counterpart of ``_GuardedHTTPHandler``."""

    def __init__(self, guard: _RequestGuard) -> None:
        super().__init__()
        self._guard = guard

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            _guarded_connection(http.client.HTTPSConnection, self._guard),
            req,
            context=self._context,  # type: ignore[attr-defined]
        )


def _schedule_retry(order: EvictionOrder, error: str) -> None:
    now = timezone.now()
    attempts = order.webhook_attempts + 1
    delay = min(2 ** (attempts - 1), MAX_BACKOFF_SECONDS)
    EvictionOrder.objects.filter(pk=order.pk, status=EvictionStatus.PENDING).update(
        webhook_attempts=attempts,
        next_attempt_at=now + timedelta(seconds=delay),
        last_error=error[:500],
    )
    logger.warning("eviction order %s: delivery %s failed (%s); retry in %ss",
                   order.pk, attempts, error, delay)  # fmt: skip
    _eviction_event(
        AuditKind.EVICTION_DELIVERY_FAILED,
        order,
        actor=None,
        at=now,
        summary=f"Webhook delivery {attempts} of eviction order {order.pk} failed: {error}; "
        f"retrying in {delay}s",
        data={"attempt": attempts, "error": error},
    )
