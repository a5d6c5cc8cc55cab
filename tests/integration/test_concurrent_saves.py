"""Concurrent saves through the real web server: no change is ever silently lost.

Two admins (or two automation clients) save at the same instant: PATCHes to different queues of
one partition, a queue PATCH and a partition-settings PATCH, a new queue and an edit, two edits
of the same queue. Each race is run many times with both requests released by a barrier against
gunicorn (the compose ``web`` command, several worker processes) on PostgreSQL. The rule
(``queues.services``): every save reads, edits, validates and writes under the partition lock,
so two changes either both land, or one of them is refused with 409 (a stale version) — never
both answered 200 with one of them reverted by the other.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from scheduler_admin.queues.models import Partition, Queue
from tests.api.conftest import client_for
from tests.integration.test_compose_stack import COMPOSE_FILE, CONTAINER_BIND, native_command
from tests.support.factories.partitions import saved_partition
from tests.support.processes import (
    ManagedProcess,
    free_port,
    test_database_env,
    wait_until,
)
from tests.support.racing import release_together

TRIALS = 20
QUEUES = 2 * TRIALS + 2
PARTITION = "race"
API = f"/api/v1/partitions/{PARTITION}"


def _config_yaml() -> str:
    children = "\n".join(
        f"          - name: q{i:02d}\n            resources: {{max: {{memory: 100G}}}}"
        for i in range(QUEUES)
    )
    return f"""
