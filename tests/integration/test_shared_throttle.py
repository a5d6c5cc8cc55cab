"""The API throttles count in Redis when ``REDIS_URL`` is set: every gunicorn worker and every
server process counts against one limit (issue 16, part "auth").

Real gunicorn processes (the compose ``web`` command) on the test database and Redis:

- two servers of one worker each, sharing Redis: the limit used up on one is 429 on the other;
  the same two servers without ``REDIS_URL`` count alone (the fallback of ``make run``);
- one server with two workers, 24 writes released at once against a limit of 10: exactly 10
  pass. Counting is an atomic increment, so no two workers can both take the last slot (DRF's
  own throttle reads, appends and writes back a list, and loses requests that way).

The limit is per day (``10/d``) so that every request of a test falls in one counting window.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from scheduler_admin.accounts.services import issue_token
from tests.support.compose import COMPOSE_FILE, CONTAINER_BIND, native_command
from tests.support.console import import_demo
from tests.support.factories.users import user_with_role
from tests.support.processes import ManagedProcess, free_port, test_database_env, wait_until
from tests.support.racing import release_together
from tests.support.throttles import clear_throttle_counts

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]

LIMIT = 10
WRITE = "/api/v1/partitions/default/evictions/acknowledge"


def _post(address: str, token: str) -> int:
    """An acknowledgement with an empty order list: a 400 once the throttle let it through."""
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request(
            "POST",
            WRITE,
            body=json.dumps({"orders": []}),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _healthy(address: str) -> bool:
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _web(stack: ExitStack, base: Path, name: str, *, workers: int, redis: bool) -> str:
    """gunicorn as docker-compose runs it, ``workers`` processes, with or without Redis."""
    port = free_port()
    compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
    args = native_command(
        compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    args[args.index("--workers") + 1] = str(workers)
    env = test_database_env(
        {"XDG_RUNTIME_DIR": str(base), "API_AGENT_WRITE_RATE": f"{LIMIT}/d"},
        redis_url=settings.REDIS_URL,
    )
    if not redis:
        env.pop("REDIS_URL")
        env.pop("CELERY_BROKER_URL")
    process = stack.enter_context(ManagedProcess(name, args, env=env, log_dir=base))
    address = f"127.0.0.1:{port}"
    wait_until(lambda: _healthy(address), 30, message=f"{name} never answered", watch=[process])
    return address


@pytest.fixture
def operator_token(transactional_db: None) -> Iterator[str]:
    clear_throttle_counts()
    import_demo()
    user = user_with_role("agent", "operator")
    yield issue_token(user, actor=None, name="agent")
    clear_throttle_counts()


def test_two_servers_sharing_redis_count_against_one_limit(operator_token, tmp_path):
    """Slow (about 20 s): two real gunicorn servers start and are hammered until the shared limit
    answers 429."""
    with ExitStack() as stack:
        first = _web(stack, tmp_path, "web-a", workers=1, redis=True)
        second = _web(stack, tmp_path, "web-b", workers=1, redis=True)
        assert [_post(first, operator_token) for _ in range(LIMIT)] == [400] * LIMIT
        assert _post(second, operator_token) == 429  # the other server knows
        assert _post(first, operator_token) == 429


def test_without_redis_each_server_counts_alone(operator_token, tmp_path):
    with ExitStack() as stack:
        first = _web(stack, tmp_path, "web-a", workers=1, redis=False)
        second = _web(stack, tmp_path, "web-b", workers=1, redis=False)
        assert [_post(first, operator_token) for _ in range(LIMIT)] == [400] * LIMIT
        assert _post(first, operator_token) == 429
        assert _post(second, operator_token) == 400  # its own count, in its own memory


def test_writes_released_at_once_on_two_workers_pass_exactly_the_limit(operator_token, tmp_path):
    with ExitStack() as stack:
        web = _web(stack, tmp_path, "web-2", workers=2, redis=True)
        statuses = release_together(*[lambda: _post(web, operator_token)] * 24)
    assert sorted(statuses) == [400] * LIMIT + [429] * (24 - LIMIT), statuses


def test_an_unreachable_throttle_cache_lets_writes_through_with_a_warning(
    operator_token, settings, caplog
):
    """A Redis outage must not turn every write into a 500: the throttle steps aside, loudly."""
    from rest_framework.test import APIClient

    settings.CACHES = {
        **settings.CACHES,
        "throttle": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        },
    }
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {operator_token}")
    for _ in range(LIMIT + 2):
        assert client.post(WRITE, {"orders": []}, format="json").status_code == 400
    assert "API throttle not applied: its cache is unreachable" in caplog.text
