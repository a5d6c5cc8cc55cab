"""Single sign-on through OpenID Connect, end to end (issue 16, part "auth"): a real provider
(django-oauth-toolkit, ``tests/support/oidc_provider/``) in a process of its own, the product's
gunicorn configured for it through the ``OIDC_*`` variables, and Chromium clicking through:

- a person in a group mapped to operator signs in with the provider and lands on the dashboard
  as an operator (the account created at that first sign-in, without a usable password);
- their groups change at the provider, and their role changes at their next sign-in: admin,
  then no mapped group at all, which refuses them with a message and takes the role away;
- a person in no mapped group is refused with the message, and no account is made;
- a local account is never taken over by a provider user of the same name;
- a person whose groups map to queue grants only (``OIDC_GRANT_GROUPS``) gets a tenant account:
  no global role, root.team-a only, walked through the console (``tenant_walk``); moved to
  another group at the provider, their grants follow at the next sign-in.

No mock anywhere: the product fetches the provider's keys, exchanges the code, checks the
signed ID token and reads the user info over HTTP.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from scheduler_admin.accounts.identities import OidcIdentity
from scheduler_admin.accounts.permissions import Held, grants_of
from scheduler_admin.accounts.roles import role_of
from scheduler_admin.audit.models import AuditEvent, AuditKind
from tests.e2e.browser import screenshot
from tests.e2e.conftest import CSP_LISTENER, CSP_MARK
from tests.e2e.tenant_walk import walk_tenant_console
from tests.support.compose import COMPOSE_FILE, CONTAINER_BIND, native_command
from tests.support.oidc_provider.server import OidcProvider
from tests.support.processes import ManagedProcess, free_port, test_database_env, wait_until
from tests.support.tenants import tenant_state

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

ROLE_GROUPS = "viewer=readers;operator=sre,batch-ops;admin=platform-admins"
IDP_PASSWORD = "idp-password-1"


@dataclass
class SsoStack:
    product: str
    provider: OidcProvider


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def sso(
    transactional_db: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[SsoStack]:
    """The provider and the product's gunicorn pointed at it; ``request.param`` (indirect)
    may change the product's ``OIDC_*`` variables, given a function of the provider."""
    change = getattr(request, "param", None)
    port = free_port()
    product = f"http://127.0.0.1:{port}"
    with OidcProvider(tmp_path, f"{product}/oidc/callback/") as provider:
        compose = yaml.safe_load(Path(COMPOSE_FILE).read_text())
        args = native_command(
            compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
        )
        args[args.index("--workers") + 1] = "2"
        oidc = provider.product_env(ROLE_GROUPS)
        if change is not None:
            oidc.update(change(provider))
        env = test_database_env(
            {"XDG_RUNTIME_DIR": str(tmp_path), **oidc}, redis_url=settings.REDIS_URL
        )
        with ManagedProcess("sso-web", args, env=env, log_dir=tmp_path) as web:
            wait_until(
                lambda: _answers(f"{product}/healthz"), 30, message="web never answered",
                watch=[web, provider.process],
            )  # fmt: skip
            yield SsoStack(product, provider)


@pytest.fixture
def chromium(browser):
    """The browser tests' Chromium (``conftest.browser``), in contexts of this module's own:
    the product here is not the package's live server, so ``new_context`` does not fit."""
    return browser


class Person:
    """One person's browser (a context of its own: their provider session stays theirs)."""

    def __init__(self, chromium, stack: SsoStack, name: str) -> None:
        self.stack = stack
        self.name = name
        self.context = chromium.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(15_000)
        self.context.add_init_script(CSP_LISTENER)
        self.violations: list[str] = []
        self.context.on("console", self._console)
        self.page = self.context.new_page()
        self.signed_in_before = False

    def _console(self, message) -> None:
        if message.text.startswith(CSP_MARK) or "Content Security Policy" in message.text:
            self.violations.append(message.text)

    def sign_in(self) -> str:
        """Sign in with the provider from the product's sign-in page; the text of the page
        it ends on."""
        page = self.page
        page.goto(f"{self.stack.product}/accounts/login/")
        if self.name == "alice" and not self.signed_in_before:
            screenshot(page, "sso-sign-in-page", full_page=False)
        self.signed_in_before = True
        page.get_by_role("link", name="Sign in with TestIdP").click()
        page.wait_for_load_state()
        if page.url.startswith(self.stack.provider.origin):  # not signed in there yet
            page.get_by_label("IdP user name").fill(self.name)
            page.get_by_label("IdP password").fill(IDP_PASSWORD)
            page.get_by_role("button", name="Continue to the application").click()
        page.wait_for_url(re.compile(re.escape(self.stack.product)))
        page.wait_for_load_state()
        return page.locator("main").inner_text()

    def sign_out(self) -> None:
        self.page.get_by_role("button", name="Sign out").click()
        self.page.wait_for_load_state()

    def close(self) -> None:
        self.context.close()
        assert not self.violations, self.violations


