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

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler_admin_agent.serving import JsonServer

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


class HealthServer(JsonServer):
    def __init__(
        self,
        listen: str,
        vitals: Vitals,
        listed: Callable[[], bool],
        last_error: Callable[[], str],
    ) -> None:
        self.vitals, self.listed, self.last_error = vitals, listed, last_error
        super().__init__(listen, "health", self._handle, body_max=0)

    def _handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        if method != "GET":
            return 405, {"error": "GET /healthz or /readyz"}
        return self.answer(path.split("?", 1)[0])

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        if path == "/healthz":
            ok, checks = liveness(self.vitals)
        elif path == "/readyz":
            ok, checks = readiness(self.vitals, self.listed, self.last_error)
        else:
            return 404, {"error": "GET /healthz or /readyz"}
        status = ("alive" if path == "/healthz" else "ready") if ok else "unhealthy"
        return (200 if ok else 503), {"status": status, "checks": checks}
