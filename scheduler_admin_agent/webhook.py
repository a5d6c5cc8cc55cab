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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from scheduler_admin_agent.evictions import Evictor

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Scheduler-Signature"
#: Largest order body accepted (an order is a few hundred bytes).
BODY_MAX = 64 * 1024


def signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookServer:
    def __init__(self, listen: str, secret: str, evictor: Evictor, partition: str) -> None:
        host, _, port = listen.rpartition(":")
        self.secret = secret
        self.evictor = evictor
        self.partition = partition
        # One order at a time: the evictor's bookkeeping is not shared between threads.
        self._lock = threading.Lock()
        handler = _handler(self)
        self.server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), handler)  # noqa: S104
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="webhook", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

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


def _handler(owner: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            if self.path.rstrip("/") != "/evictions":
                self._answer(404, {"error": "POST /evictions"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > BODY_MAX:
                self._answer(413, {"error": "too large"})
                return
            body = self.rfile.read(length)
            try:
                status, answer = owner.handle(body, self.headers.get(SIGNATURE_HEADER, ""))
            except Exception as error:  # the product retries; say what failed
                logger.warning("webhook order failed: %s", error)
                status, answer = 503, {"error": f"{type(error).__name__}: {error}"}
            self._answer(status, answer)

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            logger.debug("webhook: " + format, *args)

    return Handler
