"""The agent's own health, for Kubernetes probes and compose (``--health-listen HOST:PORT``).

- ``GET /healthz`` (liveness): 200 while the main loop keeps turning (a turn within
  ``LOOP_STALE_SECONDS``), else 503. A loop stuck for that long will not recover by itself;
  restarting the container is the cure. A product that cannot be reached is *not* a liveness
  failure: restarting the agent would not bring the product back.
- ``GET /readyz`` (readiness): 200 once every kind of object has been listed from the cluster
  and the product answered a heartbeat within ``PRODUCT_STALE_SECONDS``; else 503 naming what
  is wrong. Nothing routes traffic to the agent, so readiness is for people and dashboards
  (``kubectl get pods`` shows it), like the product's own ``/readyz``.

Both answer JSON: ``{"status": ..., "checks": {name: {"ok": bool, "detail": str}}}``; no
secret is in them (names and ages only).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)

#: A main loop that has not turned for this long is stuck (a turn is at most a few seconds,
#: plus a push or an eviction round of up to two minutes' deadline).
LOOP_STALE_SECONDS = 300.0
#: A product that has not answered a heartbeat for this long makes the agent not ready.
PRODUCT_STALE_SECONDS = 60.0


class Vitals:
    """What the main loop reports (monotonic times), read by the health server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.last_turn: float | None = None
        self.last_heartbeat_ok: float | None = None

    def turned(self) -> None:
        with self._lock:
            self.last_turn = time.monotonic()

    def heartbeat_answered(self) -> None:
        with self._lock:
            self.last_heartbeat_ok = time.monotonic()

    def snapshot(self) -> tuple[float, float | None, float | None]:
        with self._lock:
            return time.monotonic(), self.last_turn, self.last_heartbeat_ok


def _age(now: float, moment: float | None) -> str:
    return "never" if moment is None else f"{now - moment:.0f}s ago"


def liveness(vitals: Vitals) -> tuple[bool, dict[str, Any]]:
    now, turn, _ = vitals.snapshot()
    reference = turn if turn is not None else vitals.started
    ok = now - reference < LOOP_STALE_SECONDS
    return ok, {"loop": {"ok": ok, "detail": f"last turn {_age(now, turn)}"}}


def readiness(
    vitals: Vitals, listed: Callable[[], bool], last_error: Callable[[], str]
) -> tuple[bool, dict[str, Any]]:
    now, _, beat = vitals.snapshot()
    alive, checks = liveness(vitals)
    cluster_ok = listed()
    checks["cluster"] = {
        "ok": cluster_ok,
        "detail": "nodes, pods and budgets listed" if cluster_ok else "not listed yet",
    }
    product_ok = beat is not None and now - beat < PRODUCT_STALE_SECONDS
    detail = f"last heartbeat answered {_age(now, beat)}"
    if not product_ok and last_error():
        detail += f"; last error: {last_error()[:300]}"
    checks["product"] = {"ok": product_ok, "detail": detail}
    return alive and cluster_ok and product_ok, checks


class HealthServer:
    def __init__(
        self,
        listen: str,
        vitals: Vitals,
        listed: Callable[[], bool],
        last_error: Callable[[], str],
    ) -> None:
        host, _, port = listen.rpartition(":")
        self.vitals, self.listed, self.last_error = vitals, listed, last_error
        address = (host or "0.0.0.0", int(port))  # noqa: S104 - probes come from the kubelet
        self.server = ThreadingHTTPServer(address, _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        if path == "/healthz":
            ok, checks = liveness(self.vitals)
        elif path == "/readyz":
            ok, checks = readiness(self.vitals, self.listed, self.last_error)
        else:
            return 404, {"error": "GET /healthz or /readyz"}
        status = ("alive" if path == "/healthz" else "ready") if ok else "unhealthy"
        return (200 if ok else 503), {"status": status, "checks": checks}


def _handler(owner: HealthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = owner.answer(self.path.split("?", 1)[0])
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            logger.debug("health: " + format, *args)

    return Handler
