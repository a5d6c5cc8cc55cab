"""The agent's /healthz (the loop turns) and /readyz (cluster listed, product answering), over
real HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from scheduler_admin_agent.health import (
    LOOP_STALE_SECONDS,
    PRODUCT_STALE_SECONDS,
    HealthServer,
    Vitals,
)


class Agentish:
    """What the health server reads from an agent."""

    def __init__(self) -> None:
        self.vitals = Vitals()
        self.listed = False
        self.error = ""


@pytest.fixture
def agent() -> Iterator[tuple[Agentish, int]]:
    state = Agentish()
    server = HealthServer(
        "127.0.0.1:0", state.vitals, listed=lambda: state.listed, last_error=lambda: state.error
    )
    server.start()
    try:
        yield state, server.port
    finally:
        server.stop()


def get(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_turning_loop_is_alive_and_a_stuck_one_is_not(agent) -> None:
    state, port = agent
    state.vitals.turned()
    status, body = get(port, "/healthz")
    assert (status, body["status"], body["checks"]["loop"]["ok"]) == (200, "alive", True)
    state.vitals.last_turn = time.monotonic() - LOOP_STALE_SECONDS - 1
    status, body = get(port, "/healthz")
    assert (status, body["status"]) == (503, "unhealthy")
    assert body["checks"]["loop"]["detail"].startswith("last turn ")


def test_ready_once_the_cluster_is_listed_and_the_product_answers(agent) -> None:
    state, port = agent
    state.vitals.turned()
    state.error = "heartbeat: HTTP 401: invalid token"
    status, body = get(port, "/readyz")
    assert status == 503
    assert body["checks"]["cluster"] == {"ok": False, "detail": "not listed yet"}
    assert body["checks"]["product"]["ok"] is False
    assert "invalid token" in body["checks"]["product"]["detail"]
    state.listed = True
    state.vitals.heartbeat_answered()
    status, body = get(port, "/readyz")
    assert (status, body["status"]) == (200, "ready")
    # The product stops answering: not ready, but still alive (a restart would not help).
    state.vitals.last_heartbeat_ok = time.monotonic() - PRODUCT_STALE_SECONDS - 1
    assert get(port, "/readyz")[0] == 503
    assert get(port, "/healthz")[0] == 200


def test_other_paths_are_404(agent) -> None:
    _, port = agent
    assert get(port, "/metrics")[0] == 404
