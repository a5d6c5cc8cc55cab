"""Failed sign-ins are throttled per user name and per address (django-axes; issue 16, part
"auth"): the console's sign-in (where the browsable API sends visitors), the Django admin's and
``POST /api/v1/auth/token/`` refuse a locked-out user name or address with a clear 429, right
password or not; admins unlock it (command, Users page), and lockouts and unlocks are audited.

The hammering runs through real gunicorn worker processes, wrong passwords released at once by a
barrier: every failure is counted (none lost to a race), the answers are 400 or 429 (never a
500), and the lock holds afterwards.
"""

from __future__ import annotations

import http.client
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Sum
from django.test import Client
from rest_framework.test import APIClient

from scheduler_admin.accounts import services
from scheduler_admin.audit.models import AuditEvent, AuditKind
from tests.e2e.browser import create_user
from tests.support.compose import COMPOSE_FILE, CONTAINER_BIND, native_command
from tests.support.console import signed_in_client
from tests.support.processes import ManagedProcess, free_port, test_database_env, wait_until
from tests.support.racing import release_together
from tests.support.throttles import clear_throttle_counts

PASSWORD = "correct-horse-battery-9"
TOKEN = "/api/v1/auth/token/"
LOGIN = "/accounts/login/"
LIMIT = 5  # SIGNIN_FAILURE_LIMIT's default


def make_user(name: str, role: str = "viewer"):
    return services.create_user(name, role=role, actor=None, password=PASSWORD).user


def token_attempt(password: str, *, username: str = "vera", address: str = "10.0.0.1"):
    client = APIClient(REMOTE_ADDR=address)
    return client.post(TOKEN, {"username": username, "password": password}, format="json")


def console_attempt(password: str, *, username: str = "vera", address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def failures(**filters: str) -> int:
    return AccessAttempt.objects.filter(**filters).aggregate(n=Sum("failures_since_start"))["n"]


# ---------------------------------------------------------------------------------------------
# In-process: the rules
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_token_endpoint_locks_a_user_name_after_the_limit_even_for_the_right_password():
    make_user("vera")
    clear_throttle_counts()
    answers = [token_attempt("wrong", address=f"10.0.0.{i}").status_code for i in range(LIMIT)]
    assert answers == [400] * (LIMIT - 1) + [429]  # the attempt that reaches the limit says so
    locked = token_attempt(PASSWORD, address="10.0.9.9")  # another address, the right password
    assert locked.status_code == 429
    body = locked.json()
    assert body["code"] == "signin_locked" and "Too many failed sign-ins" in body["detail"]
    assert "ask an admin to unlock it" in body["detail"] and locked["Retry-After"] == "900"
    assert token_attempt(PASSWORD, username="other", address="10.0.9.9").status_code == 400
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_LOCKED_OUT)
    assert event.object_id == "vera" and event.data["path"] == TOKEN
    assert PASSWORD not in str(AccessAttempt.objects.values_list("post_data", "get_data"))


@pytest.mark.django_db
def test_an_address_is_locked_after_the_limit_whatever_user_names_it_tries():
    make_user("vera")
    for i in range(LIMIT):
        console_attempt("wrong", username=f"guess-{i}", address="10.0.0.66")
    refused = console_attempt(PASSWORD, address="10.0.0.66")
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "Too many failed sign-ins for this user name or from your address" in page
    assert "didn&#x27;t match" not in page
    assert console_attempt(PASSWORD, address="10.0.0.67").status_code == 302  # elsewhere: fine


@pytest.mark.django_db
def test_the_console_and_the_admin_sign_in_count_together_and_show_the_message():
    make_user("vera", "admin")
    for _ in range(LIMIT - 1):
        assert console_attempt("wrong").status_code == 200  # the form again, with its error
    admin_login = Client(REMOTE_ADDR="10.0.0.1").post(
        "/admin/login/", {"username": "vera", "password": "wrong", "next": "/admin/"}
    )
    assert admin_login.status_code == 429
    assert console_attempt(PASSWORD).status_code == 429
    assert token_attempt(PASSWORD).status_code == 429  # the same user name, the API


@pytest.mark.django_db
def test_failures_below_the_limit_let_the_right_password_in():
    make_user("vera")
    for _ in range(LIMIT - 1):
        console_attempt("wrong")
    assert console_attempt(PASSWORD).status_code == 302
    assert not AuditEvent.objects.filter(kind=AuditKind.SIGNIN_LOCKED_OUT).exists()


