"""Tenant accounts: a user with queue grants only (no global role) is made through each path an
admin has, the Users page, ``manage.py create_user --grant PARTITION:QUEUE:ROLE`` and single
sign-on (provider groups mapped to grants, ``OIDC_GRANT_GROUPS``), and sees only their subtrees.

Before, each path required a global role of viewer or more, so a "tenant admin" made in the
console read every tenant's queues, runs and audit. Bad input creates nothing: a role-less
account without a grant, a grant on a queue that does not exist, a malformed ``--grant``.
(The browser walk through every page, for an account made each way:
``tests/e2e/test_tenant_accounts.py``.)
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client

from scheduler_admin.accounts import grants
from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.models import GrantSource, QueueGrant
from scheduler_admin.accounts.oidc import SignInRefused, sign_in_identity
from scheduler_admin.accounts.oidc_config import parse_grant_groups
from scheduler_admin.accounts.permissions import Held, grants_of
from scheduler_admin.accounts.roles import role_of
from scheduler_admin.audit.models import AuditEvent, AuditKind
from tests.support.console import signed_in_client
from tests.support.tenants import tenant_state

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-pass-phrase-42"
QUEUES = "/api/v1/partitions/default/queues/"


def _sees(user) -> set[str]:
    """The queue paths ``user`` reads over the API (a fresh sign-in)."""
    client = Client()
    client.force_login(user)
    answer = client.get(QUEUES, {"page_size": 100})
    assert answer.status_code == 200, answer.content
    return {queue["path"] for queue in answer.json()["results"]}


def _held(user) -> list[Held]:
    return grants_of(get_user_model().objects.get(pk=user.pk), fresh=True)


# --- The Users page -------------------------------------------------------------------------


def test_the_users_page_makes_a_tenant_account_that_sees_only_its_subtree():
    tenant_state()
    admin = signed_in_client("admin", "ada")
    answer = admin.post(
        "/users/create/",
        {"username": "tina", "role": "none", "grant_partition": "default",
         "grant_queue": "root.team-a", "grant_role": "admin", "password": PASSWORD},
        follow=True,
    )  # fmt: skip
    assert answer.status_code == 200
    assert (
        "Created tina with no global role and the queue grant admin of root.team-a in default."
        in answer.content.decode()
    )
    tina = get_user_model().objects.get(username="tina")
    assert role_of(tina) is None and not tina.is_staff and not tina.is_superuser
    assert _held(tina) == [Held("default", "root.team-a", "admin")]
    assert _sees(tina) == {"root.team-a", "root.team-a.web", "root.team-a.batch"}
    created = AuditEvent.objects.get(kind=AuditKind.USER_CREATED, object_id="tina")
    assert created.data["role"] is None and created.data["grants"] == ["default:root.team-a:admin"]
    assert created.actor_name == "ada"
    assert AuditEvent.objects.filter(
        kind=AuditKind.GRANT_CREATED, queue_path="root.team-a"
    ).exists()
    listed = admin.get("/users/").content.decode()
    row = listed.split('<th scope="row">tina')[1].split("</tr>")[0]
    assert "none" in row and "admin of root.team-a in default" in row
    assert '<option value="none" selected>' in row


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "grant_queue", "A user without a global role needs a queue grant"),
        ({"grant_queue": "root.team-a"}, "grant_role", "Choose the role the grant gives"),
        ({"grant_queue": "root.nope", "grant_role": "admin"}, "grant_queue",
         "Queue grant default:root.nope:admin: Partition default has no queue root.nope."),
    ],
)  # fmt: skip
def test_the_users_page_refuses_a_tenant_account_it_cannot_make_and_creates_nothing(
    body, field, message
):
    tenant_state()
    admin = signed_in_client("admin", "ada")
    events = AuditEvent.objects.count()
    answer = admin.post(
        "/users/create/",
        {"username": "tina", "role": "none", "grant_partition": "default",
         "password": PASSWORD, **body},
    )  # fmt: skip
    assert answer.status_code == 400
    page = answer.content.decode()
    assert message in page.replace("&#x27;", "'")
    field_html = page.split(f'id="id_{field}"')[1].split('<div class="field">')[0]
    assert message in field_html.replace("&#x27;", "'")  # next to the field at fault
    assert not get_user_model().objects.filter(username="tina").exists()
    assert not QueueGrant.objects.exists()
    assert AuditEvent.objects.count() == events


def test_the_users_page_takes_a_global_role_away_leaving_the_grants():
    tenant_state()
    user = get_user_model().objects.create_user("vic", password=PASSWORD)
    user.groups.set([Group.objects.get_or_create(name="viewer")[0]])
    grants.give_grant(partition="default", queue_path="root.team-b", role="operator",
                      user="vic", actor=None)  # fmt: skip
    assert len(_sees(user)) == 7  # a global viewer reads everything
    admin = signed_in_client("admin", "ada")
    asked = admin.post(f"/users/{user.pk}/role/", {"role": "none"})
    assert "Change the role of vic from viewer to none (queue grants only)?" in (
        asked.content.decode()
    )
    done = admin.post(f"/users/{user.pk}/role/", {"role": "none", "confirmed": "yes"}, follow=True)
    assert "vic now has no global role." in done.content.decode()
    assert role_of(get_user_model().objects.get(pk=user.pk)) is None
    assert _sees(user) == {"root.team-b", "root.team-b.web", "root.team-b.batch"}
    change = AuditEvent.objects.get(kind=AuditKind.USER_ROLE_CHANGED, object_id="vic")
    assert (change.data["from"], change.data["to"]) == ("viewer", None)


# --- manage.py create_user --grant ----------------------------------------------------------


def test_create_user_with_grants_makes_a_tenant_account(monkeypatch):
    tenant_state()
    monkeypatch.setenv("TINA_PASSWORD", PASSWORD)
    out = io.StringIO()
    call_command(
        "create_user", "tina", "--grant", "default:root.team-a:admin",
        "--grant", "default:root.team-b.web:operator", "--password-env", "TINA_PASSWORD",
        stdout=out,
    )  # fmt: skip
    assert out.getvalue() == (
        "Created user 'tina' with no global role and the queue grants admin of root.team-a in "
        "default, operator of root.team-b.web in default.\n"
    )
    tina = get_user_model().objects.get(username="tina")
    assert role_of(tina) is None
    assert _held(tina) == [
        Held("default", "root.team-a", "admin"),
        Held("default", "root.team-b.web", "operator"),
    ]
    assert _sees(tina) == {"root.team-a", "root.team-a.web", "root.team-a.batch", "root.team-b.web"}
    assert tina.check_password(PASSWORD)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--role or --grant: a user needs a global role or at least one queue grant."),
        (["--grant", "default:root.team-a"], "--grant: 'default:root.team-a' must read "
                                             "PARTITION:QUEUE:ROLE"),
        (["--grant", "default:root.team-a:viewer"], "unknown role 'viewer'"),
        (["--grant", "default:root.team-a:admin", "--grant", "default:root.nope:admin"],
         "--grant: Queue grant default:root.nope:admin: Partition default has no queue "
         "root.nope."),
        (["--grant", "nowhere:root:admin"], "--grant: Queue grant nowhere:root:admin: No "
                                            "partition named 'nowhere'."),
    ],
)  # fmt: skip
def test_create_user_refuses_bad_grants_and_creates_nothing(args, message):
    tenant_state()
    with pytest.raises(CommandError) as refused:
        call_command("create_user", "tina", *args, stdout=io.StringIO())
    assert message in str(refused.value)
    assert not get_user_model().objects.filter(username="tina").exists()
    assert not QueueGrant.objects.exists()
    assert not AuditEvent.objects.filter(kind=AuditKind.USER_CREATED).exists()


# --- Single sign-on: groups mapped to grants ------------------------------------------------

GRANT_GROUPS = "default:root.team-a:admin=team-a-admins;default:root.team-b:operator=team-b"


@pytest.fixture
def sso(settings):
    settings.OIDC_PROVIDER_NAME = "TestIdP"
    settings.OIDC_ROLE_BY_GROUP = {"readers": "viewer"}
    settings.OIDC_GRANTS_BY_GROUP = parse_grant_groups(GRANT_GROUPS)


def _sign_in(groups: list[str]):
    return sign_in_identity(
        issuer="https://idp.example", subject="s-1", username="tara", email="", groups=groups
    )


def test_single_sign_on_makes_a_tenant_account_whose_grants_follow_its_groups(sso):
    tenant_state()
    tara = _sign_in(["team-a-admins", "staff"])
    assert role_of(tara) is None
    assert _held(tara) == [Held("default", "root.team-a", "admin")]
    assert QueueGrant.objects.get(user=tara).source == GrantSource.SINGLE_SIGN_ON
    assert _sees(tara) == {"root.team-a", "root.team-a.web", "root.team-a.batch"}
    created = AuditEvent.objects.get(kind=AuditKind.USER_CREATED, object_id="tara")
    assert created.data["role"] is None and created.data["grants"] == ["default:root.team-a:admin"]
    given = AuditEvent.objects.get(kind=AuditKind.GRANT_CREATED)
    assert "at the sign-in of tara with TestIdP" in given.summary

    # An admin gives her a grant by hand: single sign-on leaves it alone.
    grants.give_grant(partition="default", queue_path="root.team-b.batch", role="admin",
                      user="tara", actor=None)  # fmt: skip
    # Moved from team A to team B at the provider: the next sign-in follows.
    _sign_in(["team-b"])
    assert _held(tara) == [
        Held("default", "root.team-b", "operator"),
        Held("default", "root.team-b.batch", "admin"),
    ]
    revoked = AuditEvent.objects.get(kind=AuditKind.GRANT_REVOKED)
    assert revoked.queue_path == "root.team-a" and "at the sign-in of tara" in revoked.summary

    # In no mapped group: refused, and what single sign-on gave is taken back.
    with pytest.raises(SignInRefused, match="none of your groups there gives a role or a queue"):
        _sign_in(["interns"])
    assert _held(tara) == [Held("default", "root.team-b.batch", "admin")]


def test_single_sign_on_refuses_groups_whose_grants_name_no_existing_queue(sso, settings):
    tenant_state()
    settings.OIDC_GRANTS_BY_GROUP = parse_grant_groups("default:root.gone:admin=team-a-admins")
    with pytest.raises(SignInRefused):
        _sign_in(["team-a-admins"])
    assert not get_user_model().objects.filter(username="tara").exists()


def test_single_sign_on_gives_a_role_and_grants_together(sso):
    tenant_state()
    tara = _sign_in(["readers", "team-b"])
    assert role_of(tara) == "viewer"
    assert _held(tara) == [Held("default", "root.team-b", "operator")]
    assert len(_sees(tara)) == 7


def test_a_grant_spec_reads_names_with_colons():
    assert GrantSpec.parse("p:1:root.a:b.c:operator") == GrantSpec("p:1", "root.a:b.c", "operator")
