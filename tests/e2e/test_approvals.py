"""Approvals in the console, end to end in Chromium: admin A lowers a max on the queue page of a
partition that requires approval for decreases; admin B finds the request on the dashboard,
opens it, sees the diff and the victims approving would take, confirms and approves; the
revision names both."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scheduler_admin.queues import services
from scheduler_admin.queues.models import ChangeRequest, ConfigRevision, Queue
from tests.e2e.browser import screenshot
from tests.support.console import NIGHTLY, import_demo, nightly_tasks

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

NIGHTLY_PAGE = f"/partitions/default/queues/{NIGHTLY}/"


def test_a_decrease_waits_for_another_admin_who_approves_it(signed_in_page, live_stack):
    """Slow (about 20-30 s): two admins in two browser contexts, the request page's live preview
    and the confirmation, in Chromium."""
    partition = import_demo()
    nightly_tasks(partition)
    services.update_partition_settings(
        "default", actor=None, comment="decreases need approval", approval="decreases"
    )
    revisions = ConfigRevision.objects.filter(partition=partition).count()

    # Admin A lowers nightly's memory max in the edit form: held, not saved.
    alice = signed_in_page("admin", "alice")
    alice.goto(NIGHTLY_PAGE)
    alice.get_by_label("Max of memory").fill("250Gi")
    alice.get_by_label("Change comment").fill("quarter-end freeze")
    alice.get_by_role("button", name="Save", exact=True).click()
    expect(alice.locator("ul.messages")).to_contain_text("needs another admin's approval")
    expect(alice.get_by_role("heading", name="Your request")).to_be_visible()
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions
    request = ChangeRequest.objects.get()
    assert request.author_name == "alice" and request.status == "pending"

    # Admin B sees it on the dashboard, opens it, and approves once they confirm the evictions.
    bob = signed_in_page("admin", "bob")
    bob.goto("/?partition=default")
    card = bob.locator("section", has=bob.get_by_role("heading", name="Change requests awaiting"))
    expect(card).to_contain_text("quarter-end freeze")
    card.get_by_role("link", name=f"Change request {request.pk}").click()
    expect(bob.get_by_role("heading", name="What it changes")).to_be_visible()
    victims = bob.locator("section.preview .plan-victims tbody tr")
    expect(victims).to_have_count(2)
    screenshot(bob, "change-request-pending")
    bob.get_by_role("button", name="Approve and save").click()
    expect(bob.locator(".field-error")).to_contain_text("tick the box to confirm")
    bob.get_by_label("I understand that approving evicts").check()
    bob.get_by_role("button", name="Approve and save").click()
    expect(bob.locator("ul.messages")).to_contain_text(f"Approved change request {request.pk}")
    screenshot(bob, "change-request-approved")

    revision = ConfigRevision.objects.filter(partition=partition).latest("number")
    assert (revision.author_name, revision.approved_by_name) == ("alice", "bob")
    assert Queue.objects.get(path=NIGHTLY).max["memory"] == 250 * 2**30
