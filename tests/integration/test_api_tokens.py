"""API tokens: hashed, named, several per user, expiring, last use recorded cheaply, listed and
revoked by their owner and by admins (console, commands, the token endpoint), every change
audited, and the keys of DRF's old ``authtoken`` table carried over by the migration."""

from __future__ import annotations

import html
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_admin.accounts import services, tokens
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.audit.models import AuditEvent, AuditKind
from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-9"
PARTITIONS = "/api/v1/partitions/"


def make_user(name: str, role: str = "viewer"):
    return services.create_user(name, role=role, actor=None, password=PASSWORD).user


def api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def shown_secret(response) -> str:
    assert response.status_code == 200, response.content[:500]
    page = response.content.decode()
    assert "shown only this once" in page and "no-store" in response["Cache-Control"]
    found = re.search(r'id="secret" class="secret" type="text" value="([^"]+)"', page)
    assert found is not None
    return html.unescape(found.group(1))


def flash(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


# ---------------------------------------------------------------------------------------------
# Storage and authentication
# ---------------------------------------------------------------------------------------------


def test_only_the_digest_is_stored_and_several_named_tokens_work_side_by_side():
    vera = make_user("vera")
    agent_key = services.issue_token(vera, actor=None, name="cluster-agent")
    script_key = services.issue_token(vera, actor=None, name="nightly-report")
    assert agent_key.startswith("sa_") and len(agent_key) == 46 and agent_key != script_key
    rows = list(ApiToken.objects.filter(user=vera).values())
    assert [row["name"] for row in rows] == ["cluster-agent", "nightly-report"]
    for row, key in zip(rows, (agent_key, script_key), strict=True):
        assert row["digest"] == tokens.digest_of(key) and row["prefix"] == key[:9]
        assert key not in str(row)  # the key itself is nowhere in the row
    assert agent_key not in str(list(AuditEvent.objects.values_list("summary", "data")))
    assert api(agent_key).get(PARTITIONS).status_code == 200
    assert api(script_key).get(PARTITIONS).status_code == 200
    assert api(agent_key[:-1] + "x").get(PARTITIONS).status_code == 401


def test_a_new_token_expires_after_the_default_days_unless_told_otherwise(settings):
    vera = make_user("vera")
    before = timezone.now()
    services.issue_token(vera, actor=None, name="a")
    settings.API_TOKEN_EXPIRY_DAYS = 0
    services.issue_token(vera, actor=None, name="b")
    settings.API_TOKEN_EXPIRY_DAYS = 30
    services.issue_token(vera, actor=None, name="c", no_expiry=True)
    chosen = timezone.now() + timedelta(days=7)
    services.issue_token(vera, actor=None, name="d", expires_at=chosen)
    expiry = dict(ApiToken.objects.values_list("name", "expires_at"))
    assert before + timedelta(days=90) <= expiry["a"] <= timezone.now() + timedelta(days=90)
    assert expiry["b"] is None and expiry["c"] is None and expiry["d"] == chosen
    with pytest.raises(services.AccountError, match="in the future"):
        services.issue_token(vera, actor=None, name="e", expires_at=timezone.now())
    with pytest.raises(services.AccountError, match="needs a name"):
        services.issue_token(vera, actor=None, name="  ")


def test_an_expired_token_gets_401_saying_so():
    vera = make_user("vera")
    key = services.issue_token(vera, actor=None, name="old-script")
    past = timezone.now() - timedelta(seconds=1)
    ApiToken.objects.filter(user=vera).update(expires_at=past)
    response = api(key).get(PARTITIONS)
    assert response.status_code == 401
    assert "Token 'old-script' expired at" in response.json()["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_issuing_a_token_of_the_same_name_replaces_it():
    vera = make_user("vera")
    old = services.issue_token(vera, actor=None, name="agent")
    new = services.issue_token(vera, actor=None, name="agent")
    assert ApiToken.objects.filter(user=vera).count() == 1
    assert api(old).get(PARTITIONS).status_code == 401
    assert api(new).get(PARTITIONS).status_code == 200
    latest = AuditEvent.objects.filter(kind=AuditKind.TOKEN_ISSUED).first()  # newest first
    assert latest.data["replaced"] is True and latest.data["token"] == "agent"


def test_last_use_is_recorded_at_most_once_a_minute():
    vera = make_user("vera")
    key = services.issue_token(vera, actor=None)
    client = api(key)

    def updates() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(PARTITIONS).status_code == 200
        return sum(
            'UPDATE "accounts_apitoken"' in query["sql"] for query in queries.captured_queries
        )

    assert ApiToken.objects.get().last_used_at is None
    assert updates() == 1
    first = ApiToken.objects.get().last_used_at
    assert first is not None and timezone.now() - first < timedelta(minutes=1)
    assert updates() == 0  # the same minute: no write at all
    assert ApiToken.objects.get().last_used_at == first
    stale = timezone.now() - timedelta(seconds=61)
    ApiToken.objects.update(last_used_at=stale)
    assert updates() == 1
    assert ApiToken.objects.get().last_used_at > stale
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(seconds=30))
    assert updates() == 0


def test_a_deactivated_users_tokens_are_deleted_and_it_gets_none():
    vera = make_user("vera")
    key = services.issue_token(vera, actor=None)
    services.set_active(vera, False, actor=None)
    assert not ApiToken.objects.exists() and api(key).get(PARTITIONS).status_code == 401
    with pytest.raises(services.AccountError, match="is deactivated"):
        services.issue_token(vera, actor=None)


# ---------------------------------------------------------------------------------------------
# The owner's page (/account/tokens/)
# ---------------------------------------------------------------------------------------------


def test_any_user_issues_lists_and_revokes_their_own_tokens():
    viewer = signed_in_client("viewer", "vic")
    vic = get_user_model().objects.get(username="vic")
    assert 'href="/account/tokens/"' in viewer.get("/").content.decode()
    page = viewer.get("/account/tokens/").content.decode()
    assert "No API tokens." in page and 'value="90"' in page  # the default expiry, prefilled

    key = shown_secret(
        viewer.post("/account/tokens/issue/", {"name": "laptop", "expires_days": "7"})
    )
    token = ApiToken.objects.get(user=vic)
    assert token.name == "laptop"
    assert timedelta(days=6, hours=23) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert api(key).get(PARTITIONS).status_code == 200
    listed = viewer.get("/account/tokens/").content.decode()
    assert "laptop" in listed and f"{key[:9]}…" in listed and key not in listed
    event = AuditEvent.objects.get(kind=AuditKind.TOKEN_ISSUED)
    assert (event.actor_name, event.object_id) == ("vic", "vic")

    ask = viewer.post(f"/account/tokens/{token.pk}/revoke/")
    assert "Revoke your API token &#x27;laptop&#x27;" in ask.content.decode()
    assert api(key).get(PARTITIONS).status_code == 200  # only asked
    done = viewer.post(f"/account/tokens/{token.pk}/revoke/", {"confirmed": "yes"}, follow=True)
    assert "Revoked your API token &#x27;laptop&#x27;." in done.content.decode()
    assert api(key).get(PARTITIONS).status_code == 401
    event = AuditEvent.objects.get(kind=AuditKind.TOKEN_REVOKED)
    assert (event.actor_name, event.object_id) == ("vic", "vic")


def test_a_user_sees_and_revokes_no_one_elses_tokens():
    olga = make_user("olga", "operator")
    key = services.issue_token(olga, actor=None, name="olgas-agent")
    other = signed_in_client("viewer", "vic")
    assert "olgas-agent" not in other.get("/account/tokens/").content.decode()
    token = ApiToken.objects.get(user=olga)
    response = other.post(f"/account/tokens/{token.pk}/revoke/", {"confirmed": "yes"})
    assert response.status_code == 404
    assert api(key).get(PARTITIONS).status_code == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "", "expires_days": "7"}, "This field is required."),
        ({"name": "x" * 101, "expires_days": "7"}, "at most 100 characters"),
        ({"name": "x", "expires_days": "-1"}, "greater than or equal to 0"),
        ({"name": "x", "expires_days": "99999"}, "less than or equal to 3650"),
        ({"name": "x\x00", "expires_days": "7"}, "Null characters are not allowed."),
    ],
)
def test_bad_token_input_is_shown_inline_and_issues_nothing(body, message):
    viewer = signed_in_client("viewer", "vic")
    response = viewer.post("/account/tokens/issue/", body)
    assert response.status_code == 400 and message in response.content.decode()
    assert not ApiToken.objects.exists() and not AuditEvent.objects.exists()


