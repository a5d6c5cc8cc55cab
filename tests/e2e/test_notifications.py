"""A user subscribes to a queue subtree on the Notifications page, in Chromium: a first try
without any event is refused beside the field, the second is saved and listed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from scheduler_admin.notifications.models import Subscription
from tests.e2e.browser import screenshot
from tests.support.tenants import tenant_state

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def test_a_user_subscribes_to_a_subtree(live_stack, signed_in_page: Callable[..., Page]) -> None:
    tenant_state()
    page = signed_in_page("viewer", "vera")
    get_user_model().objects.filter(username="vera").update(email="vera@example.com")
    page.goto("/")
    page.get_by_role("link", name="Notifications").click()
    expect(page.get_by_role("heading", name="Notifications", level=1)).to_be_visible()
    expect(page.get_by_text("No subscriptions yet.")).to_be_visible()

    form = page.get_by_role("region", name="Subscribe")
    form.get_by_label("Partition").select_option("default")
    form.get_by_label("Queue", exact=True).fill("root.team-a")
    for box in form.get_by_role("group", name="Events").get_by_role("checkbox").all():
        box.uncheck()
    form.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".field-error")).to_have_text(["Choose at least one event."])
    assert not Subscription.objects.exists()

    form = page.get_by_role("region", name="Subscribe")
    expect(form.get_by_label("Queue", exact=True)).to_have_value("root.team-a")
    form.get_by_label("Quota timer started").check()
    form.get_by_label("Run finished with victims").check()
    form.get_by_label("Run ended short").check()
    expect(form.get_by_label("Also every queue below it (the subtree)")).to_be_checked()
    form.get_by_role("button", name="Subscribe").click()

    expect(page.locator(".messages")).to_contain_text(
        "Subscribed to root.team-a and every queue below it."
    )
    listed = page.get_by_role("region", name="Your subscriptions (1)")
    row = listed.get_by_role("row", name="root.team-a")
    expect(row).to_contain_text("and below")
    expect(row).to_contain_text("Run finished with victims")
    expect(row).to_contain_text("e-mail")
    screenshot(page, "notifications-subscribed")

    subscription = Subscription.objects.get()
    assert (subscription.user.username, subscription.queue_path, subscription.subtree) == (
        "vera", "root.team-a", True,
    )  # fmt: skip
    assert subscription.kinds == ["timer.started", "run.victims", "run.short"]
