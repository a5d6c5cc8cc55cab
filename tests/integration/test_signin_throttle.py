"""Failed sign-ins are throttled so that guessing is slow and nobody innocent is locked out
(django-axes, ``accounts.signin``): the console's sign-in (where the browsable API sends
visitors), the Django admin's and ``POST /api/v1/auth/token/``.

- Failures lock the pair (user name, address): that user name from that address only.
- An address alone is locked only after many failures across many user names
  (``SIGNIN_ADDRESS_FAILURE_LIMIT``, at most ``SIGNIN_FAILURE_LIMIT`` counted per name).
- A user who signs in correctly from an address that has not failed is never refused: no
  number of guesses at ``admin`` from elsewhere locks the admin out.
- Behind the trusted proxy (``SIGNIN_TRUSTED_PROXIES``, what docker-compose.yml and
  .env.example describe) the address is the client's, not the proxy's: one person's wrong
  passwords do not lock everyone behind the proxy out.
- A wrong password on the token endpoint is a 401; unlocking says which locks it lifted.

The hammering runs through real gunicorn worker processes, wrong passwords released at once by a
barrier, through a trusted proxy's ``X-Forwarded-For``: every failure is counted (none lost to a
race), the answers are 401 or 429 (never a 500), and the lock holds afterwards for that client
only.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
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
from scheduler_admin.base.addresses import parse_trusted_proxies
from scheduler_admin.base.api.throttling import TokenRateThrottle
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
ADDRESS_LIMIT = 50  # SIGNIN_ADDRESS_FAILURE_LIMIT's default
PROXY = "172.31.250.1"  # the compose network's gateway: the host's TLS proxy, as web sees it
ENV_EXAMPLE = Path(COMPOSE_FILE).with_name(".env.example")


def make_user(name: str, role: str = "viewer"):
    return services.create_user(name, role=role, actor=None, password=PASSWORD).user


def token_attempt(password: str, *, username: str = "vera", address: str = "10.0.0.1"):
    client = APIClient(REMOTE_ADDR=address)
    return client.post(TOKEN, {"username": username, "password": password}, format="json")


def console_attempt(password: str, *, username: str = "vera", address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def proxied_attempt(password: str, *, username: str = "vera", client: str, forged: str = ""):
    """A sign-in as the compose stack's proxy passes it on: from the proxy's address, with the
    client's address appended to X-Forwarded-For (after whatever the client wrote there)."""
    forwarded = f"{forged}, {client}" if forged else client
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded).post(
        LOGIN, {"username": username, "password": password}
    )


def failures(**filters: str) -> int:
    return AccessAttempt.objects.filter(**filters).aggregate(n=Sum("failures_since_start"))["n"]


@pytest.fixture
def behind_the_compose_proxy(settings):
    """The settings .env.example gives the compose stack."""
    settings.SIGNIN_TRUSTED_PROXIES = parse_trusted_proxies([PROXY])


# ---------------------------------------------------------------------------------------------
# In-process: the rules
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_wrong_password_on_the_token_endpoint_is_a_401():
    make_user("vera")
    clear_throttle_counts()
    refused = token_attempt("wrong")
    assert refused.status_code == 401, refused.content
    assert refused["WWW-Authenticate"].startswith("Token")
    assert refused.json()["detail"] == "Unable to sign in with the user name and password given."
    assert token_attempt(PASSWORD, username="nobody").status_code == 401
    missing = APIClient().post(TOKEN, {"username": "vera"}, format="json")
    assert missing.status_code == 400 and "password" in missing.json()["errors"]


@pytest.mark.django_db
def test_failures_lock_the_user_name_from_that_address_only():
    make_user("vera")
    make_user("walt")
    clear_throttle_counts()
    answers = [token_attempt("wrong").status_code for _ in range(LIMIT)]
    assert answers == [401] * (LIMIT - 1) + [429]  # the attempt that reaches the limit says so
    locked = token_attempt(PASSWORD)  # the same address, the right password
    assert locked.status_code == 429
    body = locked.json()
    assert body["code"] == "signin_locked" and "Too many failed sign-ins" in body["detail"]
    assert "ask an admin to unlock it" in body["detail"] and locked["Retry-After"] == "900"
    # Vera from an address that has not failed, and anyone else from that address: let in.
    assert token_attempt(PASSWORD, address="10.0.9.9").status_code == 200
    assert token_attempt(PASSWORD, username="walt").status_code == 200
    assert console_attempt(PASSWORD, username="walt").status_code == 302
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_LOCKED_OUT)
    assert event.object_id == "vera" and event.data["path"] == TOKEN
    assert (event.data["locked"], event.data["address"]) == ("pair", "10.0.0.1")
    assert PASSWORD not in str(AccessAttempt.objects.values_list("post_data", "get_data"))