def test_a_token_that_never_expires_is_listed_so():
    viewer = signed_in_client("viewer", "vic")
    viewer.post("/account/tokens/issue/", {"name": "agent", "expires_days": "0"})
    assert ApiToken.objects.get().expires_at is None
    row = viewer.get("/account/tokens/").content.decode().split('<th scope="row">agent')[1]
    assert "never" in row.split("</tr>")[0]


# ---------------------------------------------------------------------------------------------
# Admins: any user's tokens (/users/<pk>/tokens/)
# ---------------------------------------------------------------------------------------------


def test_an_admin_issues_and_revokes_tokens_of_another_user():
    admin = signed_in_client("admin", "ada")
    vera = make_user("vera", "operator")
    mine = services.issue_token(vera, actor=None, name="cluster-agent")
    page = admin.get(f"/users/{vera.pk}/tokens/").content.decode()
    assert "API tokens of vera" in page and "cluster-agent" in page and mine not in page

    key = shown_secret(
        admin.post(f"/users/{vera.pk}/tokens/issue/", {"name": "report", "expires_days": "30"})
    )
    assert api(key).get(PARTITIONS).status_code == 200
    event = AuditEvent.objects.filter(kind=AuditKind.TOKEN_ISSUED).first()
    assert (event.actor_name, event.object_id, event.data["token"]) == ("ada", "vera", "report")

    agent = ApiToken.objects.get(user=vera, name="cluster-agent")
    ask = admin.post(f"/users/{vera.pk}/tokens/{agent.pk}/revoke/")
    assert "Revoke vera&#x27;s API token &#x27;cluster-agent&#x27;" in ask.content.decode()
    admin.post(f"/users/{vera.pk}/tokens/{agent.pk}/revoke/", {"confirmed": "yes"})
    assert api(mine).get(PARTITIONS).status_code == 401
    assert api(key).get(PARTITIONS).status_code == 200  # the other token is untouched
    revoked = AuditEvent.objects.get(kind=AuditKind.TOKEN_REVOKED)
    assert revoked.actor_name == "ada" and revoked.data["tokens"][0]["token"] == "cluster-agent"

    services.issue_token(get_user_model().objects.get(username="ada"), actor=None, name="ada")
    ada_token = ApiToken.objects.get(name="ada")
    # A token of another user under vera's URL is not found.
    assert admin.post(f"/users/{vera.pk}/tokens/{ada_token.pk}/revoke/").status_code == 404


