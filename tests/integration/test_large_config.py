"""The largest config the size cap allows (5 MiB, some 18,000 queues) imported through the real
web server (gunicorn, its worker timeout from ``WEB_TIMEOUT`` in ``gunicorn.conf.py``) while
other processes keep the machine's CPUs busy.

A 4.9 MiB config once outlived gunicorn's default 30 s worker timeout on a busy machine: the
worker was killed, the client got gunicorn's HTML 500, once after the config had been saved.
Now the import is fast enough for the timeout sized for it, and a request that runs past the
product's own deadline (``REQUEST_DEADLINE``, below the worker timeout) answers 503 with the
API's JSON error body and nothing saved (``scheduler_admin.base.deadlines``).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from scheduler_admin.accounts.services import create_user, issue_token
from scheduler_admin.bench.big_config import big_queues_yaml, queue_count
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.support.processes import (
    ManagedProcess,
    free_port,
    test_database_env,
    venv_executable,
    wait_until,
)

pytestmark = pytest.mark.django_db(transaction=True)

PARTITION = "big"
URL = f"/api/v1/partitions/{PARTITION}/config.yaml"
#: Processes that do nothing but burn CPU while the import runs: as many as the machine has
#: cores (at least two), so the web worker competes for every one of them.
BURNERS = max(2, os.cpu_count() or 2)
#: How long the client waits for an answer: longer than any worker timeout used here, so a
#: killed worker shows as gunicorn's answer (or a dropped connection), never as a client timeout.
CLIENT_TIMEOUT = 300


def web(tmp_path: Path, stack: ExitStack, env: dict[str, str]) -> int:
    """Start gunicorn as compose's web runs it (from the checkout, so ``gunicorn.conf.py``
    applies) with one worker; its port once it answers."""
    port = free_port()
    args = [
        venv_executable("gunicorn"), "scheduler_admin.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", "1",
    ]  # fmt: skip
    process = stack.enter_context(
        ManagedProcess(
            "web",
            args,
            env=test_database_env({"XDG_RUNTIME_DIR": str(tmp_path), **env}),
            log_dir=tmp_path / "logs",
        )
    )
    wait_until(lambda: _answers(port), 60, message="web never answered", watch=[process])
    return port


def burn_cpu(tmp_path: Path, stack: ExitStack) -> None:
    """Keep every core busy until the test ends (each burner is stopped with the stack)."""
    for number in range(BURNERS):
        stack.enter_context(
            ManagedProcess(
                f"burner-{number}",
                [sys.executable, "-c", "while True: pass"],
                env=dict(os.environ),
                log_dir=tmp_path / "logs",
            )
        )


def _answers(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


def put(
    port: int, path: str, body: bytes, key: str, *, trickle_seconds: float = 0
) -> tuple[int, str, Any]:
    """``PUT`` a YAML body; ``(status, content type, parsed JSON or the raw text)``.

    With ``trickle_seconds`` the body is sent in pieces over that long, as a slow client
    sends it: the server reads it inside the request, after its deadline started."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    connection.putrequest("PUT", path)
    for name, value in (
        ("Authorization", f"Token {key}"),
        ("Content-Type", "application/yaml"),
        ("Content-Length", str(len(body))),
    ):
        connection.putheader(name, value)
    connection.endheaders()
    pieces = 20 if trickle_seconds else 1
    step = -(-len(body) // pieces)
    for start in range(0, len(body), step):
        connection.send(body[start : start + step])
        if trickle_seconds:
            time.sleep(trickle_seconds / pieces)  # the slow client itself, not a wait
    response = connection.getresponse()
    kind = response.getheader("Content-Type") or ""
    raw = response.read()
    connection.close()
    return response.status, kind, json.loads(raw) if kind.startswith("application/json") else raw


@pytest.fixture
def admin_key(transactional_db: None) -> str:
    user = create_user("config-admin", role="admin", actor=None).user
    return issue_token(user, actor=None)


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def partition_state() -> tuple[int | None, int, int]:
    """(version, queues, revisions) of the partition; (None, 0, 0) when it does not exist."""
    partition = Partition.objects.filter(name=PARTITION).first()
    if partition is None:
        return None, 0, 0
    return (
        partition.version,
        Queue.objects.filter(partition=partition).count(),
        ConfigRevision.objects.filter(partition=partition).count(),
    )


def test_a_5_mib_import_on_a_busy_machine_answers_json_and_saves_it_whole(
    admin_key: str, stack: ExitStack, tmp_path: Path
) -> None:
    """Two imports of some 18,000 queues each under full CPU load: about a minute on a busy
    two-core machine, which is the point (the worker timeout is the default one)."""
    first = big_queues_yaml(PARTITION, settings.CONFIG_MAX_BYTES)
    assert len(first) > 4.9 * 2**20 and len(first) <= settings.CONFIG_MAX_BYTES
    port = web(tmp_path, stack, {})
    burn_cpu(tmp_path, stack)

    status, kind, body = put(port, f"{URL}?comment=the+whole+tree", first.encode(), admin_key)
    assert (status, kind) == (201, "application/json"), body
    queues = queue_count(first)
    assert partition_state() == (body["version"], queues, 1)

    # Every leaf changed: the replace is written whole, in one revision.
    second = big_queues_yaml(PARTITION, settings.CONFIG_MAX_BYTES, leaf_memory="17Gi")
    query = f"?version={body['version']}&comment=every+leaf"
    status, kind, body = put(port, URL + query, second.encode(), admin_key)
    assert (status, kind) == (200, "application/json"), body
    assert partition_state() == (body["version"], queues, 2)
    leaves = Queue.objects.filter(partition__name=PARTITION, depth=2)
    assert {row.max["memory"] for row in leaves} == {17 * 2**30}


def test_past_the_deadline_the_answer_is_json_and_nothing_is_saved(
    admin_key: str, stack: ExitStack, tmp_path: Path
) -> None:
    """A client that takes two seconds to send the body, against a deadline of one second:
    the request stops at its first check, answers 503 with the error body, and saves nothing
    (neither a new partition nor a replacement). No CPU burners: the slow client alone takes
    the request past the deadline, and burners here only slowed the rest of a parallel run."""
    text = big_queues_yaml(PARTITION, settings.CONFIG_MAX_BYTES)
    port = web(tmp_path, stack, {"WEB_TIMEOUT": "30", "REQUEST_DEADLINE": "1"})

    status, kind, body = put(port, f"{URL}?comment=x", text.encode(), admin_key, trickle_seconds=2)
    assert (status, kind) == (503, "application/json"), body
    assert body["code"] == "timeout" and set(body) >= {"detail", "errors"}
    assert "REQUEST_DEADLINE" in body["detail"] and "nothing was saved" in body["detail"]
    assert partition_state() == (None, 0, 0)

    small = "partitions:\n  - name: big\n    queues: [{name: root, queues: [{name: a}]}]\n"
    [config] = parse_queues_yaml(small, settings_for=services.settings_for_import)
    services.save_partition_config(config, actor=None, comment="small")
    before = partition_state()
    query = f"?version={before[0]}&comment=replace"
    status, kind, body = put(port, URL + query, text.encode(), admin_key, trickle_seconds=2)
    assert (status, kind) == (503, "application/json"), body
    assert partition_state() == before
