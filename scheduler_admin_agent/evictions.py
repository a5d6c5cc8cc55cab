"""Evictions out: carry out the product's eviction orders with the Kubernetes Eviction API.

For each pending order (polled every interval, or received by the signed webhook):

- the pod is found by the uid in the order's task id; a pod the cluster no longer has is
  acknowledged as ``gone``, one already terminating as ``evicted`` when this agent evicted it,
  else ``gone``;
- a **soft** order (SPEC 4.5 ``soft_eviction``) labels the pod ``scheduler-admin.io/preempted:
  "true"`` (with the run in an annotation) and leaves the deletion to its owner; the order is
  reported ``waiting`` and acknowledged once the pod is gone;
- otherwise a ``policy/v1`` Eviction is created for the pod, with the pod's uid as a
  precondition (a pod recreated under the same name is never evicted by an old order). The API
  server answers 201 (evicted: acknowledge), 404 (gone: acknowledge as gone), 429 (a
  PodDisruptionBudget forbids it now: report ``blocked`` with the server's message, try again
  with backoff) or something else (report ``failed``, try again with backoff). Nothing is ever
  dropped: an order stays pending in the product until it is acknowledged.

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
from scheduler_admin_agent.translate import uid_of

logger = logging.getLogger(__name__)

PREEMPTED_LABEL = "scheduler-admin.io/preempted"
RUN_ANNOTATION = "scheduler-admin.io/preempted-by-run"
#: Longest wait before trying a refused eviction again.
MAX_BACKOFF = 60.0
#: Longest reason kept on an order.
REASON_MAX = 1000
#: Eviction requests in flight at once: one at a time, 5,000 victims would take minutes (each
#: is a round trip and a write in the API server); a handful keeps the API server unhurried.
PARALLEL = 8


@dataclass(frozen=True)
class Result:
    """What became of one order this turn: acknowledged (``outcome``), or reported."""

    order_id: int
    outcome: str = ""  # evicted | gone: acknowledge
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
        acks = [{"id": r.order_id, "outcome": r.outcome} for r in results if r.done]
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
        if pod.metadata.deletion_timestamp is not None:
            with self._lock:
                evicted_here = uid in self._evicted
            return Result(order_id, outcome="evicted" if evicted_here else "gone")
        if order.get("soft"):
            return self._label(order_id, pod, order.get("run"))
        return self._evict(order_id, pod)

    def _evict(self, order_id: int, pod: Any) -> Result:
        meta = pod.metadata
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=meta.name, namespace=meta.namespace),
            delete_options=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid=meta.uid)
            ),
        )
        try:
            self.core.create_namespaced_pod_eviction(
                meta.name, meta.namespace, body, _request_timeout=(5, 30)
            )
        except ApiException as error:
            if error.status == 404:
                return Result(order_id, outcome="gone")
            if error.status == 409:  # the uid precondition failed: another pod has the name
                return Result(order_id, outcome="gone")
            status = "blocked" if error.status == 429 else "failed"
            return self._retry(order_id, status, _status_message(error), error.status)
        except Exception as error:  # the cluster could not be reached: retry
            return self._retry(order_id, "failed", f"{type(error).__name__}: {error}", None)
        with self._lock:
            self._evicted.add(meta.uid)
            self.evictions += 1
        logger.info("evicted %s/%s (order %s)", meta.namespace, meta.name, order_id)
        return Result(order_id, outcome="evicted")

    def _label(self, order_id: int, pod: Any, run: Any) -> Result:
        meta = pod.metadata
        if (meta.labels or {}).get(PREEMPTED_LABEL) != "true":
            patch = {
                "metadata": {
                    "labels": {PREEMPTED_LABEL: "true"},
                    "annotations": {RUN_ANNOTATION: str(run or "")},
                }
            }
            try:
                self.core.patch_namespaced_pod(
                    meta.name, meta.namespace, patch, _request_timeout=(5, 30)
                )
            except ApiException as error:
                if error.status == 404:
                    return Result(order_id, outcome="gone")
                return self._retry(order_id, "failed", _status_message(error), error.status)
            except Exception as error:
                return self._retry(order_id, "failed", f"{type(error).__name__}: {error}", None)
            with self._lock:
                self._evicted.add(meta.uid)
        return Result(
            order_id,
            status="waiting",
            reason=f"labelled {PREEMPTED_LABEL}=true; waiting for its owner to delete it",
        )

    def _retry(self, order_id: int, status: str, reason: str, code: int | None) -> Result:
        with self._lock:
            _, attempts = self._backoff.get(order_id, (0.0, 0))
            attempts += 1
            self._backoff[order_id] = (time.monotonic() + min(MAX_BACKOFF, 2.0**attempts), attempts)
        logger.info("order %s %s: %s", order_id, status, reason)
        return Result(order_id, status=status, reason=reason, code=code)


def _status_message(error: ApiException) -> str:
    """The message of the ``Status`` the API server answered, else its reason phrase."""
    try:
        status = json.loads(error.body or "")
    except (TypeError, ValueError):
        status = None
    if isinstance(status, dict) and status.get("message"):
        return f"{error.status}: {status['message']}"
    return f"{error.status}: {error.reason}"
