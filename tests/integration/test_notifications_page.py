"""The Notifications page: a user lists, adds and deletes their own subscriptions; a mistake is
shown beside its field and saves nothing; a tenant cannot subscribe outside their grants."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scheduler_admin.accounts import services as accounts
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.notifications.models import Channel, Subscription
from tests.support.console import signed_in_client
from tests.support.tenants import INSIDE, OUTSIDE, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

PAGE = "/account/notifications/"
SUBSCRIBE = "/account/notifications/subscribe/"
EMAIL = "/account/notifications/email/"


@pytest.fixture
def tenants():
    return tenant_state()


def form(**changes: object) -> dict:
    return {"partition": "default", "queue_path": INSIDE, "subtree": "on",
            "kinds": ["timer.started", "run.victims"], "email": "on", **changes}  # fmt: skip


def field_errors(html: str) -> list[str]:
    return re.findall(r'<p class="error field-error">([^<]+)</p>', html)


def test_a_user_subscribes_to_a_subtree_and_deletes_it(tenants):
    client = signed_in_client("viewer")
    page = client.get(PAGE).content.decode()
    assert "No subscriptions yet." in page and "has no e-mail address" in page
    assert 'name="channel"' not in page  # channels: admins only

    saved = client.post(SUBSCRIBE, form(), follow=True)
    html = saved.content.decode()
    assert f"Subscribed to {INSIDE} and every queue below it." in html
    assert "Your subscriptions (1)" in html and "Run finished with victims" in html
    subscription = Subscription.objects.get()
    assert (subscription.user.username, subscription.subtree) == ("user-viewer", True)
    assert subscription.kinds == ["timer.started", "run.victims"]

    deleted = client.post(f"/account/notifications/{subscription.pk}/delete/", follow=True)
    assert f"Deleted the subscription to {INSIDE}." in deleted.content.decode()
    assert not Subscription.objects.exists()


def test_mistakes_are_shown_beside_their_fields_and_save_nothing(tenants):
    client = signed_in_client("viewer")
    no_kind = client.post(SUBSCRIBE, form(kinds=[]))
    assert no_kind.status_code == 400
    assert field_errors(no_kind.content.decode()) == ["Choose at least one event."]
    missing = client.post(SUBSCRIBE, form(queue_path="root.nowhere"))
    assert field_errors(missing.content.decode()) == [
        "There is no queue root.nowhere in partition default."
    ]
    nothing = client.post(SUBSCRIBE, form(email=""))
    assert field_errors(nothing.content.decode()) == [
        "Choose e-mail, a channel, or both: otherwise nothing is sent."
    ]
    assert not Subscription.objects.exists()


def test_a_tenant_cannot_subscribe_outside_their_subtree(tenants):
    client = Client()
    client.force_login(tenant_user("sub_operator"))
    refused = client.post(SUBSCRIBE, form(queue_path=OUTSIDE))
    assert refused.status_code == 403
    assert f"{OUTSIDE} is outside." in refused.content.decode()
    assert not Subscription.objects.exists()
    assert client.post(SUBSCRIBE, form()).status_code == 302
    assert Subscription.objects.get().queue_path == INSIDE


def test_an_admin_may_also_post_to_a_channel_and_others_subscriptions_are_not_found(tenants):
    channel = Channel.objects.create(name="ops", kind="json", url="jsons://hooks.example.com/x",
                                     created_at="2026-03-01T12:00:00Z")  # fmt: skip
    admin = signed_in_client("admin")
    assert "ops (Generic JSON webhook)" in admin.get(PAGE).content.decode()
    assert admin.post(SUBSCRIBE, form(channel=str(channel.pk), email="")).status_code == 302
    subscription = Subscription.objects.get()
    assert subscription.channel == channel and not subscription.email
    viewer = signed_in_client("viewer")
    assert viewer.post(f"/account/notifications/{subscription.pk}/delete/").status_code == 404
    assert Subscription.objects.exists()


def test_the_django_admin_never_shows_a_channels_url(tenants):
    channel = Channel.objects.create(
        name="ops", kind="json", url="jsons://hooks.example.com/s3cr3t-token",
        created_at="2026-03-01T12:00:00Z",
    )  # fmt: skip
    ada = accounts.create_user("ada", role="admin", actor=None, password="pw-ada-12345678").user
    admin = Client()
    admin.force_login(ada)
    for url in (
        "/admin/notifications/channel/",
        f"/admin/notifications/channel/{channel.pk}/change/",
    ):
        page = admin.get(url)
        assert page.status_code == 200, url
        assert "s3cr3t-token" not in page.content.decode()


def test_a_user_sets_and_clears_their_own_e_mail_address_audited(tenants):
    """Without an address an e-mail subscription sends nothing: the user sets it here."""
    client = signed_in_client("viewer")
    saved = client.post(EMAIL, {"email": " ops@example.org "}, follow=True)
    html = saved.content.decode()
    assert "E-mail notifications now go to ops@example.org." in html
    assert "has no e-mail address" not in html and 'value="ops@example.org"' in html
    user = get_user_model().objects.get(username="user-viewer")
    assert user.email == "ops@example.org"
    event = AuditEvent.objects.get(kind=AuditKind.USER_EMAIL_CHANGED)
    assert event.actor_name == "user-viewer" and event.object_id == "user-viewer"
    assert event.data["old"] == "" and event.data["new"] == "ops@example.org"

    again = client.post(EMAIL, {"email": "ops@example.org"}, follow=True)
    assert "Your e-mail address is unchanged." in again.content.decode()
    assert AuditEvent.objects.filter(kind=AuditKind.USER_EMAIL_CHANGED).count() == 1

    cleared = client.post(EMAIL, {"email": ""}, follow=True)
    assert "Your e-mail address is cleared" in cleared.content.decode()
    user.refresh_from_db()
    assert user.email == ""


def test_a_malformed_e_mail_address_is_shown_beside_its_field_and_changes_nothing(tenants):
    client = signed_in_client("viewer")
    client.post(EMAIL, {"email": "ops@example.org"})
    refused = client.post(EMAIL, {"email": "not an address"})
    assert refused.status_code == 400
    assert field_errors(refused.content.decode()) == ["Enter a valid email address."]
    assert get_user_model().objects.get(username="user-viewer").email == "ops@example.org"
    assert AuditEvent.objects.filter(kind=AuditKind.USER_EMAIL_CHANGED).count() == 1
