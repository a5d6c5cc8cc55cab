"""Evictions by webhook: receive the product's signed eviction orders instead of polling.

Set the product's ``EVICTION_WEBHOOK_URL`` to ``http://<agent>:<port>/evictions`` and its
``EVICTION_WEBHOOK_SECRET`` to the secret the agent reads from ``--webhook-secret-file``. Each
order arrives as a POST whose body is signed with HMAC-SHA256 (``X-Scheduler-Signature:
sha256=<hex>``); a body with a wrong or missing signature is refused (401) and nothing is done.

The order is carried out at once, exactly as a polled one (``evictions.Evictor``), and the
answer tells the product what happened: 200 once the pod is evicted or gone (the agent also
acknowledges the order through the API, with the outcome), 503 while it cannot be done yet
(a budget forbids it, the cluster failed, a soft eviction waits for the owner), which the
product retries with its backoff. The refusal is reported on the order as when polling.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from collections.abc import Mapping

from scheduler_admin_agent.evictions import Evictor
from scheduler_admin_agent.serving import JsonServer

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Scheduler-Signature"
#: Largest order body accepted (an order is a few hundred bytes).
BODY_MAX = 64 * 1024


def signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookServer(JsonServer):
    def __init__(self, listen: str, secret: str, evictor: Evictor, partition: str) -> None:
        self.secret = secret
        self.evictor = evictor
        self.partition = partition
        # One order at a time: the evictor's bookkeeping is not shared between threads.
        self._lock = threading.Lock()
        super().__init__(listen, "webhook", self._serve, body_max=BODY_MAX)

    def _serve(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict]:
        if method != "POST" or path.rstrip("/") != "/evictions":
            return 404, {"error": "POST /evictions"}
        return self.handle(body, headers.get(SIGNATURE_HEADER, ""))

    def handle(self, body: bytes, signed: str) -> tuple[int, dict]:
        if not hmac.compare_digest(signature(body, self.secret), signed or ""):
            return 401, {"error": "bad or missing signature"}
        try:
            order = json.loads(body)
            order = {
                "id": int(order["order_id"]),
                "allocation_id": str(order["allocation_id"]),
                "soft": bool(order.get("soft")),
                "run": order.get("run_id"),
                "partition": order.get("partition"),
            }
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "not an eviction order"}
        if order["partition"] != self.partition:
            return 400, {"error": f"order of partition {order['partition']!r}, not ours"}
        with self._lock:
            if not self.evictor.cache.ready:
                return 503, {"error": "the agent has not listed the cluster yet"}
            result = self.evictor.carry_out(order)
            self.evictor.send([result])
        logger.info(
            "order %s by webhook: %s",
            order["id"],
            result.outcome or f"{result.status} ({result.reason})",
        )
        if result.done:
            return 200, {"outcome": result.outcome}
        return 503, {"status": result.status, "reason": result.reason}
