"""``/api/v1/grants/``: admins give, change and revoke queue grants; everyone else reads the
grants applying to them; bodies are strict and a bad one is a 400 naming each field."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant, set_groups
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.accounts.services import issue_token
from scheduler_admin.audit.models import AuditEvent
from tests.api.conftest import assert_error, role_client
from tests.support.tenants import INSIDE, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

URL = "/api/v1/grants/"


@pytest.fixture
def tenants():
    return tenant_state()


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user, actor=None)}")
    return client


def test_an_admin_gives_changes_lists_and_revokes_a_grant(tenants):
    tenant_user("viewer")  # caller-viewer: the holder
    admin = role_client("admin")
    body = {"partition": "default", "queue": INSIDE, "role": "operator", "user": "caller-viewer"}
    created = admin.post(URL, body, format="json")
    assert created.status_code == 201, created.content
    grant = created.json()
    assert grant["queue"] == INSIDE and grant["user"] == "caller-viewer" and grant["group"] is None
    assert grant["role"] == "operator" and grant["created_by"] == "role-admin"

    changed = admin.post(URL, {**body, "role": "admin"}, format="json")
    assert changed.status_code == 200 and changed.json()["id"] == grant["id"]
    assert changed.json()["role"] == "admin"

    listed = admin.get(URL, {"queue": INSIDE}).json()
    assert [row["id"] for row in listed["results"]] == [grant["id"]]
    assert admin.get(f"{URL}{grant['id']}/").json()["role"] == "admin"

    assert admin.delete(f"{URL}{grant['id']}/").status_code == 204
    assert not QueueGrant.objects.exists()
    assert assert_error(admin.delete(f"{URL}{grant['id']}/"), 404)
    kinds = list(AuditEvent.objects.filter(object_type="grant").values_list("kind", flat=True))
    assert sorted(kinds) == ["grant.changed", "grant.created", "grant.revoked"]


def test_a_group_is_a_holder_too(tenants):
    user = tenant_user("sub_operator")
    set_groups(user, ["ops-b"], actor=None)
    body = {"partition": "default", "queue": "root.team-b", "role": "admin", "group": "ops-b"}
    created = role_client("admin").post(URL, body, format="json")
    assert created.status_code == 201 and created.json()["group"] == "ops-b"
    mine = token_client(user).get(URL).json()["results"]
    assert {(row["queue"], row["role"]) for row in mine} == {
        (INSIDE, "operator"),
        ("root.team-b", "admin"),
    }


def _body(**fields: str) -> dict[str, str]:
    """A valid body (an admin grant on root.team-a for caller-viewer), changed by ``fields``
    (a value None leaves the field out)."""
    body = {"partition": "default", "queue": INSIDE, "role": "admin", "user": "caller-viewer"}
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"partition", "queue", "role", "user"}),
        (_body(role="viewer"), {"role"}),
        (_body(user=None), {"user"}),
        (_body(group="g"), {"group"}),
        (_body(user="nobody"), {"user"}),
        (_body(queue="root.nope"), {"queue"}),
        (_body(partition="nope"), {"partition"}),
        (_body(user=None, group="viewer"), {"group"}),
        (_body(queue_path=INSIDE), {"queue_path"}),
        (_body(queue="root.\x00"), {"queue"}),
    ],
)
def test_a_bad_body_is_a_400_naming_each_field_and_gives_nothing(tenants, body, fields):
    tenant_user("viewer")
    events = AuditEvent.objects.count()
    response = role_client("admin").post(URL, body, format="json")
    errors = assert_error(response, 400)["errors"]
    assert fields <= set(errors), errors
    assert not QueueGrant.objects.exists() and AuditEvent.objects.count() == events


def test_only_admins_write_and_everyone_else_reads_their_own(tenants):
    holder = tenant_user("sub_admin")
    other = give_grant(partition="default", queue_path="root.team-b", role="operator",
                       user=tenant_user("operator").username, actor=None).grant  # fmt: skip
    body = {"partition": "default", "queue": INSIDE, "role": "admin", "user": "caller-viewer"}
    for client in (role_client("operator"), role_client("viewer"), token_client(holder)):
        assert_error(client.post(URL, body, format="json"), 403)
        assert_error(client.delete(f"{URL}{other.pk}/"), 403)
    assert_error(APIClient().get(URL), 401)
    assert_error(role_client(None).get(URL), 401)
    mine = token_client(holder).get(URL).json()["results"]
    assert [(row["queue"], row["group"]) for row in mine] == [(INSIDE, "tenant-a")]
    assert_error(token_client(holder).get(f"{URL}{other.pk}/"), 404)
    assert len(role_client("admin").get(URL).json()["results"]) == 2
    assert QueueGrant.objects.count() == 2
