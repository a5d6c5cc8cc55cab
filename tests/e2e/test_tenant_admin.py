"""A tenant admin (issue 16): an admin puts tina (no global role) in the group tenant-a and gives
that group the admin role on root.team-a, on the Users page; tina signs in, sees only her
queues, sets a quota inside her subtree, and gets no controls outside it: a queue of team-b
answers a 403 page with the reason. Chromium against gunicorn + a Celery worker + beat."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from scheduler_admin.queues.models import ConfigRevision, Queue
from scheduler_admin.web.common import queue_url
from tests.e2e.browser import create_user, screenshot, submit_login_form
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition
from tests.support.tenants import GB, TASKS, TENANTS_CONFIG

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

COMMENT = "team-a web gets the nodes it bought"


def tenants_without_timers() -> None:
    """The two tenants with their tasks, and no quota lowered: nothing for beat to fire."""
    ingest(imported_partition(TENANTS_CONFIG, comment="tenants"), TASKS)


def test_a_tenant_admin_edits_a_quota_inside_and_sees_no_controls_outside(
    signed_in_page: Callable[..., Page], new_context: Callable[[], BrowserContext]
) -> None:
    tenants_without_timers()
    password = create_user("tina", None)

    admin = signed_in_page("admin")
    admin.goto("/users/")
    groups = admin.get_by_role("region", name="Groups")
    groups.get_by_label("Member").select_option(label="tina")
    groups.get_by_label("Groups").fill("tenant-a")
    groups.get_by_role("button", name="Set the groups").click()
    expect(admin.locator(".messages")).to_contain_text("Groups of tina: tenant-a.")
    grants = admin.get_by_role("region", name="Queue grants")
    grants.get_by_label("Queue (and below)").fill("root.team-a")
    grants.get_by_label("Role on the queue").select_option("admin")
    grants.get_by_label("or a group").fill("tenant-a")
    grants.get_by_role("button", name="Give the grant").click()
    expect(admin.locator(".messages")).to_contain_text(
        "Granted: group tenant-a is admin of root.team-a in default."
    )
    expect(
        admin.get_by_role("region", name="Queue grants").get_by_role("row", name="group tenant-a")
    ).to_contain_text("root.team-a")
    screenshot(admin, "users-queue-grants")

    page: Page = new_context().new_page()
    submit_login_form(page, "tina", password)
    expect(page.get_by_role("heading", name="Partition default: your queues")).to_be_visible()
    tree = page.get_by_role("treegrid")
    expect(tree.get_by_role("link", name="team-a", exact=True)).to_be_visible()
    expect(tree.get_by_role("link", name="web", exact=True)).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("team-b")
    nav = page.get_by_role("navigation", name="Main")
    for hidden in ("Fences", "History", "Users"):
        expect(nav.get_by_role("link", name=hidden, exact=True)).to_have_count(0)
    expect(page.locator(".signout")).to_contain_text("1 queue grant")
    screenshot(page, "tenant-admin-dashboard")

    tree.get_by_role("link", name="web", exact=True).click()
    expect(page.get_by_role("heading", name="Queue root.team-a.web")).to_be_visible()
    expect(page.get_by_role("heading", name="Edit quotas and properties")).to_be_visible()
    page.get_by_label("Resource (new row)").fill("memory")
    page.get_by_label("Max (new row)").fill("300G")
    page.get_by_label("Change comment").fill(COMMENT)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Saved root.team-a.web as revision 2.")
    screenshot(page, "tenant-admin-saved-inside")
    assert Queue.objects.get(path="root.team-a.web").max == {"memory": 300 * GB}
    assert ConfigRevision.objects.get(number=2).author_name == "tina"

    page.goto(queue_url("default", "root.team-b.web"))
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(page.locator("main")).to_contain_text(
        "You administer root.team-a only: root.team-b.web is outside."
    )
    expect(page.locator("main")).to_contain_text("Nothing was changed.")
    expect(page.locator("main form")).to_have_count(0)
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    screenshot(page, "tenant-admin-outside")
    assert Queue.objects.get(path="root.team-b.web").max == {}