partitions:
  - name: {PARTITION}
    queues:
      - name: root
        queues:
{children}
"""


@pytest.fixture(scope="module")
def web(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """gunicorn with 4 worker processes on the test database: requests really run at once."""
    base = tmp_path_factory.mktemp("race-web")
    port = free_port()
    compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
    args = native_command(
        compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    args[args.index("--workers") + 1] = "4"
    env = test_database_env({"XDG_RUNTIME_DIR": str(base)}, redis_url=settings.REDIS_URL)
    with ManagedProcess("race-web", args, env=env, log_dir=base) as process:
        url = f"127.0.0.1:{port}"
        wait_until(
            lambda: _status(url, "GET", "/healthz") == 200,
            30,
            message="gunicorn never answered",
            watch=[process],
        )
        yield url


def _status(address: str, method: str, path: str) -> int | None:
    try:
        return _request(address, method, path, token=None)[0]
    except OSError:
        return None


def _request(
    address: str, method: str, path: str, *, token: str | None, body: Any = None
) -> tuple[int, Any]:
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    try:
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw else None)
    finally:
        connection.close()


@pytest.fixture
def admin_token(transactional_db: None) -> str:
    saved_partition(_config_yaml(), comment="race fixture")
    client = client_for("admin")
    return client._credentials["HTTP_AUTHORIZATION"].split()[1]


def race(*calls: Callable[[], tuple[int, Any]]) -> list[tuple[int | None, Any]]:
    """The calls released at the same instant; a call that raised reads ``(None, repr)``."""
    return [
        (None, repr(result)) if isinstance(result, BaseException) else result
        for result in release_together(*calls)
    ]


def _version(path: str) -> int:
    return Queue.objects.get(partition__name=PARTITION, path=path).version


def _max_gb(path: str) -> str:
    return Queue.objects.get(partition__name=PARTITION, path=path).max["memory"]


def _patch_queue(web: str, token: str, path: str, memory: str, version: int) -> Callable:
    body = {"max": {"memory": memory}, "version": version, "comment": f"{path} to {memory}"}
    return lambda: _request(web, "PATCH", f"{API}/queues/{path}/", token=token, body=body)


def test_patches_to_different_queues_at_once_both_land(web: str, admin_token: str) -> None:
    lost = []
    for trial in range(TRIALS):
        a, b = f"root.q{2 * trial:02d}", f"root.q{2 * trial + 1:02d}"
        first, second = race(
            _patch_queue(web, admin_token, a, f"{50 + trial}G", _version(a)),
            _patch_queue(web, admin_token, b, f"{70 + trial}G", _version(b)),
        )
        assert first[0] == 200 and second[0] == 200, (trial, first, second)
        saved = {a: _max_gb(a), b: _max_gb(b)}
        wanted = {a: (50 + trial) * 10**9, b: (70 + trial) * 10**9}
        if saved != wanted:
            lost.append((trial, saved, wanted))
    assert not lost, f"{len(lost)} of {TRIALS} races lost a change: {lost}"
    # Every save is its own revision on top of the other: 1 initial + 2 per trial.
    assert Partition.objects.get(name=PARTITION).revisions.count() == 1 + 2 * TRIALS


def test_a_queue_patch_racing_a_settings_patch_keeps_both(web: str, admin_token: str) -> None:
    lost = []
    for trial in range(TRIALS):
        path = f"root.q{trial:02d}"
        percent = trial % 7 + 1
        settings_body = {"miss_percent": percent, "comment": f"miss {percent}"}
        queue_call, settings_call = (
            _patch_queue(web, admin_token, path, f"{40 + trial}G", _version(path)),
            lambda body=settings_body: _request(
                web, "PATCH", f"{API}/", token=admin_token, body=body
            ),
        )
        # Alternate which request is sent first: neither order may lose the other.
        calls = (queue_call, settings_call) if trial % 2 else (settings_call, queue_call)
        results = race(*calls)
        assert all(status == 200 for status, _ in results), (trial, results)
        partition = Partition.objects.get(name=PARTITION)
        if partition.miss_percent != percent or _max_gb(path) != (40 + trial) * 10**9:
            lost.append((trial, partition.miss_percent, _max_gb(path)))
    assert not lost, f"{len(lost)} of {TRIALS} races lost a change: {lost}"


def test_creating_a_queue_while_another_is_edited_keeps_both(web: str, admin_token: str) -> None:
    lost = []
    for trial in range(TRIALS):
        path = f"root.q{trial:02d}"
        create = {"parent": "root", "name": f"new{trial:02d}", "comment": "add",
                  "max": {"memory": "10G"}}  # fmt: skip
        results = race(
            _patch_queue(web, admin_token, path, f"{30 + trial}G", _version(path)),
            lambda body=create: _request(
                web, "POST", f"{API}/queues/", token=admin_token, body=body
            ),
        )
        assert [status for status, _ in results] == [200, 201], (trial, results)
        created = Queue.objects.filter(partition__name=PARTITION, path=f"root.new{trial:02d}")
        if not created.exists() or _max_gb(path) != (30 + trial) * 10**9:
            lost.append((trial, created.exists(), _max_gb(path)))
    assert not lost, f"{len(lost)} of {TRIALS} races lost a change: {lost}"


def test_deleting_a_queue_while_settings_change_keeps_both(web: str, admin_token: str) -> None:
    lost = []
    for trial in range(TRIALS):
        path = f"root.q{QUEUES - 1 - trial:02d}"
        body = {"version": _version(path), "comment": "drop"}
        settings_body = {"ask_policy": "priority" if trial % 2 else "inter_queue",
                         "comment": "policy"}  # fmt: skip
        results = race(
            lambda body=body, path=path: _request(
                web, "DELETE", f"{API}/queues/{path}/", token=admin_token, body=body
            ),
            lambda body=settings_body: _request(
                web, "PATCH", f"{API}/", token=admin_token, body=body
            ),
        )
        assert [status for status, _ in results] == [204, 200], (trial, results)
        partition = Partition.objects.get(name=PARTITION)
        gone = not Queue.objects.filter(partition=partition, path=path).exists()
        if not gone or partition.ask_policy != settings_body["ask_policy"]:
            lost.append((trial, gone, partition.ask_policy))
    assert not lost, f"{len(lost)} of {TRIALS} races lost a change: {lost}"


def test_two_edits_of_one_queue_from_one_version_one_wins_one_gets_409(
    web: str, admin_token: str
) -> None:
    for trial in range(TRIALS):
        path = f"root.q{trial:02d}"
        version = _version(path)
        results = race(
            _patch_queue(web, admin_token, path, f"{20 + trial}G", version),
            _patch_queue(web, admin_token, path, f"{60 + trial}G", version),
        )
        statuses = sorted(status for status, _ in results)
        assert statuses == [200, 409], (trial, results)
        winner = 20 + trial if results[0][0] == 200 else 60 + trial
        assert _max_gb(path) == winner * 10**9
        assert _version(path) == version + 1
        loser = next(body for status, body in results if status == 409)
        assert loser["code"] == "stale_version" and loser["current_version"] == version + 1