def test_a_mapped_person_signs_in_and_their_role_follows_their_groups(sso, chromium):
    """Slow (about 20 s): real sign-ins through the OpenID Connect provider, one per change of
    groups."""
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    sso.provider.add_user("alice", IDP_PASSWORD, ["sre", "staff"])
    alice = Person(chromium, sso, "alice")

    text = alice.sign_in()
    assert alice.page.url == f"{sso.product}/"
    assert "Dashboard" in text
    assert "alice (operator)" in alice.page.locator("header").inner_text()
    screenshot(alice.page, "sso-dashboard-operator", full_page=False)
    user = get_user_model().objects.get(username="alice")
    assert role_of(user) == "operator" and not user.has_usable_password()
    assert user.email == "alice@example.org"
    identity = OidcIdentity.objects.get(user=user)
    assert identity.issuer == sso.provider.issuer and identity.subject
    created = AuditEvent.objects.get(kind=AuditKind.USER_CREATED)
    assert created.object_id == "alice" and created.data["source"] == "oidc"

    # Moved to the platform admins at the provider: admin at the next sign-in.
    sso.provider.set_groups("alice", ["platform-admins"])
    alice.sign_out()
    alice.sign_in()
    assert "alice (admin)" in alice.page.locator("header").inner_text()
    assert role_of(get_user_model().objects.get(username="alice")) == "admin"

    # In no mapped group any more: refused with the reason, and the role is taken away.
    sso.provider.set_groups("alice", ["interns"])
    alice.sign_out()
    text = alice.sign_in()
    assert alice.page.url.startswith(f"{sso.product}/accounts/login/")
    assert "none of your groups there gives a role" in text
    assert role_of(get_user_model().objects.get(username="alice")) is None
    screenshot(alice.page, "sso-refused", full_page=False)
    changes = AuditEvent.objects.filter(kind=AuditKind.USER_ROLE_CHANGED).order_by("id")
    assert [(e.data["from"], e.data["to"]) for e in changes] == [
        (None, "operator"),
        ("operator", "admin"),
        ("admin", None),
    ]
    alice.close()


def test_a_person_in_no_mapped_group_is_refused_and_gets_no_account(sso, chromium):
    sso.provider.add_user("bob", IDP_PASSWORD, ["interns"])
    bob = Person(chromium, sso, "bob")
    text = bob.sign_in()
    assert bob.page.url.startswith(f"{sso.product}/accounts/login/")
    assert "You signed in at TestIdP, but none of your groups there gives a role" in text
    assert not get_user_model().objects.filter(username="bob").exists()
    refused = AuditEvent.objects.get(kind=AuditKind.SIGNIN_REFUSED)
    assert refused.object_id == "bob" and refused.data["groups"] == ["interns"]
    bob.page.goto(f"{sso.product}/")  # still signed out: the sign-in page again
    assert "/accounts/login/" in bob.page.url
    bob.close()


def test_a_local_account_of_the_same_name_is_not_taken_over(sso, chromium):
    local = get_user_model().objects.create_user("carol", password="local-password-1")
    sso.provider.add_user("carol", IDP_PASSWORD, ["platform-admins"])
    carol = Person(chromium, sso, "carol")
    text = carol.sign_in()
    assert "an account named &#x27;carol&#x27; exists here" in carol.page.content() or (
        "an account named 'carol' exists here and is not linked" in text
    )
    local.refresh_from_db()
    assert role_of(local) is None and not OidcIdentity.objects.exists()
    carol.close()


@pytest.mark.parametrize(
    "sso", [lambda provider: {"OIDC_OP_ISSUER": f"{provider.origin}/another"}], indirect=True
)
def test_an_id_token_from_another_issuer_than_configured_is_refused(sso, chromium):
    """mozilla-django-oidc checks the signature and the nonce; the product also checks that
    the token's issuer is the one configured (and that it was issued to this client)."""
    sso.provider.add_user("dave", IDP_PASSWORD, ["platform-admins"])
    dave = Person(chromium, sso, "dave")
    text = dave.sign_in()
    assert dave.page.url.startswith(f"{sso.product}/accounts/login/")
    assert "Signing in with TestIdP failed: its answer could not be verified" in text
    assert not get_user_model().objects.filter(username="dave").exists()
    refused = AuditEvent.objects.get(kind=AuditKind.SIGNIN_REFUSED)
    assert "issuer" in refused.summary
    dave.page.goto(f"{sso.product}/")
    assert "/accounts/login/" in dave.page.url
    dave.close()


GRANT_GROUPS = "default:root.team-a:admin=team-a-admins;default:root.team-b:operator=team-b-ops"


@pytest.mark.parametrize(
    "sso", [lambda provider: {"OIDC_GRANT_GROUPS": GRANT_GROUPS}], indirect=True
)
def test_a_person_whose_groups_map_to_grants_gets_a_tenant_account(sso, chromium):
    """No global role, root.team-a only, everywhere in the console; the grants follow the
    groups at the next sign-in; a failed sign-on is not counted against the address."""
    tenant_state()
    sso.provider.add_user("tara", IDP_PASSWORD, ["team-a-admins", "staff"])
    tara = Person(chromium, sso, "tara")
    tara.sign_in()
    assert tara.page.url == f"{sso.product}/"
    user = get_user_model().objects.get(username="tara")
    assert role_of(user) is None
    assert grants_of(user, fresh=True) == [Held("default", "root.team-a", "admin")]
    walk_tenant_console(tara.page, sso.product, "tara", role="admin", label="sso-tara")

    # Moved to team B's operators at the provider: team A's grant goes, team B's comes.
    sso.provider.set_groups("tara", ["team-b-ops"])
    tara.page.goto(f"{sso.product}/")  # the walk ended on the Django admin's sign-in page
    tara.sign_out()
    tara.sign_in()
    assert grants_of(user, fresh=True) == [Held("default", "root.team-b", "operator")]
    tara.page.goto(f"{sso.product}/")
    expect(tara.page.locator("main")).not_to_contain_text("team-a")
    screenshot(tara.page, "sso-tenant-moved-to-team-b", full_page=False)

    # In no mapped group: refused, the grant taken back, and nothing counted as a failure.
    sso.provider.set_groups("tara", ["interns"])
    tara.sign_out()
    text = tara.sign_in()
    assert "none of your groups there gives a role or a queue grant" in text
    assert grants_of(user, fresh=True) == []
    assert not AccessAttempt.objects.exists()
    tara.close()