@pytest.mark.django_db
def test_an_admin_unlocks_from_the_users_page_and_it_is_audited():
    make_user("vera")
    for i in range(LIMIT):
        token_attempt("wrong", address=f"10.0.1.{i}")
    admin = signed_in_client("admin", "ada")
    page = admin.get("/users/").content.decode()
    card = page.split('id="lockouts-heading"')[1].split("</section>")[0]
    assert "Sign-in lockouts (1)" in page and "<strong>vera</strong>" in card
    assert f"<td>{LIMIT}</td>" in card
    response = admin.post("/users/unlock/", {"user": "vera"}, follow=True)
    assert "Unlocked user name vera" in response.content.decode()
    assert token_attempt(PASSWORD, address="10.0.1.0").status_code == 200
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_UNLOCKED)
    assert (event.actor_name, event.object_id) == ("ada", "vera")
    assert signed_in_client("operator", "olga").post(
        "/users/unlock/", {"user": "x"}
    ).status_code == 403  # fmt: skip


@pytest.mark.django_db
def test_the_command_lists_and_unlocks_addresses_and_users():
    make_user("vera")
    for i in range(LIMIT):
        console_attempt("wrong", username=f"guess-{i}", address="10.0.0.77")
    out = io.StringIO()
    call_command("unlock_signin", "--list", stdout=out)
    assert re.search(r"^address\t10\.0\.0\.77\t5 failures\tuntil ", out.getvalue(), re.M)
    call_command("unlock_signin", "--address", "10.0.0.77", stdout=io.StringIO())
    assert console_attempt(PASSWORD, address="10.0.0.77").status_code == 302
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_UNLOCKED)
    assert event.actor_name == "system" and event.data["address"] == "10.0.0.77"


@pytest.mark.django_db
def test_the_address_behind_trusted_proxies_is_the_one_they_saw(settings):
    """With one trusted proxy the right-most X-Forwarded-For entry counts: a client cannot pick
    a fresh address per attempt by writing the header itself."""
    settings.SIGNIN_TRUSTED_PROXIES = 1
    make_user("vera")
    for i in range(LIMIT):
        Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=f"1.2.3.{i}, 172.16.0.5").post(
            LOGIN, {"username": f"guess-{i}", "password": "x"}
        )
    assert failures(ip_address="172.16.0.5") == LIMIT
    refused = Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="9.9.9.9, 172.16.0.5").post(
        LOGIN, {"username": "vera", "password": PASSWORD}
    )
    assert refused.status_code == 429


# ---------------------------------------------------------------------------------------------
# Real server processes, attempts released at once
# ---------------------------------------------------------------------------------------------


def _request(address: str, method: str, path: str, body: str = "", headers=None):
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request(method, path, body=body or None, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace"), response
    finally:
        connection.close()


@pytest.fixture
def web(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """gunicorn as docker-compose runs it, with 3 workers, on the test database."""
    clear_throttle_counts()
    port = free_port()
    compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
    args = native_command(
        compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    args[args.index("--workers") + 1] = "3"
    env = test_database_env(
        {"XDG_RUNTIME_DIR": str(tmp_path), "API_TOKEN_RATE": "10000/min"},
        redis_url=settings.REDIS_URL,
    )
    with ManagedProcess("signin-web", args, env=env, log_dir=tmp_path) as process:
        address = f"127.0.0.1:{port}"
        wait_until(
            lambda: _healthy(address), 30, message="gunicorn never answered", watch=[process]
        )
        yield address


def _healthy(address: str) -> bool:
    try:
        return _request(address, "GET", "/healthz")[0] == 200
    except OSError:
        return False


def _server_user() -> str:
    """vera, with her password hashed as the server's (production) settings can check it."""
    get_user_model().objects.filter(username="vera").delete()
    return create_user("vera", "viewer")


def _token_call(address: str, password: str) -> int:
    body = json.dumps({"username": "vera", "password": password})
    status, _, _ = _request(address, "POST", TOKEN, body, {"Content-Type": "application/json"})
    return status


def _console_call(address: str, password: str) -> int:
    """GET the sign-in page for its CSRF cookie and token, then post the form, as a browser."""
    _, page, response = _request(address, "GET", LOGIN)
    cookie = response.getheader("Set-Cookie").split(";")[0]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urlencode({"username": "vera", "password": password, "csrfmiddlewaretoken": token})
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    return _request(address, "POST", LOGIN, form, headers)[0]


@pytest.mark.redis
def test_wrong_passwords_released_at_once_are_all_counted_and_lock_the_user(web):
    password = _server_user()
    attempts = 16
    statuses = release_together(
        *[lambda: _token_call(web, "wrong")] * (attempts // 2),
        *[lambda: _console_call(web, "wrong")] * (attempts // 2),
    )
    assert all(status in (400, 200, 429) for status in statuses), statuses  # never a 500
    assert 429 in statuses
    assert failures(username="vera") == attempts  # not one lost to a race
    assert _token_call(web, password) == 429
    assert _console_call(web, password) == 429
    events = AuditEvent.objects.filter(kind=AuditKind.SIGNIN_LOCKED_OUT)
    assert {(event.object_id, event.data["locked"]) for event in events} >= {("vera", "user")}

    call_command("unlock_signin", "--user", "vera", stdout=io.StringIO())
    assert _token_call(web, password) == 200
    assert _console_call(web, password) == 302