@pytest.mark.django_db
def test_guesses_at_a_user_name_from_many_addresses_never_lock_its_owner_out():
    """Five guesses at admin from anywhere used to lock the admin out for everyone; now every
    guessing address is locked for admin, and the admin signs in from their own."""
    make_user("root-admin", "admin")
    for i in range(20):
        for _ in range(LIMIT):
            console_attempt("wrong", username="root-admin", address=f"198.51.100.{i}")
    assert failures(username="root-admin") == 20 * LIMIT
    assert (
        console_attempt(PASSWORD, username="root-admin", address="198.51.100.0").status_code == 429
    )
    assert console_attempt(PASSWORD, username="root-admin", address="10.1.2.3").status_code == 302
    assert token_attempt(PASSWORD, username="root-admin", address="10.1.2.3").status_code == 200


@pytest.mark.django_db
def test_an_address_is_locked_only_after_many_failures_across_many_names():
    """Slow (about 10 s): some 150 sign-ins through the whole middleware chain, as many as it takes
    to lock an address."""
    make_user("vera")
    shared = "10.0.0.66"  # an office behind one NAT address
    # One person mistyping their own name's password a hundred times: the pair is locked,
    # the office is not.
    for _ in range(100):
        console_attempt("wrong", username="clumsy", address=shared)
    assert console_attempt(PASSWORD, address=shared).status_code == 302
    # Spraying: four guesses at each of many names. One name counts at most LIMIT failures.
    names = (ADDRESS_LIMIT - LIMIT) // (LIMIT - 1)  # 11 names, 44 failures (+5 of clumsy)
    for i in range(names):
        for _ in range(LIMIT - 1):
            console_attempt("wrong", username=f"guess-{i}", address=shared)
    assert console_attempt(PASSWORD, address=shared).status_code == 302  # 49 counted: still in
    console_attempt("wrong", username="one-more", address=shared)  # 50
    refused = console_attempt(PASSWORD, address=shared)
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "Too many failed sign-ins" in page and "didn&#x27;t match" not in page
    assert console_attempt(PASSWORD, address="10.0.0.67").status_code == 302  # elsewhere: fine
    locks = AuditEvent.objects.filter(kind=AuditKind.SIGNIN_LOCKED_OUT)
    assert {(e.data["locked"], e.data["username"]) for e in locks} == {
        ("pair", "clumsy"),
        ("address", None),
    }


