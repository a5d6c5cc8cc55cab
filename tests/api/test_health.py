"""``/healthz`` (liveness) and ``/readyz`` (readiness of the whole loop), and ``manage.py readyz``.

Heartbeats are written through the services, at the moment the test needs (time-machine), so an
age is a fact of the data, never of how fast the test ran. The broker checks talk to the real
Redis of the test settings, a port where nothing listens, and a real SQLite file.
"""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.observability.health import CHECKS
from scheduler_admin.queues.models import Partition
from scheduler_admin.system.models import ProcessKind
from scheduler_admin.system.services import record_heartbeat as record_process

pytestmark = pytest.mark.django_db


def readyz() -> tuple[int, dict]:
    response = APIClient().get("/readyz")
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"].startswith("max-age=0")
    return response.status_code, response.json()


def beat_and_worker(ago: float = 0) -> None:
    """Beat's and the enforcement worker's heartbeats, ``ago`` seconds ago."""
    with time_machine.travel(timezone.now() - timedelta(seconds=ago), tick=False):
        record_process("beat@host-a", ProcessKind.BEAT)
        record_process("celery@host-a", ProcessKind.WORKER)


@pytest.fixture
def partition() -> Partition:
    return Partition.objects.create(name="default")


def agent(partition: Partition, name: str, *, ago: float, pushed_ago: float | None = None) -> None:
    now = timezone.now()
    with time_machine.travel(now - timedelta(seconds=ago), tick=False):
        pushed = now - timedelta(seconds=pushed_ago) if pushed_ago is not None else None
        record_heartbeat(
            partition, Heartbeat(name=name, started_at=now, last_push_at=pushed), actor=None
        )


def test_healthz_stays_liveness_whatever_the_loop_does() -> None:
    """No heartbeat at all, yet /healthz is 200: it says the web process and its database
    answer, nothing more."""
    response = APIClient().get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_ready_when_the_database_broker_beat_and_worker_answer() -> None:
    beat_and_worker(ago=3)
    status, body = readyz()
    assert status == 200, body
    assert body["status"] == "ready"
    assert list(body["checks"]) == list(CHECKS)
    assert all(check["status"] == "ok" for check in body["checks"].values()), body
    assert body["checks"]["beat"]["process"] == "beat@host-a"
    assert 3 <= body["checks"]["beat"]["age_seconds"] < 60
    assert body["checks"]["worker"]["process"] == "celery@host-a"
    assert body["checks"]["broker"] == {"status": "ok", "transport": "redis"}
    # Without a webhook URL there is nothing to deliver: its worker is shown, never required.
    assert body["checks"]["webhook_worker"] == {
        "status": "ok", "max_age_seconds": 120, "required": False,
    }  # fmt: skip
    assert "problems" not in body


def test_not_ready_names_each_missing_heartbeat() -> None:
    status, body = readyz()
    assert status == 503
    assert body["status"] == "not_ready"
    assert body["problems"] == [
        "beat: no heartbeat recorded yet",
        "worker: no heartbeat recorded yet",
    ]
    assert body["checks"]["database"]["status"] == "ok"


def test_old_heartbeats_are_named_with_their_age_and_the_setting(settings) -> None:
    settings.READY_BEAT_MAX_AGE = 60
    settings.READY_WORKER_MAX_AGE = 120
    beat_and_worker(ago=90)
    status, body = readyz()
    assert status == 503
    [problem] = body["problems"]
    assert problem.startswith("beat: beat@host-a sent no heartbeat for 9")
    assert problem.endswith(" s (READY_BEAT_MAX_AGE=60)")
    assert body["checks"]["worker"]["status"] == "ok"  # 90 s is within its 120
    beat_and_worker(ago=0)
    assert readyz()[0] == 200  # the youngest heartbeat of each kind counts


def test_the_webhook_worker_is_required_once_webhooks_are_configured(settings) -> None:
    settings.EVICTION_WEBHOOK_URL = "http://127.0.0.1:9/evictions"
    beat_and_worker()
    status, body = readyz()
    assert status == 503
    assert body["problems"] == ["webhook_worker: no heartbeat recorded yet"]
    record_process("webhooks@host-a", ProcessKind.WEBHOOK_WORKER)
    status, body = readyz()
    assert status == 200, body
    assert body["checks"]["webhook_worker"]["process"] == "webhooks@host-a"


