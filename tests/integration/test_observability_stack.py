"""Metrics, readiness and JSON logs of the real stack: gunicorn, a Celery worker and beat on
PostgreSQL and Redis, started as the other process tests start them (``test_live_loop.LiveLoop``).

One quota run really happens (beat sweeps, the worker plans and preempts), the cluster
acknowledges its eviction orders over the REST API, and ``/metrics`` is scraped from gunicorn: the
counters the worker's pool process wrote and the histogram a gunicorn worker wrote add up in one
answer (prometheus-client's multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``). The processes log
with ``LOG_FORMAT=json``; the test reads their real lines. Then beat is stopped and ``/readyz``
names it.

Celery traffic goes to a Redis database of this module's own (``OBSERVABILITY_REDIS_DB``).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from scheduler_admin.accounts.services import create_user, issue_token
from scheduler_admin.enforcement.models import EvictionOrder
from tests.integration.test_live_loop import (
    BATCH_CONFIG,
    BATCH_TASKS,
    LiveLoop,
    make_partition,
    pending_timer,
    set_max,
    wait_for_finished_run,
)
from tests.support.processes import (
    flush_redis_db,
    free_port,
    isolated_redis_url,
    venv_executable,
    wait_until,
)

pytestmark = pytest.mark.redis

#: Redis database of these tests (13: live loop, 14: compose, 11: agent).
OBSERVABILITY_REDIS_DB = 4
METRICS_TOKEN = "observability-stack-token-0123456789abcdef"
HOSTNAME = socket.gethostname()


class ObservedStack(LiveLoop):
    """``LiveLoop`` whose processes share a metrics directory, log JSON and let the test read
    ``/metrics`` with a token; plus gunicorn."""

    def __init__(self, redis_url: str, tmp_path: Path) -> None:
        super().__init__(redis_url, tmp_path)
        self.metrics_dir = tmp_path / "metrics"
        self.metrics_dir.mkdir()  # empty: the stack starts here
        self.port = free_port()
        self.observed = {
            "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
            "METRICS_TOKEN": METRICS_TOKEN,
            "LOG_FORMAT": "json",
            "READY_BEAT_MAX_AGE": "15",
            "XDG_RUNTIME_DIR": str(tmp_path),  # gunicorn's control socket, per test
        }

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return super().env({**self.observed, **(extra or {})})

    def web(self) -> None:
        args = [
            venv_executable("gunicorn"), "scheduler_admin.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", "2", "--timeout", "120",
        ]  # fmt: skip
        process = self._start("web", args, None)
        wait_until(
            lambda: self.get("/healthz")[0] == 200, 30, message="web never answered",
            watch=[process],
        )  # fmt: skip

    def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> tuple[int, bytes, dict[str, str]]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, error.read(), dict(error.headers)
        except OSError:
            return 0, b"", {}

    def get(self, path: str, **headers: str) -> tuple[int, bytes, dict[str, str]]:
        return self.request("GET", path, headers=headers)

    def scrape(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        status, body, _ = self.get("/metrics", Authorization=f"Bearer {METRICS_TOKEN}")
        assert status == 200, body
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(body.decode())
            for sample in family.samples
        }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of the log as a JSON object (a failure names the first line that is not)."""
    lines = []
    for line in text.splitlines():
        if line.strip():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pytest.fail(f"not a JSON line: {line!r}")
    return lines


@pytest.fixture
def stack(transactional_db: None, tmp_path: Path) -> Iterator[ObservedStack]:
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    url = isolated_redis_url(settings.REDIS_URL, OBSERVABILITY_REDIS_DB)
    flush_redis_db(url)
    stack = ObservedStack(url, tmp_path)
    try:
        yield stack
    finally:
        stack.close()