def test_a_deactivated_user_is_offered_no_token_form():
    admin = signed_in_client("admin", "ada")
    vera = make_user("vera")
    services.set_active(vera, False, actor=None)
    page = admin.get(f"/users/{vera.pk}/tokens/").content.decode()
    assert "reactivate the account to issue a token" in page
    response = admin.post(f"/users/{vera.pk}/tokens/issue/", {"name": "x", "expires_days": "1"})
    assert response.status_code == 400 and "is deactivated" in response.content.decode()
    assert not ApiToken.objects.exists()
    assert admin.get("/users/999999/tokens/").status_code == 404


# ---------------------------------------------------------------------------------------------
# The token endpoint and the commands
# ---------------------------------------------------------------------------------------------


def test_the_token_endpoint_issues_a_named_token_replacing_its_namesake():
    make_user("vera")
    client = APIClient()
    body = {"username": "vera", "password": PASSWORD}
    first = client.post("/api/v1/auth/token/", body, format="json").json()
    assert first["name"] == "api" and first["expires_at"] is not None
    second = client.post("/api/v1/auth/token/", body, format="json").json()
    third = client.post(
        "/api/v1/auth/token/", {**body, "name": "ci"}, format="json"
    ).json()  # fmt: skip
    assert api(first["token"]).get(PARTITIONS).status_code == 401  # replaced by the second
    assert api(second["token"]).get(PARTITIONS).status_code == 200
    assert api(third["token"]).get(PARTITIONS).status_code == 200
    assert sorted(ApiToken.objects.values_list("name", flat=True)) == ["api", "ci"]


