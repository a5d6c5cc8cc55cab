"""Fixtures for API tests: the demo partition, and a token-authenticated client per role."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scheduler_admin.queues.models import Partition

ROLES = ("viewer", "operator", "admin")


@pytest.fixture
def demo_partition(db) -> Partition:
    """The demo config (demo/queues.yaml), as `make run` loads it."""
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return Partition.objects.get(name="default")


def client_for(role: str | None) -> APIClient:
    """An API client authenticated with a token of a user holding ``role`` (None: no role)."""
    user = get_user_model().objects.create_user(f"user-{role or 'norole'}", password="pw-12345678")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])  # a flush may have emptied it
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def role_client(role: str | None) -> APIClient:
    """Like ``client_for``, but the same user and token on every call (None: anonymous), so a
    test may ask for a role's client more than once."""
    client = APIClient()
    if role is None:
        return client
    user, _ = get_user_model().objects.get_or_create(username=f"role-{role}")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


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
