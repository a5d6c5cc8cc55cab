"""Request ids, and the context every log line of a request carries (``LOG_FORMAT=json``).

The log lines are the real ones Django and the product write while answering (``django.request``
logs every 4xx answer); they are captured with the same filter and formatter the console handler
uses. Lines of real gunicorn and Celery processes:
``tests/integration/test_observability_stack.py``.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from scheduler_admin.base.logging import ContextFilter, JsonFormatter, log_context
from scheduler_admin.enforcement.log_context import run_context
from tests.api import test_enforcement_api as enforcement
from tests.api.conftest import client_for
from tests.support.processes import PROJECT_DIR

pytestmark = pytest.mark.django_db

partition = enforcement.partition


@pytest.fixture
def capture() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def json_lines(stream: io.StringIO) -> list[dict]:
    text = stream.getvalue()
    assert text.endswith("\n") or not text
    return [json.loads(line) for line in text.splitlines()]


def test_every_answer_carries_a_request_id() -> None:
    first = APIClient().get("/healthz")["X-Request-ID"]
    second = APIClient().get("/healthz")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second
    # Refused before any view ran (the sign-in redirect) still carries one.
    assert re.fullmatch(r"[0-9a-f]{32}", APIClient().get("/")["X-Request-ID"])


@pytest.mark.parametrize("given", ["abc-123", "req.1:2_3", "X" * 128])
def test_a_sane_request_id_from_the_client_is_kept(given: str) -> None:
    assert APIClient().get("/healthz", HTTP_X_REQUEST_ID=given)["X-Request-ID"] == given


@pytest.mark.parametrize("given", ["", "has space", "a\tb", "X" * 129, '{"json": 1}', "é"])
def test_any_other_request_id_is_replaced(given: str) -> None:
    kept = APIClient().get("/healthz", HTTP_X_REQUEST_ID=given)["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", kept), kept


def test_a_requests_log_lines_carry_its_id_user_and_partition(partition, capture) -> None:
    """A token user asks for a queue that does not exist: Django logs the 404 (after the
    middleware chain returned), with the request's context."""
    client = client_for("viewer")
    response = client.get(
        "/api/v1/partitions/default/queues/root.nope/", HTTP_X_REQUEST_ID="trace-42"
    )
    assert response.status_code == 404
    [line] = [line for line in json_lines(capture) if line["logger"] == "django.request"]
    assert line["level"] == "WARNING"
    assert line["message"].startswith("Not Found: /api/v1/partitions/default/queues/root.nope/")
    assert line["request_id"] == "trace-42"
    assert line["user"] == "user-viewer"
    assert line["partition"] == "default"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])
    assert "run_id" not in line and "task" not in line


def test_a_run_page_names_its_run_and_an_anonymous_request_no_user(capture) -> None:
    APIClient().get("/api/v1/runs/987654/")  # anonymous: 401
    client_for("viewer").get("/api/v1/runs/987654/")  # 404
    lines = [line for line in json_lines(capture) if line["logger"] == "django.request"]
    assert [line["message"].split(":")[0] for line in lines] == ["Unauthorized", "Not Found"]
    assert [line.get("user") for line in lines] == [None, "user-viewer"]
    assert [line["run_id"] for line in lines] == [987654, 987654]


def test_the_context_ends_with_the_request(capture) -> None:
    APIClient().get("/api/v1/partitions/default/queues/", HTTP_X_REQUEST_ID="gone-1")
    logging.getLogger("scheduler_admin.test").warning("after the request")
    [line] = [line for line in json_lines(capture) if line["logger"] == "scheduler_admin.test"]
    assert "request_id" not in line and "partition" not in line


def test_a_runs_task_context_names_the_run_and_its_partition(partition, capture) -> None:
    from datetime import timedelta

    from tests.support.team import START

    enforcement.lower_max("root.team", 100, at=START)
    [run] = enforcement.run_due_timers(START + timedelta(seconds=2))
    task = "scheduler_admin.enforcement.tasks.execute_run"
    with log_context(task=task, task_id="t-1"), run_context(run.pk):
        logging.getLogger("scheduler_admin.test").warning("inside the run")
    [line] = [line for line in json_lines(capture) if line["message"] == "inside the run"]
    assert (line["run_id"], line["partition"], line["task_id"]) == (run.pk, "default", "t-1")


def test_a_json_line_keeps_a_multiline_message_and_traceback_on_one_line(capture) -> None:
    logger = logging.getLogger("scheduler_admin.test")
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        logger.exception("first line\nsecond line")
    text = capture.getvalue()
    assert text.count("\n") == 1
    [line] = json_lines(capture)
    assert line["message"] == "first line\nsecond line"
    assert (
        line["exception"].startswith("Traceback") and "ValueError: bad\nvalue" in line["exception"]
    )
    assert line["level"] == "ERROR" and line["logger"] == "scheduler_admin.test"


def manage_py_logs(log_format: str) -> subprocess.CompletedProcess[str]:
    """A real process with the real settings (Django set up as ``manage.py`` does), logging one
    line through the console handler."""
    env = {
        **os.environ,
        "SCHEDULER_ENV": "test",
        "DJANGO_SETTINGS_MODULE": "scheduler_admin.settings",
    }
    env["LOG_FORMAT"] = log_format
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('scheduler_admin.x').warning('hello %s', 'world')"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_log_format_json_prints_one_object_per_line_and_plain_stays_text() -> None:
    json_run = manage_py_logs("json")
    assert json_run.returncode == 0, json_run.stderr
    [line] = [json.loads(text) for text in json_run.stderr.splitlines()]
    assert {key: line[key] for key in ("level", "logger", "message")} == {
        "level": "WARNING", "logger": "scheduler_admin.x", "message": "hello world",
    }  # fmt: skip
    plain_run = manage_py_logs("plain")
    assert plain_run.returncode == 0, plain_run.stderr
    assert re.fullmatch(r"\S+ \S+ WARNING scheduler_admin.x: hello world\n", plain_run.stderr), (
        plain_run.stderr
    )
    bad = manage_py_logs("xml")
    assert bad.returncode != 0 and "LOG_FORMAT" in bad.stderr
