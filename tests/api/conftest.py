"""Fixtures for API tests: the demo partition, and a token-authenticated client per role."""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.test import APIClient

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, QuotaTimer
from scheduler_admin.queues.models import Partition
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition, lower_max
from tests.support.factories.users import role_user, token_key, user_with_role
from tests.support.team import START, TEAM_TASKS, team_config
from tests.support.throttles import clear_throttle_counts

ROLES = ("viewer", "operator", "admin")
#: The password of ``live``'s ``token-user``.
TOKEN_USER_PASSWORD = "pw-token-user-1"


@pytest.fixture
def demo_partition(db) -> Partition:
    """The demo config (demo/queues.yaml), as `make run` loads it."""
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return Partition.objects.get(name="default")


def client_for(role: str | None) -> APIClient:
    """An API client authenticated with a token of a user holding ``role`` (None: no role)."""
    user = user_with_role(f"user-{role or 'norole'}", role, password="pw-12345678")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_key(user, 'test')}")
    return client


def role_client(role: str | None) -> APIClient:
    """Like ``client_for``, but the same user on every call (None: anonymous), so a test may ask
    for a role's client more than once. Each call issues a token of its own (keys are stored
    hashed and cannot be read back), so earlier clients keep working."""
    client = APIClient()
    if role is None:
        return client
    user = role_user(f"role-{role}", role)
    key = token_key(user, f"test-{next(_token_numbers)}")
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


_token_numbers = itertools.count(1)


@pytest.fixture
def viewer(db) -> APIClient:
    return client_for("viewer")


@pytest.fixture
def operator(db) -> APIClient:
    return client_for("operator")


@pytest.fixture
def admin(db) -> APIClient:
    return client_for("admin")


@pytest.fixture
def norole(db) -> APIClient:
    return client_for(None)


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


def assert_error(response, status: int, *fields: str) -> dict:
    """The consistent error body, with the given fields at fault."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) >= {"detail", "code", "errors"}
    for field in fields:
        assert field in body["errors"], body
    return body


@pytest.fixture
def admin_headers(db) -> dict[str, str]:
    client = client_for("admin")
    return {"Authorization": client._credentials["HTTP_AUTHORIZATION"]}


@pytest.fixture
def api_schema(demo_partition, admin_headers):
    """The schema as served at /api/schema/ to a signed-in admin, bound to the WSGI app."""
    import schemathesis
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from scheduler_admin.wsgi import application

    # Like Django's test client: requests must not close the test's database connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/", application, headers=admin_headers)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@dataclass(frozen=True)
class Live:
    """Objects of every kind the API addresses (``live``)."""

    timer: QuotaTimer
    active_run: PreemptionRun
    order: EvictionOrder


@pytest.fixture
def live(db) -> Live:
    """The team partition (``tests/support/team.py``) after a finished quota run on root.team
    (pending eviction orders), with an active run on root.team.a, a pending timer on
    root.team.b, a pending ask, a disruption budget and a user ``token-user`` with a password.
    """
    clear_throttle_counts()  # throttling counters of earlier tests
    with time_machine.travel(START, tick=False):
        partition = imported_partition(team_config("2s"))
        ingest(partition, TEAM_TASKS)
    lower_max("root.team", 100, START)
    with time_machine.travel(START + timedelta(seconds=2), tick=False):
        for run_id in runs.sweep_due_quota_timers():
            runs.execute_run(run_id, worker="t")
    lower_max("root.team.a", 25, START + timedelta(seconds=3))  # a1 (30G) is left in a
    with time_machine.travel(START + timedelta(seconds=5), tick=False):
        [active] = runs.sweep_due_quota_timers()  # created, not executed: still pending
    lower_max("root.team.b", 10, START + timedelta(seconds=6))
    with time_machine.travel(START + timedelta(seconds=7), tick=False):
        state = {
            "asks": [{"id": "ask1", "queue": "root.team.a", "resources": {"memory": "1G"}}],
            "budgets": [{"name": "pdb1", "allowed_disruptions": 1}],
        }
        ingest_cluster_state(partition, state, actor=None)
    get_user_model().objects.create_user("token-user", password=TOKEN_USER_PASSWORD)
    return Live(
        timer=QuotaTimer.objects.get(status="pending", queue_path="root.team.b"),
        active_run=PreemptionRun.objects.get(pk=active),
        order=EvictionOrder.objects.filter(status="pending").order_by("id").first(),
    )
