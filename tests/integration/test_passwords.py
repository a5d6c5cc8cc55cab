"""Passwords change in the product, checked and audited, now that the Django admin writes
nothing: everyone with a password changes their own on ``/account/password/`` (the current one
asked first), and an admin gives another user a new generated password from the Users page
(after a confirmation, shown once). Either way the old password stops working, the user's other
sessions end, and ``user.password_changed`` is audited without the password."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scheduler_admin.accounts import services
from scheduler_admin.audit.models import AuditEvent, AuditKind

pytestmark = pytest.mark.django_db

OLD = "an-old-pass-phrase-41"
NEW = "a-new-pass-phrase-42"


def _signed_in(name: str, password: str) -> Client:
    client = Client()
    assert client.login(username=name, password=password)
    return client


def _form(old: str = OLD, new: str = NEW, again: str | None = None) -> dict[str, str]:
    return {"old_password": old, "new_password": new, "new_password_again": again or new}


def test_a_user_changes_their_own_password_and_their_other_sessions_end():
    services.create_user("vera", role="viewer", actor=None, password=OLD)
    here, elsewhere = _signed_in("vera", OLD), _signed_in("vera", OLD)
    assert "Change your password" in here.get("/account/password/").content.decode()
    done = here.post("/account/password/", _form(), follow=True)
    assert "Your password was changed; other sessions ended." in done.content.decode()
    assert here.get("/").status_code == 200  # this session stays
    assert elsewhere.get("/").status_code == 302  # the other one is signed out
    vera = get_user_model().objects.get(username="vera")
    assert vera.check_password(NEW) and not vera.check_password(OLD)
    event = AuditEvent.objects.get(kind=AuditKind.USER_PASSWORD_CHANGED)
    assert (event.actor_name, event.object_id, event.data["reset"]) == ("vera", "vera", False)
    assert NEW not in str(event.data) and NEW not in event.summary


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (_form(old="wrong"), "That is not your current password."),
        (_form(again="something-else-43"), "The two new passwords differ."),
        (_form(new="vera", again="vera"), "This password is too short."),
    ],
)
def test_a_refused_change_says_why_next_to_the_field_and_changes_nothing(form, message):
    services.create_user("vera", role="viewer", actor=None, password=OLD)
    answer = _signed_in("vera", OLD).post("/account/password/", form)
    assert answer.status_code == 400
    assert message in answer.content.decode().replace("&#x27;", "'")
    assert get_user_model().objects.get(username="vera").check_password(OLD)
    assert not AuditEvent.objects.filter(kind=AuditKind.USER_PASSWORD_CHANGED).exists()


def test_a_single_sign_on_account_is_told_its_password_is_at_the_provider():
    user = get_user_model().objects.create(username="sso-sam")
    user.set_unusable_password()
    user.save()
    client = Client()
    client.force_login(user)
    page = client.get("/account/password/").content.decode()
    assert "your password is kept there" in page and 'name="new_password"' not in page


def test_an_admin_resets_another_users_password_after_confirming_and_sees_it_once():
    ada = services.create_user("ada", role="admin", actor=None, password=OLD).user
    vera = services.create_user("vera", role="viewer", actor=None, password=OLD).user
    admin, victim_session = _signed_in("ada", OLD), _signed_in("vera", OLD)
    users_page = admin.get("/users/").content.decode()
    assert f'action="/users/{vera.pk}/password/"' in users_page
    assert f'action="/users/{ada.pk}/password/"' not in users_page  # not for yourself
    asked = admin.post(f"/users/{vera.pk}/password/")
    assert "Give vera a new password?" in asked.content.decode()
    assert get_user_model().objects.get(username="vera").check_password(OLD)
    shown = admin.post(f"/users/{vera.pk}/password/", {"confirmed": "yes"})
    assert shown.status_code == 200 and "no-store" in shown["Cache-Control"]
    password = re.search(r'id="secret" class="secret" type="text" value="([^"]+)"',
                         shown.content.decode()).group(1)  # fmt: skip
    assert get_user_model().objects.get(username="vera").check_password(password)
    assert victim_session.get("/").status_code == 302  # signed out everywhere
    event = AuditEvent.objects.get(kind=AuditKind.USER_PASSWORD_CHANGED)
    assert (event.actor_name, event.object_id, event.data["reset"]) == ("ada", "vera", True)
    assert password not in str(event.data) and password not in event.summary


def test_resetting_is_for_admins_and_not_for_your_own_account():
    ada = services.create_user("ada", role="admin", actor=None, password=OLD).user
    services.create_user("vera", role="operator", actor=None, password=OLD)
    own = _signed_in("ada", OLD).post(
        f"/users/{ada.pk}/password/", {"confirmed": "yes"}, follow=True
    )
    assert "Change your own password on your Password page" in own.content.decode()
    assert get_user_model().objects.get(username="ada").check_password(OLD)
    refused = _signed_in("vera", OLD).post(f"/users/{ada.pk}/password/", {"confirmed": "yes"})
    assert refused.status_code == 403
    assert get_user_model().objects.get(pk=ada.pk).check_password(OLD)
    assert not AuditEvent.objects.filter(kind=AuditKind.USER_PASSWORD_CHANGED).exists()


# --- At the server: Django's own account commands are replaced --------------------------------


def test_changepassword_at_the_server_is_the_products_validated_and_audited(monkeypatch):
    """Django's ``changepassword`` wrote the password unaudited; the product's replaces it."""
    from django.core.management import CommandError, call_command, get_commands

    assert get_commands()["changepassword"] == "scheduler_admin.accounts"
    services.create_user("vera", role="viewer", actor=None, password=OLD)
    elsewhere = _signed_in("vera", OLD)

    monkeypatch.setenv("VERA_PW", "short")
    with pytest.raises(CommandError, match="password"):
        call_command("changepassword", "vera", "--password-env", "VERA_PW")
    assert get_user_model().objects.get(username="vera").check_password(OLD)
    assert not AuditEvent.objects.filter(kind=AuditKind.USER_PASSWORD_CHANGED).exists()

    monkeypatch.setenv("VERA_PW", NEW)
    call_command("changepassword", "VERA", "--password-env", "VERA_PW")  # any letter case
    assert get_user_model().objects.get(username="vera").check_password(NEW)
    event = AuditEvent.objects.get(kind=AuditKind.USER_PASSWORD_CHANGED)
    assert event.actor_name == "system" and event.data["at_the_server"] is True
    assert NEW not in str(event.data) and NEW not in event.summary
    assert elsewhere.get("/").status_code == 302  # their sessions ended

    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("changepassword", "nobody", "--password-env", "VERA_PW")


def test_createsuperuser_is_refused_and_makes_no_account():
    """A superuser made by Django's command would have no role group and no audit row."""
    from django.core.management import CommandError, call_command, get_commands

    assert get_commands()["createsuperuser"] == "scheduler_admin.accounts"
    with pytest.raises(CommandError, match="create_user NAME --role admin"):
        call_command("createsuperuser", "--username", "root2", "--email", "r@x", "--noinput")
    assert not get_user_model().objects.filter(username="root2").exists()
