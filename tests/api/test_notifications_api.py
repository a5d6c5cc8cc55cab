"""``/api/v1/notifications/``: a user manages their own subscriptions, on queues they may read;
admins manage anyone's and the channels, whose URLs are never shown back. Bad bodies are 400s
naming each field."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduler_admin.accounts.services import issue_token
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.notifications.models import Channel, Subscription
from tests.api.conftest import assert_error, role_client
from tests.support.tenants import INSIDE, OUTSIDE, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

SUBSCRIPTIONS = "/api/v1/notifications/subscriptions/"
CHANNELS = "/api/v1/notifications/channels/"
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#ops"


@pytest.fixture
def tenants():
    return tenant_state()


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user, actor=None)}")
    return client


def body(**changes: object) -> dict:
    return {"partition": "default", "queue_path": INSIDE, "kinds": ["run.started"], **changes}


def test_a_tenant_subscribes_to_a_subtree_inside_their_grants(tenants):
    client = token_client(tenant_user("sub_operator"))
    created = client.post(SUBSCRIPTIONS, body(kinds=["run.victims", "timer.started"]),
                          format="json")  # fmt: skip
    assert created.status_code == 201, created.content
    row = created.json()
    assert row["user"] == "caller-sub_operator" and row["group"] is None
    assert row["subtree"] is True and row["email"] is True and row["channel"] is None
    assert row["kinds"] == ["timer.started", "run.victims"]  # the registry's order
    listed = client.get(SUBSCRIPTIONS).json()["results"]
    assert [r["id"] for r in listed] == [row["id"]]

    changed = client.put(f"{SUBSCRIPTIONS}{row['id']}/", body(queue_path=f"{INSIDE}.web",
                         subtree=False), format="json")  # fmt: skip
    assert changed.status_code == 200, changed.content
    assert (changed.json()["queue_path"], changed.json()["subtree"]) == (f"{INSIDE}.web", False)
    assert client.delete(f"{SUBSCRIPTIONS}{row['id']}/").status_code == 204
    assert not Subscription.objects.exists()
    kinds = AuditEvent.objects.filter(object_type="subscription").values_list("kind", flat=True)
    assert sorted(kinds) == ["notify.subscription_deleted"] + ["notify.subscription_saved"] * 2


def test_a_tenant_cannot_subscribe_outside_their_grants_whether_the_queue_exists_or_not(tenants):
    client = token_client(tenant_user("sub_operator"))
    outside = client.post(SUBSCRIPTIONS, body(queue_path=OUTSIDE), format="json")
    missing = client.post(SUBSCRIPTIONS, body(queue_path="root.nowhere"), format="json")
    assert assert_error(outside, 403)["detail"].endswith(f"{OUTSIDE} is outside.")
    assert assert_error(missing, 403)["detail"].endswith("root.nowhere is outside.")
    assert not Subscription.objects.exists()


def test_only_admins_subscribe_others_groups_and_channels(tenants):
    channel = Channel.objects.create(name="ops", kind="slack", url=SLACK,
                                     created_at="2026-03-01T12:00:00Z")  # fmt: skip
    tenant_user("sub_admin")  # and their group, tenant-a
    viewer = role_client("viewer")
    for extra in ({"user": "caller-admin"}, {"group": "tenant-a"}, {"channel": channel.pk}):
        assert_error(viewer.post(SUBSCRIPTIONS, body(**extra), format="json"), 403)
    admin = role_client("admin")
    for extra in ({"user": "role-viewer"}, {"group": "tenant-a", "channel": channel.pk}):
        assert admin.post(SUBSCRIPTIONS, body(**extra), format="json").status_code == 201
    mine = viewer.get(SUBSCRIPTIONS).json()["results"][0]
    assert mine["user"] == "role-viewer"
    # An admin's edit that names no one keeps the holder.
    edited = admin.put(f"{SUBSCRIPTIONS}{mine['id']}/", body(kinds=["run.failed"]), format="json")
    assert (edited.json()["user"], edited.json()["kinds"]) == ("role-viewer", ["run.failed"])
    assert len(admin.get(SUBSCRIPTIONS).json()["results"]) == 2
    # Someone else's subscription is not found, not forbidden.
    group_row = Subscription.objects.get(group__name="tenant-a")
    assert_error(viewer.get(f"{SUBSCRIPTIONS}{group_row.pk}/"), 404)
    assert_error(viewer.delete(f"{SUBSCRIPTIONS}{group_row.pk}/"), 404)


def test_a_bad_subscription_names_every_field_at_fault(tenants):
    admin = role_client("admin")
    bad = admin.post(SUBSCRIPTIONS, {"partition": "default", "queue_path": "root.nowhere",
                                     "kinds": ["run.nothing"]}, format="json")  # fmt: skip
    assert_error(bad, 400, "kinds[0]")
    wrong = admin.post(SUBSCRIPTIONS, body(queue_path="root.nowhere", email=False, user="nobody",
                                           channel=999), format="json")  # fmt: skip
    assert set(assert_error(wrong, 400)["errors"]) == {"queue_path", "user", "channel"}
    nothing = admin.post(SUBSCRIPTIONS, body(email=False), format="json")
    assert_error(nothing, 400, "email")
    empty = admin.post(SUBSCRIPTIONS, body(kinds=[]), format="json")
    assert_error(empty, 400, "kinds")
    assert not Subscription.objects.exists()


def test_admins_add_channels_whose_urls_are_never_shown_back(tenants):
    admin = role_client("admin")
    created = admin.post(CHANNELS, {"name": "ops", "url": SLACK}, format="json")
    assert created.status_code == 201, created.content
    row = created.json()
    assert row == {**row, "name": "ops", "kind": "slack", "url_masked": "slack://…"}
    assert "url" not in row
    listed = admin.get(CHANNELS).content.decode()
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in listed
    audit = AuditEvent.objects.get(kind="notify.channel_saved")
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in f"{audit.summary} {audit.data}"

    renamed = admin.patch(f"{CHANNELS}{row['id']}/", {"name": "ops-team"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "ops-team"
    assert Channel.objects.get().url == SLACK  # kept: a rename does not need the secret again
    assert admin.delete(f"{CHANNELS}{row['id']}/").status_code == 204
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://hooks.slack.com/services/x", "Use one of these URL schemes"),
        ("json://hooks.example.com/x", "unencrypted: use jsons://"),
        ("json://[::1", "unencrypted: use jsons://"),
        ("jsons://[::1", "not a complete Generic JSON webhook URL"),
        ("slack://", "not a complete Slack URL"),
        ("", "This field may not be blank."),
    ],
)
def test_a_bad_channel_url_is_a_400_naming_the_url(tenants, url, words):
    response = role_client("admin").post(CHANNELS, {"name": "ops", "url": url}, format="json")
    assert words in " ".join(assert_error(response, 400, "url")["errors"]["url"])
    assert not Channel.objects.exists()


def test_channels_are_for_admins_only(tenants):
    for caller in ("viewer", "operator", "sub_admin"):
        client = token_client(tenant_user(caller))
        assert_error(client.get(CHANNELS), 403)
        assert_error(client.post(CHANNELS, {"name": "x", "url": SLACK}, format="json"), 403)
    assert_error(APIClient().get(SUBSCRIPTIONS), 401)
