"""The console's error pages in Chromium (issue 13, section 3): a refused action shows the 403
page in the console's layout with the reason and a way back; an unknown address the 404 page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from tests.e2e.browser import screenshot
from tests.e2e.test_console_flows import demo_with_nightly_tasks
from tests.support.console import NIGHTLY, lower_nightly_max

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def test_a_refused_action_shows_the_403_page_with_the_reason_and_a_way_back(signed_in_page):
    """An operator's role is lowered while their dashboard is open; the button they still see
    is refused with the reason, in the console's layout, and the way back leads to the page."""
    demo_with_nightly_tasks(delay="1h")
    lower_nightly_max()
    page = signed_in_page("operator", username="olga")
    page.goto("/?partition=default")
    cancel = page.get_by_role("button", name=re.compile(rf"Cancel timer…? of {re.escape(NIGHTLY)}"))
    expect(cancel).to_be_visible()

    olga = get_user_model().objects.get(username="olga")
    olga.groups.set([Group.objects.get_or_create(name="viewer")[0]])
    cancel.click()
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    main = page.locator("main")
    expect(main).to_contain_text("This action needs the operator role.")
    expect(main).to_contain_text("You are signed in as olga with the viewer role.")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()  # the console's layout
    assert QuotaTimer.objects.filter(queue_path=NIGHTLY, status=TimerStatus.PENDING).exists()
    screenshot(page, "error-403")

    page.get_by_role("link", name="Back to the previous page").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/\?partition=default$"))

    response = page.goto("/no/such/page/")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.locator("main")).to_contain_text("No page has this address.")
    screenshot(page, "error-404")
    page.get_by_role("link", name="Go to the dashboard").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
