"""An admin creates an operator on the Users page; the operator signs in with the password shown
once and cancels a quota timer through its confirmation page, saying why (issue 13, section 3).
Chromium against gunicorn + a Celery worker + beat."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Queue
from tests.e2e.browser import screenshot, submit_login_form
from tests.support.console import NIGHTLY, import_demo, nightly_tasks

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

COMMENT = "new nodes arrive tomorrow"


def start_nightly_timer() -> QuotaTimer:
    """Nightly (400Gi used) lowered to 300Gi: a timer due in 60 s (root.batch's delay), long
    after this test ends, so beat's sweeps leave it pending."""
    partition = import_demo()
    nightly_tasks(partition)
    services.update_queue(
        "default", NIGHTLY, version=Queue.objects.get(path=NIGHTLY).version, actor=None,
        comment="shrink", max={"memory": 300 * 1024**3, "vcore": 200_000},
    )  # fmt: skip
    return QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)


def test_an_admin_creates_an_operator_who_cancels_a_timer_with_a_comment(
    signed_in_page: Callable[..., Page], new_context: Callable[[], BrowserContext]
) -> None:
    timer = start_nightly_timer()

    admin = signed_in_page("admin")
    admin.get_by_role("navigation", name="Main").get_by_role("link", name="Users").click()
    expect(admin.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    admin.get_by_label("User name").fill("vera")
    admin.get_by_label("Role", exact=True).select_option("operator")
    admin.get_by_role("button", name="Create").click()
    expect(admin.get_by_role("heading", name="New password of vera")).to_be_visible()
    password = admin.get_by_role("textbox", name="Password").input_value()
    assert len(password) >= 12
    screenshot(admin, "users-password-shown-once")
    admin.get_by_role("link", name="Back to the users").click()
    row = admin.get_by_role("row", name="vera")
    expect(row).to_contain_text("operator")
    expect(admin.locator("main")).not_to_contain_text(password)
    screenshot(admin, "users-list")

    operator = new_context().new_page()
    submit_login_form(operator, "vera", password)
    expect(operator.locator(".signout")).to_contain_text("vera (operator)")
    expect(operator.get_by_role("link", name="Users")).to_have_count(0)
    operator.goto(f"/partitions/default/queues/{NIGHTLY}/")
    operator.get_by_role("button", name="Cancel the timer…").click()
    expect(
        operator.get_by_role("heading", name=f"Cancel the quota timer of {NIGHTLY}?")
    ).to_be_visible()
    assert QuotaTimer.objects.get(pk=timer.pk).status == TimerStatus.PENDING
    operator.get_by_label("Comment").fill(COMMENT)
    screenshot(operator, "timer-cancel-confirmation")
    operator.get_by_role("button", name="Cancel the timer", exact=True).click()
    expect(operator.get_by_text(f"Cancelled the quota timer of {NIGHTLY}.")).to_be_visible()
    expect(operator.get_by_text("No quota timer is pending for this queue.")).to_be_visible()

    assert QuotaTimer.objects.get(pk=timer.pk).status == TimerStatus.CANCELLED
    event = AuditEvent.objects.get(kind=AuditKind.TIMER_CANCELLED)
    assert (event.actor_name, event.data["comment"]) == ("vera", COMMENT)
    created = AuditEvent.objects.get(kind=AuditKind.USER_CREATED)
    assert created.object_id == "vera" and created.actor_name.startswith("admin-")