def test_a_stale_agent_is_named_and_a_retired_one_forgotten(partition, settings) -> None:
    settings.STALE_AGENT_SECONDS = 60
    settings.READY_AGENT_FORGET_SECONDS = 3600
    beat_and_worker()
    agent(partition, "agent-live", ago=5, pushed_ago=7)
    agent(partition, "agent-silent", ago=300, pushed_ago=310)
    agent(partition, "agent-retired", ago=7200)
    status, body = readyz()
    assert status == 503
    [problem] = body["problems"]
    assert problem.startswith("agents: no heartbeat for 60 s or more (STALE_AGENT_SECONDS) from ")
    assert "default/agent-silent (30" in problem and "agent-live" not in problem
    listed = {entry["name"]: entry for entry in body["checks"]["agents"]["agents"]}
    assert set(listed) == {"agent-live", "agent-silent"}
    assert listed["agent-live"]["partition"] == "default"
    assert 7 <= listed["agent-live"]["last_push_age_seconds"] < 60
    assert 300 <= listed["agent-silent"]["heartbeat_age_seconds"] < 400
    settings.READY_AGENT_FORGET_SECONDS = 0  # every agent ever seen
    status, body = readyz()
    assert "agent-retired" in body["problems"][0]


def test_an_agent_that_never_pushed_is_listed_without_a_push_age(partition) -> None:
    beat_and_worker()
    agent(partition, "agent-new", ago=1)
    status, body = readyz()
    assert status == 200, body
    [entry] = body["checks"]["agents"]["agents"]
    assert entry["last_push_age_seconds"] is None


def test_an_unreachable_broker_is_named_without_its_address_or_password(settings) -> None:
    settings.CELERY_BROKER_URL = "redis://:s3cret-pass@127.0.0.1:1/0"  # nothing listens on 1
    beat_and_worker()
    status, body = readyz()
    assert status == 503
    assert body["problems"] == ["broker: the broker does not answer"]
    assert body["checks"]["broker"]["transport"] == "redis"
    text = json.dumps(body)
    assert "s3cret" not in text and "127.0.0.1" not in text


def test_the_embedded_sqlite_broker_counts_when_its_file_opens(settings, tmp_path: Path) -> None:
    path = tmp_path / "celery-broker.sqlite3"
    settings.CELERY_BROKER_URL = f"sqla+sqlite:///{path}"
    beat_and_worker()
    status, body = readyz()
    assert (status, body["problems"]) == (503, ["broker: the broker does not answer"])
    assert body["checks"]["broker"]["transport"] == "sqla"
    with sqlite3.connect(path) as db:  # what kombu does when the first worker connects
        db.execute("CREATE TABLE kombu_queue (id INTEGER PRIMARY KEY)")
    assert readyz()[0] == 200


def test_readyz_tells_names_and_ages_only(partition) -> None:
    """No sign-in, so nothing beyond names, ages and the thresholds."""
    beat_and_worker()
    agent(partition, "agent-a", ago=1, pushed_ago=2)
    _, body = readyz()
    allowed = {
        "status", "problem", "transport", "process", "age_seconds", "max_age_seconds",
        "required", "stale_after_seconds", "agents",
    }  # fmt: skip
    for check in body["checks"].values():
        assert set(check) <= allowed, check
    [entry] = body["checks"]["agents"]["agents"]
    assert set(entry) == {"partition", "name", "heartbeat_age_seconds", "last_push_age_seconds"}


def test_readyz_answers_get_only() -> None:
    assert APIClient().post("/readyz").status_code == 405


def test_the_readyz_command_checks_what_it_is_asked() -> None:
    """What the compose health check of beat runs: exit status 1 (CommandError) until beat's
    heartbeat is there, then 0 with the check's JSON, whatever the other checks would say."""
    with pytest.raises(CommandError, match="beat: no heartbeat recorded yet"):
        call_command("readyz", "--check", "beat", stdout=io.StringIO())
    record_process("beat@host-a", ProcessKind.BEAT)
    out = io.StringIO()
    call_command("readyz", "--check", "beat", stdout=out)  # no worker, but not asked about
    body = json.loads(out.getvalue())
    assert body["status"] == "ready" and list(body["checks"]) == ["beat"]
    with pytest.raises(CommandError, match="worker: no heartbeat recorded yet"):
        call_command("readyz", stdout=io.StringIO())
