"""The Users page's queue grants and groups (admins): give, change, refuse with the reasons next
to the fields, revoke after a confirmation, set a user's groups."""

from __future__ import annotations

import pytest
from django.test import Client

from scheduler_admin.accounts.grants import tenant_groups
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.audit.models import AuditEvent
from tests.support.console import signed_in_client
from tests.support.tenants import INSIDE, tenant_state, tenant_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin() -> Client:
    tenant_state()
    tenant_user("viewer")
    return signed_in_client("admin")


def _give(admin: Client, **fields: str):
    body = {"partition": "default", "queue": INSIDE, "role": "operator",
            "user": "caller-viewer", "group": "", **fields}  # fmt: skip
    return admin.post("/users/grants/", body)


def test_the_page_lists_grants_and_groups_with_their_forms(admin):
    _give(admin)
    page = admin.get("/users/").content.decode()
    assert 'id="grants-heading"' in page and 'id="groups-heading"' in page
    grants = page.split('id="grants-heading"')[1].split("</table>")[0]
    assert "caller-viewer" in grants and f"<code>{INSIDE}</code>" in grants
    assert "Give the grant" in page and "Set the groups" in page


def test_an_admin_gives_and_changes_a_grant(admin):
    response = _give(admin)
    assert response.status_code == 302 and response["Location"] == "/users/#grants"
    grant = QueueGrant.objects.get()
    assert grant.role == "operator" and grant.user.username == "caller-viewer"
    _give(admin, role="admin")
    assert QueueGrant.objects.get().role == "admin"
    messages = admin.get("/users/").content.decode()
    assert "Role changed: user caller-viewer is admin of root.team-a in default." in messages


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"queue": "root.team-c"}, "Partition default has no queue root.team-c."),
        ({"user": "", "group": ""}, "Name a user or a group (one of them)."),
        ({"user": "", "group": "viewer"}, "viewer is a role group"),
        ({"user": "", "group": "nobody-here"}, "No group named &#x27;nobody-here&#x27;"),
        ({"role": "viewer"}, "Select a valid choice."),
    ],
)
def test_a_refused_grant_shows_the_reason_next_to_the_field_and_gives_nothing(
    admin, fields, message
):
    events = AuditEvent.objects.count()
    response = _give(admin, **fields)
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page and "nothing was changed" in page
    assert not QueueGrant.objects.exists() and AuditEvent.objects.count() == events


def test_revoking_asks_for_a_confirmation_first(admin):
    _give(admin)
    grant = QueueGrant.objects.get()
    confirm = admin.post(f"/users/grants/{grant.pk}/revoke/")
    assert confirm.status_code == 200
    assert "Revoke operator of root.team-a in default from user caller-viewer?" in (
        confirm.content.decode()
    )
    assert QueueGrant.objects.exists()
    done = admin.post(f"/users/grants/{grant.pk}/revoke/", {"confirmed": "yes"})
    assert done.status_code == 302 and not QueueGrant.objects.exists()
    again = admin.post(f"/users/grants/{grant.pk}/revoke/", {"confirmed": "yes"})
    assert again.status_code == 404


def test_an_admin_sets_a_users_groups_and_a_group_grant_follows_them(admin):
    user = tenant_user("viewer")
    response = admin.post("/users/groups/", {"user": user.pk, "groups": "team-a, ops"})
    assert response.status_code == 302
    assert tenant_groups(user) == ["ops", "team-a"]
    assert _give(admin, user="", group="team-a").status_code == 302
    assert QueueGrant.objects.get().group.name == "team-a"
    refused = admin.post("/users/groups/", {"user": user.pk, "groups": "admin"})
    assert refused.status_code == 400 and "role group" in refused.content.decode()
    assert tenant_groups(user) == ["ops", "team-a"]