def test_the_commands_create_list_and_revoke_tokens():
    vera = make_user("vera", "operator")
    out = io.StringIO()
    call_command("create_api_token", "vera", "--name", "agent", "--no-expiry", stdout=out)
    key = out.getvalue().strip()
    assert api(key).get(PARTITIONS).status_code == 200
    out = io.StringIO()
    call_command("create_api_token", "vera", "--expires-days", "3", stdout=out)
    short = out.getvalue().strip()
    expiry = ApiToken.objects.get(user=vera, name="default").expires_at
    assert timedelta(days=2, hours=23) < expiry - timezone.now() <= timedelta(days=3)

    out = io.StringIO()
    call_command("list_api_tokens", "vera", stdout=out)
    listing = out.getvalue()
    assert f"vera\tagent\t{key[:9]}…" in listing and "never" in listing
    assert key not in listing and short not in listing

    call_command("revoke_api_token", "vera", "agent", stdout=io.StringIO())
    assert api(key).get(PARTITIONS).status_code == 401
    assert api(short).get(PARTITIONS).status_code == 200
    call_command("revoke_api_token", "vera", "--all", stdout=io.StringIO())
    assert not ApiToken.objects.exists()
    assert AuditEvent.objects.filter(kind=AuditKind.TOKEN_REVOKED, actor_name="system").count() == 2
    with pytest.raises(CommandError, match="no token named"):
        call_command("revoke_api_token", "vera", "agent", stdout=io.StringIO())
    with pytest.raises(CommandError, match="at least 1"):
        call_command("create_api_token", "vera", "--expires-days", "0", stdout=io.StringIO())


# ---------------------------------------------------------------------------------------------
# The migration from DRF's authtoken table
# ---------------------------------------------------------------------------------------------

BEFORE = [("accounts", "0001_roles")]
AFTER = [("accounts", "0002_api_tokens")]
#: DRF's ``authtoken_token`` as its migrations created it on PostgreSQL.
LEGACY_TABLE = """
CREATE TABLE authtoken_token (
    key varchar(40) NOT NULL PRIMARY KEY,
    created timestamp with time zone NOT NULL,
    user_id integer NOT NULL UNIQUE REFERENCES auth_user (id) DEFERRABLE INITIALLY DEFERRED
)
"""


@pytest.mark.django_db(transaction=True)
def test_the_migration_hashes_existing_tokens_which_keep_working_and_drops_the_old_table():
    vera = make_user("vera", "operator")
    legacy_key = "0123456789abcdef0123456789abcdef01234567"  # DRF keys: 40 hex characters
    created = timezone.now() - timedelta(days=400)
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute(LEGACY_TABLE)
            cursor.execute(
                "INSERT INTO authtoken_token (key, created, user_id) VALUES (%s, %s, %s)",
                [legacy_key, created, vera.pk],
            )
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert "authtoken_token" not in connection.introspection.table_names()
    token = ApiToken.objects.get(user=vera)
    assert (token.name, token.prefix, token.expires_at) == ("default", legacy_key[:6], None)
    assert token.created_at == created and token.digest == tokens.digest_of(legacy_key)
    assert api(legacy_key).get(PARTITIONS).status_code == 200  # the agent's old key still works
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_migration_on_a_new_database_has_nothing_to_carry_over():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert not ApiToken.objects.exists()


def test_nothing_but_a_signed_in_user_reaches_the_token_pages():
    assert Client().get("/account/tokens/").status_code == 302
    assert Client().post("/account/tokens/issue/", {"name": "x"}).status_code == 302
