"""Evictions out: carry out the product's eviction orders with the Kubernetes Eviction API.

For each pending order (polled every interval, or received by the signed webhook):

- the pod is found by the uid in the order's task id; a pod the cluster no longer has is
  acknowledged as ``gone``, one already terminating as ``evicted`` when this agent evicted it,
  else ``gone``;
- a **soft** order (SPEC 4.5 ``soft_eviction``) labels the pod
  ``scheduling.koordinator.sh/soft-eviction: "true"`` (seed 004's label; the run in an
  annotation) and leaves the deletion to a controller of the cluster's owner (nothing in
  Kubernetes or YuniKorn acts on the label); the order is reported ``waiting`` and acknowledged
  once the pod is gone. It needs ``patch`` on pods (the opt-in ``soft-eviction`` overlay);
- otherwise the pod is read again by name first: the API server spends a budget's disruption
  before it checks an eviction's uid precondition, so an order for a pod recreated under the
  same name (the cache not caught up yet) must not get that far; a pod gone or with another uid
  is acknowledged as ``gone``. Then a ``policy/v1`` Eviction is created for the pod, with the
  pod's uid as a precondition. The API server answers (``pkg/registry/core/pod/storage/
  eviction.go``):

  - 201: evicted, acknowledge; 404: gone, acknowledge;
  - 409: only a failed uid precondition means the pod is gone (another pod has the name); the
    other conflicts (a budget updated by others too often, a Pending pod's resourceVersion
    precondition) leave the pod running: the pod is read again by name, and the order is
    acknowledged as ``gone`` only if it is gone, else reported ``failed`` and tried again;
  - 429 with a ``DisruptionBudget`` cause: a budget forbids it now (report ``blocked`` with the
    server's message, try again with backoff, at least its ``Retry-After``); a 429 without one
    is the API server's own rate limit: reported ``failed`` as such, tried again after its
    ``Retry-After``;
  - 500 "more than one PodDisruptionBudget": the Eviction API cannot evict the pod while that
    holds: the order is acknowledged ``refused`` with that reason (it ends; the product leaves
    the task running and the run says why), and the agent pushes such a pod with a budget that
    allows no disruption, so the engine does not choose it again;
  - anything else: report ``failed``, try again with backoff.

  Nothing is ever dropped: an order stays pending in the product until it is acknowledged.

Acknowledgements and reports go to the product in bulk, one request each per turn. If the agent
dies between an eviction and its acknowledgement, the order is still pending when it comes back;
the pod is then terminating or gone, and the order is acknowledged without a second eviction.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from scheduler_admin_agent.kube import ClusterCache
from scheduler_admin_agent.product import ProductClient
from scheduler_admin_agent.records import PodRecord
from scheduler_admin_agent.translate import uid_of

logger = logging.getLogger(__name__)

#: The label seed 004's design has the scheduler patch on a softly evicted pod; nothing in
#: Kubernetes or YuniKorn acts on it: a controller of the cluster's owner deletes such pods.
PREEMPTED_LABEL = "scheduling.koordinator.sh/soft-eviction"
RUN_ANNOTATION = "scheduler-admin.io/preempted-by-run"
#: Longest wait before trying a refused eviction again.
MAX_BACKOFF = 60.0
#: The Eviction API's answer for a pod under several budgets (a 500).
SEVERAL_BUDGETS = "more than one PodDisruptionBudget"
#: How a failed uid precondition reads: the DisruptionTarget update's conflict ("the UID in the
#: precondition (...) does not match the UID in record"), or the deletion's ("Precondition
#: failed: UID in precondition: ...") on servers without that condition.
UID_PRECONDITIONS = ("the UID in the precondition", "UID in precondition")
#: Longest reason kept on an order.
REASON_MAX = 1000
#: Eviction requests in flight at once: one at a time, 5,000 victims would take minutes (each
#: is a round trip and a write in the API server); a handful keeps the API server unhurried.
PARALLEL = 8


@dataclass(frozen=True)
class Result:
    """What became of one order this turn: acknowledged (``outcome``), or reported."""

    order_id: int
    outcome: str = ""  # evicted | gone | refused (with ``reason``): acknowledge
    status: str = ""  # blocked | failed | waiting: report
    reason: str = ""
    code: int | None = None

    @property
    def done(self) -> bool:
        return bool(self.outcome)


class Evictor:
    def __init__(self, api: client.ApiClient, cache: ClusterCache, product: ProductClient) -> None:
        self.core = client.CoreV1Api(api)
        self.cache = cache
        self.product = product
        #: order id -> (monotonic time before which it is not tried again, attempts so far)
        self._backoff: dict[int, tuple[float, int]] = {}
        #: order id -> the (status, reason) last reported, so a waiting order is reported once.
        self._reported: dict[int, tuple[str, str]] = {}
        #: uids this process evicted (a terminating pod among them was evicted by us).
        self._evicted: set[str] = set()
        self.evictions = 0
        self._lock = threading.Lock()  # the bookkeeping above, shared by the pool's threads

    def run_once(self) -> tuple[int, int]:
        """Poll the pending orders and carry out those due; returns (acknowledged, reported)."""
        orders = self.product.pending_evictions()
        now = time.monotonic()
        due = [order for order in orders if self._backoff.get(order["id"], (0.0, 0))[0] <= now]
        if len(due) <= 1:
            results = [self.carry_out(order) for order in due]
        else:
            with ThreadPoolExecutor(min(PARALLEL, len(due)), "evict") as pool:
                results = list(pool.map(self.carry_out, due))
        return self.send(results)

    def send(self, results: list[Result]) -> tuple[int, int]:
        """Acknowledge and report ``results`` in one request each."""
        acks = [
            {"id": r.order_id, "outcome": r.outcome}
            | ({"reason": r.reason[:REASON_MAX]} if r.outcome == "refused" else {})
            for r in results
            if r.done
        ]
        # Every refused attempt is reported (the order counts them); a waiting soft eviction
        # once, until something changes.
        reports = [
            {"id": r.order_id, "status": r.status, "reason": r.reason[:REASON_MAX], "code": r.code}
            for r in results
            if not r.done
            and (
                r.status != "waiting"
                or self._reported.get(r.order_id) != (r.status, r.reason[:REASON_MAX])
            )
        ]
        if acks:
            self.product.acknowledge(acks)
            for ack in acks:
                self._backoff.pop(ack["id"], None)
                self._reported.pop(ack["id"], None)
        if reports:
            self.product.report(reports)
            for report in reports:
                self._reported[report["id"]] = (report["status"], report["reason"])
        return len(acks), len(reports)

    def carry_out(self, order: dict[str, Any]) -> Result:
        order_id = int(order["id"])
        uid = uid_of(order["allocation_id"])
        pod = self.cache.pod(uid) if uid else None
        if pod is None:
            return Result(order_id, outcome="gone")
        if pod.deleting:
            with self._lock:
                evicted_here = uid in self._evicted
            return Result(order_id, outcome="evicted" if evicted_here else "gone")
        if order.get("soft"):
            return self._label(order_id, pod, order.get("run"))
        return self._evict(order_id, pod)

    def _still_there(self, pod: PodRecord) -> bool | None:
        """Read the pod by name: True when the same pod (uid) is there, False when it is gone
        or replaced, None when the API server could not say."""
        try:
            current = self.core.read_namespaced_pod(
                pod.name, pod.namespace, _request_timeout=(5, 30)
            )
        except ApiException as error:
            return False if error.status == 404 else None
        except Exception:
            return None
        return current.metadata.uid == pod.uid

    def _evict(self, order_id: int, pod: PodRecord) -> Result:
        if self._still_there(pod) is False:
            return Result(order_id, outcome="gone")
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=pod.name, namespace=pod.namespace),
            delete_options=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid=pod.uid)
            ),
        )
        try:
            self.core.create_namespaced_pod_eviction(
                pod.name, pod.namespace, body, _request_timeout=(5, 30)
            )
        except ApiException as error:
            return self._refused(order_id, pod, error)
        except Exception as error:  # the cluster could not be reached: retry
            return self._retry(order_id, "failed", f"{type(error).__name__}: {error}", None)
        with self._lock:
            self._evicted.add(pod.uid)
            self.evictions += 1
        logger.info("evicted %s/%s (order %s)", pod.namespace, pod.name, order_id)
        return Result(order_id, outcome="evicted")

    def _refused(self, order_id: int, pod: PodRecord, error: ApiException) -> Result:
        """What an Eviction API error means (see the module docstring)."""
        message = _status_message(error)
        status = _status(error)
        if error.status == 404:
            return Result(order_id, outcome="gone")
        if error.status == 409:
            if any(text in message for text in UID_PRECONDITIONS) or (
                self._still_there(pod) is False
            ):
                return Result(order_id, outcome="gone")
            return self._retry(order_id, "failed", f"{message} (the pod is still there)", 409)
        if error.status == 429:
            wait = _retry_after(error, status)
            causes = ((status.get("details") or {}).get("causes") or []) if status else []
            if any(cause.get("reason") == "DisruptionBudget" for cause in causes):
                return self._retry(order_id, "blocked", message, 429, at_least=wait)
            return self._retry(
                order_id,
                "failed",
                f"{message} (the API server's rate limit, not a disruption budget; "
                f"retrying after {wait:g} s)",
                429,
                exactly=wait or 1.0,
            )
        if error.status == 500 and SEVERAL_BUDGETS in message:
            return Result(
                order_id,
                outcome="refused",
                reason=f"{message} The pod is under several disruption budgets: the Eviction "
                "API refuses every eviction of it while more than one selects it.",
                code=500,
            )
        return self._retry(order_id, "failed", message, error.status)

    def _label(self, order_id: int, pod: PodRecord, run: Any) -> Result:
        if pod.labels.get(PREEMPTED_LABEL) != "true":
            patch = {
                "metadata": {
                    "labels": {PREEMPTED_LABEL: "true"},
                    "annotations": {RUN_ANNOTATION: str(run or "")},
                }
            }
            try:
                self.core.patch_namespaced_pod(
                    pod.name, pod.namespace, patch, _request_timeout=(5, 30)
                )
            except ApiException as error:
                if error.status == 404:
                    return Result(order_id, outcome="gone")
                return self._retry(order_id, "failed", _status_message(error), error.status)
            except Exception as error:
                return self._retry(order_id, "failed", f"{type(error).__name__}: {error}", None)
            with self._lock:
                self._evicted.add(pod.uid)
        return Result(
            order_id,
            status="waiting",
            reason=f"labelled {PREEMPTED_LABEL}=true; waiting for its owner to delete it",
        )

    def _retry(
        self,
        order_id: int,
        status: str,
        reason: str,
        code: int | None,
        *,
        at_least: float = 0.0,
        exactly: float | None = None,
    ) -> Result:
        """Report the order and wait before trying it again: doubling up to ``MAX_BACKOFF``
        (never less than ``at_least``), or ``exactly`` that long (a ``Retry-After``)."""
        with self._lock:
            _, attempts = self._backoff.get(order_id, (0.0, 0))
            attempts += 1
            wait = (
                exactly if exactly is not None else max(min(MAX_BACKOFF, 2.0**attempts), at_least)
            )
            self._backoff[order_id] = (time.monotonic() + wait, attempts)
        logger.info("order %s %s: %s", order_id, status, reason)
        return Result(order_id, status=status, reason=reason, code=code)


def _status(error: ApiException) -> dict[str, Any] | None:
    """The ``Status`` object the API server answered, if it answered one."""
    try:
        status = json.loads(error.body or "")
    except (TypeError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def _status_message(error: ApiException) -> str:
    """The message of the ``Status`` the API server answered, else its reason phrase."""
    status = _status(error)
    if status and status.get("message"):
        return f"{error.status}: {status['message']}"
    return f"{error.status}: {error.reason}"


def _retry_after(error: ApiException, status: dict[str, Any] | None) -> float:
    """Seconds the server asked to wait: its ``Retry-After`` header, else the Status's
    ``retryAfterSeconds``; 0 when it named none."""
    header = (error.headers or {}).get("Retry-After") if error.headers else None
    if header and str(header).strip().isdigit():
        return float(str(header).strip())
    seconds = ((status or {}).get("details") or {}).get("retryAfterSeconds")
    return float(seconds) if isinstance(seconds, int) and seconds > 0 else 0.0
