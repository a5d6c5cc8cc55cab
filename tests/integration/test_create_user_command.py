"""``manage.py create_user``: a user of each role, a password from the environment or printed
once, clear refusals (a taken name, a bad role, a weak or missing password), ``--update-role``,
and the last active admin kept."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from scheduler_admin.accounts.roles import ROLES, role_of
from scheduler_admin.audit.models import AuditEvent, AuditKind

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-9"


def run(*args: str, **env: str) -> str:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        call_command("create_user", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("role", ROLES)
def test_creates_a_user_of_each_role_with_the_password_from_the_environment(role, client):
    printed = run("vera", "--role", role, "--email", "vera@example.org",
                  "--password-env", "NEW_PASSWORD", NEW_PASSWORD=PASSWORD)  # fmt: skip
    assert f"Created user 'vera' with the {role} role." in printed
    assert PASSWORD not in printed  # a password the operator chose is never echoed
    user = get_user_model().objects.get(username="vera")
    assert role_of(user) == role and user.email == "vera@example.org" and user.is_active
    assert (user.is_staff, user.is_superuser) == (role == "admin", role == "admin")
    assert client.login(username="vera", password=PASSWORD)
    event = AuditEvent.objects.get(kind=AuditKind.USER_CREATED)
    assert (event.actor_name, event.object_type, event.object_id) == ("system", "user", "vera")
    assert event.data["role"] == role and event.data["password_generated"] is False


def test_a_generated_password_is_printed_once_and_signs_in(client, monkeypatch):
    printed = run("olga", "--role", "operator")
    password = printed.split("password: ")[1].split()[0]
    assert printed.count(password) == 1
    assert "shown only once" in printed
    assert client.login(username="olga", password=password)
    assert AuditEvent.objects.get(kind=AuditKind.USER_CREATED).data["password_generated"]
    # The password is in no audit event and the refused second run prints none.
    assert not AuditEvent.objects.filter(summary__contains=password).exists()
    with pytest.raises(CommandError):
        run("olga", "--role", "operator")


@pytest.mark.parametrize("name", ["olga", "OLGA"])
def test_an_existing_name_is_refused_and_nothing_changes(name):
    run("olga", "--role", "viewer", "--password-env", "P", P=PASSWORD)
    events = AuditEvent.objects.count()
    with pytest.raises(CommandError, match=r"already exists.*--update-role"):
        run(name, "--role", "admin", "--password-env", "P", P="another-password-77")
    user = get_user_model().objects.get(username="olga")
    assert role_of(user) == "viewer" and user.check_password(PASSWORD)
    assert get_user_model().objects.count() == 1 and AuditEvent.objects.count() == events


def test_update_role_changes_an_existing_users_role_only():
    run("olga", "--role", "viewer", "--password-env", "P", P=PASSWORD)
    printed = run("olga", "--role", "operator", "--update-role")
    assert "now has the operator role (password unchanged)" in printed
    user = get_user_model().objects.get(username="olga")
    assert role_of(user) == "operator" and user.check_password(PASSWORD)
    event = AuditEvent.objects.get(kind=AuditKind.USER_ROLE_CHANGED)
    assert event.data["from"] == "viewer" and event.data["to"] == "operator"
    assert "already has the operator role" in run("olga", "--role", "operator", "--update-role")
    assert AuditEvent.objects.filter(kind=AuditKind.USER_ROLE_CHANGED).count() == 1


def test_the_last_active_admin_cannot_be_demoted():
    run("root", "--role", "admin", "--password-env", "P", P=PASSWORD)
    with pytest.raises(CommandError, match="last active admin"):
        run("root", "--role", "viewer", "--update-role")
    assert role_of(get_user_model().objects.get(username="root")) == "admin"
    run("second", "--role", "admin", "--password-env", "P", P=PASSWORD)
    run("root", "--role", "viewer", "--update-role")  # another admin exists now
    assert role_of(get_user_model().objects.get(username="root")) == "viewer"


def test_a_bad_role_is_refused_naming_the_option():
    with pytest.raises(CommandError, match="--role"):
        run("vera", "--role", "boss")
    assert not get_user_model().objects.exists()


def test_a_bad_role_on_the_command_line_exits_non_zero_naming_the_option():
    """The real command line: argparse refuses before any database access."""
    result = subprocess.run(
        [sys.executable, "manage.py", "create_user", "vera", "--role", "boss"],
        capture_output=True,
        text=True,
        env={**os.environ, "SCHEDULER_ENV": "test"},
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "--role" in result.stderr and "invalid choice: 'boss'" in result.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--password-env", "UNSET_VARIABLE"], {}, "--password-env: the variable UNSET_VARIABLE"),
        (["--password-env", "P"], {"P": "short"}, "--password-env: This password is too short"),
        (["--password-env", "P"], {"P": "12345678901"}, "--password-env: .*entirely numeric"),
        (["--email", "not-an-address"], {}, "--email: Enter a valid email address"),
    ],
)
def test_bad_password_or_email_is_refused_and_creates_nobody(args, env, message):
    os.environ.pop("UNSET_VARIABLE", None)
    with pytest.raises(CommandError, match=message):
        run("vera", "--role", "viewer", *args, **env)
    assert not get_user_model().objects.exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize("name", ["has space", "semi;colon", "x" * 151])
def test_a_bad_name_is_refused(name):
    with pytest.raises(CommandError, match="NAME: "):
        run(name, "--role", "viewer")
    assert not get_user_model().objects.exists()
