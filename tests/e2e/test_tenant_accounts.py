"""A tenant account (queue grants only, no global role), made each way an admin has, walked
through the console in Chromium (``tenant_walk``): it sees root.team-a, its subtree, everywhere
and nothing of root.team-b.

- On the Users page: an admin creates ``tina`` with the role "none: queue grants only" and a
  grant of admin on root.team-a, in one form.
- With ``manage.py create_user tom --grant default:root.team-a:operator``, run as a process
  against the same database, as an operator of the product would.

(Single sign-on, the third way, is in ``test_single_sign_on.py``: it needs the test provider.)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from scheduler_admin.accounts.permissions import Held, grants_of
from scheduler_admin.accounts.roles import role_of
from tests.e2e.browser import screenshot, submit_login_form
from tests.e2e.tenant_walk import walk_tenant_console
from tests.support.processes import PROJECT_DIR, test_database_env
from tests.support.tenants import tenant_state

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PASSWORD = "tenant-pass-phrase-2026"


def test_a_tenant_account_made_on_the_users_page_sees_only_its_subtree(
    live_stack, signed_in_page: Callable[..., Page], new_context: Callable[[], BrowserContext]
) -> None:
    tenant_state()
    admin = signed_in_page("admin")
    admin.goto("/users/")
    create = admin.get_by_role("region", name="Create a user")
    create.get_by_label("User name").fill("tina")
    create.get_by_label("Role", exact=True).select_option("none")
    create.get_by_label("Queue grant: partition").select_option("default")
    create.get_by_label("Queue grant: queue (and below)").fill("root.team-a")
    create.get_by_label("Queue grant: role on the queue").select_option("admin")
    create.get_by_label("Password (optional)").fill(PASSWORD)
    screenshot(admin, "users-create-tenant-account-form")
    create.get_by_role("button", name="Create").click()
    expect(admin.locator(".messages")).to_contain_text(
        "Created tina with no global role and the queue grant admin of root.team-a in default."
    )
    row = admin.get_by_role("region", name="Accounts").get_by_role("row", name="tina")
    expect(row).to_contain_text("admin of root.team-a in default")
    screenshot(admin, "users-tenant-account-created")

    from django.contrib.auth import get_user_model

    tina = get_user_model().objects.get(username="tina")
    assert role_of(tina) is None and grants_of(tina) == [Held("default", "root.team-a", "admin")]

    page = new_context().new_page()
    submit_login_form(page, "tina", PASSWORD)
    walk_tenant_console(page, live_stack.url, "tina", role="admin")


def test_a_tenant_account_made_by_create_user_sees_only_its_subtree(
    live_stack, new_context: Callable[[], BrowserContext]
) -> None:
    tenant_state()
    made = subprocess.run(
        [sys.executable, "manage.py", "create_user", "tom",
         "--grant", "default:root.team-a:operator", "--password-env", "TOM_PASSWORD"],
        cwd=PROJECT_DIR, env=test_database_env({"TOM_PASSWORD": PASSWORD}),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stdout == (
        "Created user 'tom' with no global role and the queue grants operator of root.team-a "
        "in default.\n"
    )
    page = new_context().new_page()
    submit_login_form(page, "tom", PASSWORD)
    walk_tenant_console(page, live_stack.url, "tom", role="operator")
