"""The Users page (admins): list, create, change role, deactivate and reactivate; each action
audited with actor and target, destructive ones confirmed first, nobody else allowed in, and no
admin able to lock themselves (or everyone) out. API tokens: ``test_api_tokens.py``."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from scheduler_admin.accounts import services
from scheduler_admin.accounts.roles import role_of
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.audit.models import AuditEvent, AuditKind
from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db

URL = "/users/"
PASSWORD = "correct-horse-battery-9"


@pytest.fixture
def admin() -> Client:
    return signed_in_client("admin", "ada")


def make_user(name: str, role: str = "viewer") -> object:
    return services.create_user(name, role=role, actor=None, password=PASSWORD).user


def shown_secret(response) -> str:
    """The password or token on the one-time page."""
    assert response.status_code == 200
    assert "shown only this once" in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    found = re.search(
        r'id="secret" class="secret" type="text" value="([^"]+)"', response.content.decode()
    )
    assert found is not None
    return html.unescape(found.group(1))


def events(kind: AuditKind) -> list[tuple[str, str]]:
    """(actor, target) of every event of ``kind``, oldest first."""
    return list(
        AuditEvent.objects.filter(kind=kind).order_by("id").values_list("actor_name", "object_id")
    )


def flash(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


# ---------------------------------------------------------------------------------------------
# Who may use the page
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "operator", None])
def test_only_admins_see_the_link_and_everyone_else_gets_403(role, admin):
    target = make_user("vera")
    other = signed_in_client(role, "olga") if role else _no_role_client()
    assert ">Users</a>" not in other.get("/").content.decode()
    assert ">Users</a>" in admin.get("/").content.decode()
    assert other.get(URL).status_code == 403
    posts = {
        "/users/create/": {"username": "mallory", "role": "admin"},
        f"/users/{target.pk}/role/": {"role": "admin", "confirmed": "yes"},
        f"/users/{target.pk}/deactivate/": {"confirmed": "yes"},
        f"/users/{target.pk}/reactivate/": {},
        f"/users/{target.pk}/tokens/issue/": {"name": "x", "expires_days": "1"},
        f"/users/{target.pk}/tokens/1/revoke/": {"confirmed": "yes"},
    }
    assert other.get(f"/users/{target.pk}/tokens/").status_code == 403
    for url, body in posts.items():
        assert other.post(url, body).status_code == 403, url
    target.refresh_from_db()
    assert role_of(target) == "viewer" and target.is_active
    assert not ApiToken.objects.exists()
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert not AuditEvent.objects.exclude(actor_name="system").exists()


def _no_role_client() -> Client:
    user = get_user_model().objects.create_user("norole", password=PASSWORD)
    client = Client()
    client.force_login(user)
    return client


def test_every_action_needs_the_csrf_token(admin):
    target = make_user("vera")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(username="ada"))
    assert strict.get(URL).status_code == 200
    assert strict.post("/users/create/", {"username": "x", "role": "viewer"}).status_code == 403
    assert strict.post(f"/users/{target.pk}/deactivate/", {"confirmed": "yes"}).status_code == 403
    target.refresh_from_db()
    assert target.is_active and not get_user_model().objects.filter(username="x").exists()


def test_the_list_shows_role_status_last_sign_in_and_token(admin):
    vera = make_user("vera", "operator")
    key = services.issue_token(vera, actor=None)
    services.issue_token(vera, actor=None, name="agent")
    gone = make_user("gone")
    services.set_active(gone, False, actor=None)
    page = admin.get(URL).content.decode()
    row = page.split('<th scope="row">vera')[1].split("</tr>")[0]
    assert "<td>operator</td>" in row and "<td>active</td>" in row
    assert "never" in row and "2 tokens" in row and f'href="/users/{vera.pk}/tokens/"' in row
    gone_row = page.split('<th scope="row">gone')[1].split("</tr>")[0]
    assert "deactivated" in gone_row and "Reactivate" in gone_row
    assert key not in page and key[:12] not in page  # a key is never listed
    ada_row = page.split('<th scope="row">ada')[1].split("</tr>")[0]
    assert ">you<" in ada_row and "Deactivate" not in ada_row  # no control to lock oneself out


# ---------------------------------------------------------------------------------------------
# Creating
# ---------------------------------------------------------------------------------------------


def test_creating_a_user_with_a_generated_password_shows_it_once(admin):
    response = admin.post("/users/create/", {"username": "vera", "role": "operator"})
    password = shown_secret(response)
    vera = get_user_model().objects.get(username="vera")
    assert role_of(vera) == "operator" and vera.check_password(password)
    assert password not in admin.get(URL).content.decode()
    assert events(AuditKind.USER_CREATED) == [("ada", "vera")]
    assert password not in str(AuditEvent.objects.get(kind=AuditKind.USER_CREATED).data)
    assert Client().login(username="vera", password=password)


def test_creating_a_user_with_a_chosen_password_does_not_show_it(admin):
    body = {"username": "vera", "role": "viewer", "email": "v@example.org", "password": PASSWORD}
    response = admin.post("/users/create/", body, follow=True)
    assert response.redirect_chain == [(URL, 302)]
    assert "Created vera with the viewer role." in flash(response)
    assert PASSWORD not in response.content.decode()
    assert get_user_model().objects.get(username="vera").check_password(PASSWORD)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"username": "Vera", "role": "viewer"}, "A user named &#x27;Vera&#x27; already exists."),
        ({"username": "new", "role": "boss"}, "Select a valid choice."),
        ({"username": "new", "role": "viewer", "password": "short"}, "too short"),
        ({"username": "new one", "role": "viewer"}, "Enter a valid username."),
        ({"username": "new\x00", "role": "viewer"}, "Null characters are not allowed."),
        ({"username": "", "role": "viewer"}, "This field is required."),
        ({"username": "new", "role": "viewer", "email": "no-at"}, "Enter a valid email"),
    ],
)
def test_bad_input_is_shown_inline_and_creates_nobody(admin, body, message):
    make_user("vera")
    before = get_user_model().objects.count()
    response = admin.post("/users/create/", body)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert get_user_model().objects.count() == before
    assert not AuditEvent.objects.exclude(actor_name="system").exists()


# ---------------------------------------------------------------------------------------------
# Roles
# ---------------------------------------------------------------------------------------------


def test_an_upgrade_is_done_at_once_and_audited(admin):
    vera = make_user("vera", "viewer")
    response = admin.post(f"/users/{vera.pk}/role/", {"role": "admin"}, follow=True)
    assert "vera now has the admin role." in flash(response)
    vera.refresh_from_db()
    assert role_of(vera) == "admin" and vera.is_staff and vera.is_superuser
    event = AuditEvent.objects.get(kind=AuditKind.USER_ROLE_CHANGED)
    assert (event.actor_name, event.object_id, event.data["from"], event.data["to"]) == (
        "ada", "vera", "viewer", "admin"
    )  # fmt: skip


def test_a_downgrade_asks_for_confirmation_first(admin):
    vera = make_user("vera", "admin")
    first = admin.post(f"/users/{vera.pk}/role/", {"role": "viewer"})
    page = first.content.decode()
    assert first.status_code == 200
    assert "Change the role of vera from admin to viewer?" in page
    assert 'name="confirmed" value="yes"' in page and 'name="role" value="viewer"' in page
    assert role_of(get_user_model().objects.get(pk=vera.pk)) == "admin"
    assert not events(AuditKind.USER_ROLE_CHANGED)

    admin.post(f"/users/{vera.pk}/role/", {"role": "viewer", "confirmed": "yes"})
    vera.refresh_from_db()
    assert role_of(vera) == "viewer" and not vera.is_superuser and not vera.is_staff
    assert events(AuditKind.USER_ROLE_CHANGED) == [("ada", "vera")]


def test_an_admin_cannot_demote_or_deactivate_themselves(admin):
    ada = get_user_model().objects.get(username="ada")
    response = admin.post(f"/users/{ada.pk}/role/", {"role": "viewer", "confirmed": "yes"},
                          follow=True)  # fmt: skip
    assert "You cannot demote your own account" in flash(response)
    response = admin.post(f"/users/{ada.pk}/deactivate/", {"confirmed": "yes"}, follow=True)
    assert "You cannot deactivate your own account" in flash(response)
    ada.refresh_from_db()
    assert role_of(ada) == "admin" and ada.is_active
    assert not AuditEvent.objects.exists()


def test_the_last_active_admin_is_kept_by_the_service():
    """On the page the actor is always another active admin; the rule still holds for the
    command and for two admins removing each other (the second one is refused)."""
    first = make_user("first", "admin")
    second = make_user("second", "admin")
    assert services.set_active(first, False, actor=second)
    with pytest.raises(services.AccountError, match="last active admin"):
        services.change_role(second, "operator", actor=None)
    with pytest.raises(services.AccountError, match="last active admin"):
        services.set_active(second, False, actor=None)
    second.refresh_from_db()
    assert role_of(second) == "admin" and second.is_active


# ---------------------------------------------------------------------------------------------
# Deactivating
# ---------------------------------------------------------------------------------------------


def test_deactivating_asks_first_ends_sign_in_and_the_token_and_is_undone_by_reactivating(admin):
    vera = make_user("vera", "operator")
    key = services.issue_token(vera, actor=None)
    session = Client()
    assert session.login(username="vera", password=PASSWORD)

    first = admin.post(f"/users/{vera.pk}/deactivate/")
    assert "Deactivate vera?" in first.content.decode()
    assert get_user_model().objects.get(pk=vera.pk).is_active

    admin.post(f"/users/{vera.pk}/deactivate/", {"confirmed": "yes"})
    vera.refresh_from_db()
    assert not vera.is_active and not ApiToken.objects.filter(user=vera).exists()
    assert session.get("/").status_code == 302  # the open session ends
    assert not Client().login(username="vera", password=PASSWORD)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/partitions/").status_code == 401
    event = AuditEvent.objects.get(kind=AuditKind.USER_DEACTIVATED)
    assert (event.actor_name, event.object_id, event.data["token_revoked"]) == ("ada", "vera", True)

    response = admin.post(f"/users/{vera.pk}/reactivate/", follow=True)
    assert "Reactivated vera." in flash(response)
    assert Client().login(username="vera", password=PASSWORD)
    assert events(AuditKind.USER_REACTIVATED) == [("ada", "vera")]