@pytest.mark.django_db
def test_behind_the_proxy_the_client_address_counts_not_the_proxys(behind_the_compose_proxy):
    """The compose stack's proxy passes every request on from its own address: one client's
    wrong passwords lock that client, never everyone behind the proxy; and what a client writes
    into X-Forwarded-For itself is never taken for its address."""
    make_user("vera")
    make_user("ada", "admin")
    for i in range(LIMIT):
        proxied_attempt("wrong", client="203.0.113.7", forged=f"192.0.2.{i}")
    assert failures(ip_address="203.0.113.7") == LIMIT
    assert failures(ip_address=PROXY) is None  # nothing counted against the proxy itself
    assert proxied_attempt(PASSWORD, client="203.0.113.7", forged="192.0.2.99").status_code == 429
    assert proxied_attempt(PASSWORD, client="203.0.113.8").status_code == 302  # vera elsewhere
    assert proxied_attempt(PASSWORD, username="ada", client="203.0.113.9").status_code == 302
    # A spraying client behind the proxy locks its own address only.
    for i in range(ADDRESS_LIMIT // (LIMIT - 1) + 1):
        for _ in range(LIMIT - 1):
            proxied_attempt("wrong", username=f"guess-{i}", client="203.0.113.66")
    assert proxied_attempt(PASSWORD, username="ada", client="203.0.113.66").status_code == 429
    assert proxied_attempt(PASSWORD, username="ada", client="203.0.113.10").status_code == 302
    # Straight to web, past the proxy: the header is the client's own writing, not trusted.
    direct = Client(REMOTE_ADDR="172.31.250.7", HTTP_X_FORWARDED_FOR="203.0.113.10")
    direct.post(LOGIN, {"username": "vera", "password": "wrong"})
    assert failures(ip_address="172.31.250.7") == 1
    assert failures(ip_address="203.0.113.10") is None


@pytest.mark.django_db
def test_the_token_throttle_counts_each_client_behind_the_proxy_apart(
    behind_the_compose_proxy, monkeypatch
):
    """``API_TOKEN_RATE`` is per client: behind the proxy per client address (not one budget
    for everyone), and a client writing X-Forwarded-For itself does not get a new budget per
    request."""
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"token": "3/min"})
    clear_throttle_counts()
    make_user("vera")

    def ask(peer: str, forwarded: str) -> int:
        client = APIClient(REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
        return client.post(TOKEN, {"username": "vera", "password": PASSWORD}).status_code

    assert [ask(PROXY, "203.0.113.1") for _ in range(4)] == [200, 200, 200, 429]
    assert ask(PROXY, "203.0.113.2") == 200  # another client behind the same proxy
    forged = [ask("10.5.5.5", f"192.0.2.{i}") for i in range(4)]  # straight to web
    assert forged == [200, 200, 200, 429]


def _env_example_value(name: str) -> str:
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in .env.example")


def test_the_compose_stack_and_env_example_trust_exactly_the_proxy_they_describe():
    """docker-compose.yml publishes web on the host's loopback for a TLS proxy on the host,
    whose connections arrive from the stack network's gateway: that address, and no other
    address of the network (another container), is the trusted proxy."""
    compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
    (network,) = compose["networks"]["default"]["ipam"]["config"]
    assert compose["services"]["web"]["ports"] == ["127.0.0.1:8000:8000"]
    assert _env_example_value("SIGNIN_TRUSTED_PROXIES") == network["gateway"] == PROXY
    environment = compose["services"]["web"]["environment"]
    assert environment["SIGNIN_TRUSTED_PROXIES"] == f"${{SIGNIN_TRUSTED_PROXIES:-{PROXY}}}"
    (trusted,) = parse_trusted_proxies([_env_example_value("SIGNIN_TRUSTED_PROXIES")])
    subnet = ipaddress.ip_network(network["subnet"])
    assert [str(a) for a in subnet.hosts() if a in trusted] == [network["gateway"]]


@pytest.mark.parametrize(
    ("value", "message"),
    [("1", "is a number"), ("proxy.example", "is not an address or a network")],
)
def test_trusted_proxies_that_are_not_addresses_are_refused(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_trusted_proxies([value])
    assert parse_trusted_proxies(["0"]) == ()


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
    assert token_attempt(PASSWORD).status_code == 429  # the same user name and address, the API


@pytest.mark.django_db
def test_failures_below_the_limit_let_the_right_password_in():
    make_user("vera")
    for _ in range(LIMIT - 1):
        console_attempt("wrong")
    assert console_attempt(PASSWORD).status_code == 302
    assert not AuditEvent.objects.filter(kind=AuditKind.SIGNIN_LOCKED_OUT).exists()


@pytest.mark.django_db
def test_an_admin_unlocks_from_the_users_page_and_the_audit_names_the_lock_lifted():
    make_user("vera")
    clear_throttle_counts()
    for _ in range(LIMIT):
        token_attempt("wrong", address="10.0.1.1")
    token_attempt("wrong", address="10.0.1.2")  # a failure, no lock
    admin = signed_in_client("admin", "ada")
    page = admin.get("/users/").content.decode()
    card = page.split('id="lockouts-heading"')[1].split("</section>")[0]
    assert "Sign-in lockouts (1)" in page
    assert "user name <strong>vera</strong> from <code>10.0.1.1</code>" in card
    assert f"<td>{LIMIT}</td>" in card
    response = admin.post("/users/unlock/", {"user": "vera", "address": "10.0.1.1"}, follow=True)
    assert "Unlocked user name &#x27;vera&#x27; from 10.0.1.1" in response.content.decode()
    assert token_attempt(PASSWORD, address="10.0.1.1").status_code == 200
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_UNLOCKED)
    assert (event.actor_name, event.object_id) == ("ada", "vera")
    assert [
        (lock["locked"], lock["username"], lock["address"]) for lock in event.data["lifted"]
    ] == [("pair", "vera", "10.0.1.1")]
    assert "lifted the lock of user name 'vera' from 10.0.1.1" in event.summary
    assert failures(ip_address="10.0.1.2") == 1  # the pair only: other failures stay counted
    bad = admin.post("/users/unlock/", {"address": "not-an-address"}, follow=True)
    assert "is not an IP address" in bad.content.decode()
    assert signed_in_client("operator", "olga").post(
        "/users/unlock/", {"user": "x"}
    ).status_code == 403  # fmt: skip


@pytest.mark.django_db
def test_the_command_lists_and_unlocks_and_says_what_it_lifted():
    """Slow (about 10-20 s): the locks are made by real failed sign-ins before the command lists
    and lifts them."""
    make_user("vera")
    shared = "10.0.0.77"
    for i in range(ADDRESS_LIMIT // LIMIT):
        for _ in range(LIMIT):
            console_attempt("wrong", username=f"guess-{i}", address=shared)
    out = io.StringIO()
    call_command("unlock_signin", "--list", stdout=out)
    listed = out.getvalue()
    assert re.search(r"^pair\tguess-0\t10\.0\.0\.77\t5 failures\tuntil ", listed, re.M)
    assert re.search(r"^address\t\*\t10\.0\.0\.77\t50 failures\tuntil ", listed, re.M)
    out = io.StringIO()
    call_command("unlock_signin", "--address", shared, stdout=out)
    assert "lifted: address 10.0.0.77 (every user name)" in out.getvalue()
    assert "lifted: user name 'guess-9' from 10.0.0.77" in out.getvalue()
    assert console_attempt(PASSWORD, address=shared).status_code == 302
    event = AuditEvent.objects.get(kind=AuditKind.SIGNIN_UNLOCKED)
    assert event.actor_name == "system" and event.data["address"] == shared
    assert len(event.data["lifted"]) == ADDRESS_LIMIT // LIMIT + 1
    with pytest.raises(Exception, match="--address: 'x' is not an IP address"):
        call_command("unlock_signin", "--address", "x", stdout=io.StringIO())


# ---------------------------------------------------------------------------------------------
# Real server processes behind a proxy, attempts released at once
# ---------------------------------------------------------------------------------------------

#: The test is the proxy: it connects from loopback and appends the client's address.
LOOPBACK_PROXY = "127.0.0.1"
ATTACKER = "203.0.113.50"


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
    """gunicorn as docker-compose runs it, with 3 workers, on the test database, behind the
    test as its trusted proxy (``SIGNIN_TRUSTED_PROXIES``, as the compose stack trusts its)."""
    clear_throttle_counts()
    port = free_port()
    compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
    args = native_command(
        compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    args[args.index("--workers") + 1] = "3"
    env = test_database_env(
        {
            "XDG_RUNTIME_DIR": str(tmp_path),
            "API_TOKEN_RATE": "10000/min",
            "SIGNIN_TRUSTED_PROXIES": LOOPBACK_PROXY,
        },
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


def _token_call(address: str, password: str, client: str = ATTACKER) -> int:
    body = json.dumps({"username": "vera", "password": password})
    headers = {"Content-Type": "application/json", "X-Forwarded-For": client}
    status, _, _ = _request(address, "POST", TOKEN, body, headers)
    return status


def _console_call(address: str, password: str, client: str = ATTACKER) -> int:
    """GET the sign-in page for its CSRF cookie and token, then post the form, as a browser
    behind the proxy."""
    _, page, response = _request(address, "GET", LOGIN, headers={"X-Forwarded-For": client})
    cookie = response.getheader("Set-Cookie").split(";")[0]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urlencode({"username": "vera", "password": password, "csrfmiddlewaretoken": token})
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": cookie,
        "X-Forwarded-For": client,
    }
    return _request(address, "POST", LOGIN, form, headers)[0]


@pytest.mark.redis
def test_wrong_passwords_released_at_once_behind_the_proxy_lock_that_client_only(web):
    password = _server_user()
    attempts = 16
    statuses = release_together(
        *[lambda: _token_call(web, "wrong")] * (attempts // 2),
        *[lambda: _console_call(web, "wrong")] * (attempts // 2),
    )
    assert all(status in (401, 200, 429) for status in statuses), statuses  # never a 500
    assert 429 in statuses
    assert failures(username="vera", ip_address=ATTACKER) == attempts  # none lost to a race
    assert failures(ip_address=LOOPBACK_PROXY) is None
    assert _token_call(web, password) == 429
    assert _console_call(web, password) == 429
    # Vera herself, behind the same proxy from her own address: never refused.
    assert _token_call(web, password, client="198.51.100.20") == 200
    assert _console_call(web, password, client="198.51.100.20") == 302
    events = AuditEvent.objects.filter(kind=AuditKind.SIGNIN_LOCKED_OUT)
    assert {(e.object_id, e.data["locked"], e.data["address"]) for e in events} == {
        ("vera", "pair", ATTACKER)
    }

    out = io.StringIO()
    call_command("unlock_signin", "--user", "vera", stdout=out)
    assert f"lifted: user name 'vera' from {ATTACKER}" in out.getvalue()
    assert _token_call(web, password) == 200
    assert _console_call(web, password) == 302