def test_a_real_run_moves_the_counters_that_gunicorn_serves_and_the_logs_name_it(
    stack: ObservedStack,
) -> None:
    """Over 20 s (about 28 s idle): worker, beat and gunicorn start, /readyz waits for beat's
    and the worker's first heartbeats, and the run waits for a quota timer and beat's 5 s
    sweep, all in real time."""
    make_partition(BATCH_CONFIG, BATCH_TASKS)
    worker = stack.worker("worker")
    beat = stack.beat()
    stack.web()
    wait_until(
        lambda: stack.get("/readyz")[0] == 200, 40, message="never ready", watch=stack.running()
    )
    user = create_user("cluster-agent", role="operator", actor=None).user
    token = {"Authorization": f"Token {issue_token(user, actor=None)}"}
    before = stack.scrape()
    assert value(before, "scheduler_admin_runs_total", partition="default", policy="quota",
                 outcome="complete") == 0  # fmt: skip

    # 1. A quota lowered: beat's sweep fires the timer, the worker runs it.
    set_max("root.batch", 25)
    run = wait_for_finished_run(stack, pending_timer("root.batch"), 30)
    assert run.outcome == "complete"
    victims = run.victims.count()
    assert victims == 6
    samples = stack.scrape()
    assert value(samples, "scheduler_admin_runs_total", partition="default", policy="quota",
                 outcome="complete") == 1  # fmt: skip
    assert value(samples, "scheduler_admin_victims_total", partition="default", policy="quota",
                 queue="root.batch", reason="quota_timer") == victims  # fmt: skip
    assert value(samples, "scheduler_admin_run_duration_seconds_count", partition="default",
                 policy="quota") == 1  # fmt: skip
    assert value(samples, "scheduler_admin_eviction_orders_pending", partition="default",
                 cluster_status="none") == victims  # fmt: skip

    # 2. The cluster acknowledges the orders over the API (a gunicorn worker counts them).
    orders = [{"id": pk} for pk in EvictionOrder.objects.values_list("pk", flat=True)]
    status, body, _ = stack.request(
        "POST", "/api/v1/partitions/default/evictions/acknowledge",
        headers={**token, "X-Request-ID": "obs-ack-1"}, body={"orders": orders},
    )  # fmt: skip
    assert status == 200, body
    samples = stack.scrape()
    assert value(samples, "scheduler_admin_eviction_ack_seconds_count", partition="default",
                 outcome="evicted") == victims  # fmt: skip
    assert value(samples, "scheduler_admin_eviction_orders_pending", partition="default",
                 cluster_status="none") == 0  # fmt: skip
    assert value(samples, "scheduler_admin_heartbeat_age_seconds", kind="beat") < 60
    # Counted by two processes of two programs, added up by the scrape.
    writers = {path.name.split("_", 1)[1] for path in stack.metrics_dir.glob("*.db")}
    assert len(writers) >= 2, writers
    assert all(writer.startswith(f"{HOSTNAME[:64]}-") for writer in writers)

    # 3. The worker's real log lines (each one a JSON object: no start banner in this format)
    # name the run, its partition and its task.
    [finished] = [
        line for line in json_lines(worker.log_text())
        if line["message"].startswith(f"run {run.pk} (quota, default root.batch): finished")
    ]  # fmt: skip
    assert finished["run_id"] == run.pk and finished["partition"] == "default"
    assert finished["task"] == "scheduler_admin.enforcement.tasks.execute_run"
    assert finished["level"] == "INFO" and finished["logger"] == "scheduler_admin.enforcement.tasks"

    # 4. gunicorn's real lines: a request's 404 names its id, user and partition; every line
    # of the web process is one JSON object (gunicorn's own too).
    status, _, headers = stack.get(
        "/api/v1/partitions/default/queues/root.nope/", **token, **{"X-Request-ID": "obs-req-7"}
    )
    assert status == 404 and headers["X-Request-ID"] == "obs-req-7"
    web = next(process for process in stack.processes if process.name == "web")
    wait_until(lambda: "obs-req-7" in web.log_text(), 10, message="the 404 was never logged")
    lines = json_lines(web.log_text())
    [not_found] = [line for line in lines if line.get("request_id") == "obs-req-7"]
    assert not_found["logger"] == "django.request" and not_found["level"] == "WARNING"
    assert (not_found["user"], not_found["partition"]) == ("cluster-agent", "default")
    assert any(line["logger"] == "gunicorn.error" for line in lines)

    # 5. Beat stops: /readyz names it (its own heartbeat), the workers are still fine.
    stack.stop([beat])
    wait_until(
        lambda: stack.get("/readyz")[0] == 503, 40, message="/readyz never noticed beat stopped",
        watch=[worker],
    )  # fmt: skip
    _, body, _ = stack.get("/readyz")
    report = json.loads(body)
    [problem] = report["problems"]
    assert problem.startswith(f"beat: beat@{HOSTNAME} sent no heartbeat for ")
    assert problem.endswith("(READY_BEAT_MAX_AGE=15)")
    assert report["checks"]["worker"]["status"] == "ok"
