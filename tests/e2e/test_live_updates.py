"""The console stays true while it is open (issue 13, section 3), in Chromium against the live
stack: the dashboard and the queue page follow a quota timer that fires, the run it starts and
the evictions that bring the queue back within max, without a reload.

How the story is driven: the timer starts an hour out (so the pages are checked over max with
a countdown, at leisure); then the test moves its due time to now, as an hour passing would, and
the stack's own beat sweep fires it and its worker runs the plan (a test process that fired it
itself would enqueue the run on its own broker, where no worker listens). The cluster's
acknowledgements of the evictions are made here through the product's service.
"""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import Page, Response, expect

from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    RunStatus,
)
from tests.e2e.browser import screenshot
from tests.e2e.test_console_flows import NIGHTLY_PAGE, demo_with_nightly_tasks
from tests.support.console import NIGHTLY, import_demo, lower_nightly_max

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

GI = 1024**3
#: A poll every 5 s, a sweep every 5 s and a short run, on a loaded machine.
LIVE_WAIT_MS = 30_000


def mark_document(page: Page) -> None:
    """Tag the loaded document: a reload or navigation would lose the tag."""
    page.evaluate("window.__sameDocument = true")


def same_document(page: Page) -> bool:
    return page.evaluate("window.__sameDocument === true")


def test_the_dashboard_and_the_queue_page_follow_a_timer_until_the_queue_is_within_max(
    signed_in_page, live_stack
):
    """Slow (about 20-30 s): it waits for the quota delay, beat's sweep and the run with the real
    worker, watching the pages update themselves."""
    demo_with_nightly_tasks(delay="1h")
    timer = lower_nightly_max()

    # The dashboard, with root.batch opened from the keyboard and nightly's row focused.
    dashboard = signed_in_page("viewer")
    dashboard.goto("/")
    batch = dashboard.locator('tr[role="row"][data-path="root.batch"]')
    batch.get_by_role("link", name="Expand batch").click()
    row = dashboard.locator(f'tr[role="row"][data-path="{NIGHTLY}"]')
    expect(row).to_be_visible()
    row.focus()
    over_max = dashboard.locator('[data-live-section="over_max"]')
    expect(row).to_contain_text("over max")
    expect(row.locator(".countdown")).to_contain_text("due in 59m")
    expect(over_max).to_contain_text(NIGHTLY)
    mark_document(dashboard)

    # The queue page, in a second tab.
    queue = dashboard.context.new_page()
    queue.goto(NIGHTLY_PAGE)
    timer_card = queue.locator('[data-live-section="timer"]')
    usage_state = queue.locator('[data-live-section="usage"] .usage-state')
    expect(usage_state).to_contain_text("over max")
    expect(timer_card).to_contain_text("Pending: quota enforcement is due at")
    mark_document(queue)
    screenshot(dashboard, "live-dashboard-over-max")
    screenshot(queue, "live-queue-over-max")

    # An hour passes: the stack's beat fires the timer, its worker runs the plan.
    QuotaTimer.objects.filter(pk=timer.pk).update(due_at=timezone.now())
    live_stack.wait_for(
        lambda: PreemptionRun.objects.filter(queue_path=NIGHTLY).exists(),
        20,
        "the beat sweep never fired nightly's timer",
    )
    run = PreemptionRun.objects.get(queue_path=NIGHTLY)
    expect(row).to_contain_text(f"Run {run.pk}", timeout=LIVE_WAIT_MS)
    expect(row.locator(".countdown")).to_have_count(0)
    expect(dashboard.locator('[data-live-section="runs"]')).to_contain_text(f"Run {run.pk}")
    expect(timer_card).to_contain_text(f"Run {run.pk}", timeout=LIVE_WAIT_MS)
    expect(timer_card).to_contain_text("No quota timer is pending for this queue.")

    # The run ends; the cluster acknowledges the two evictions: nightly is within max again.
    live_stack.wait_for(
        lambda: PreemptionRun.objects.filter(pk=run.pk, status=RunStatus.FINISHED).exists(),
        30,
        "the run never finished",
    )
    orders = EvictionOrder.objects.filter(run=run)
    assert orders.count() == 2
    for order in orders:
        acknowledge_eviction(order.pk, actor=None)

    expect(over_max).to_contain_text("Every queue is within its max.", timeout=LIVE_WAIT_MS)
    expect(row).not_to_contain_text("over max")
    expect(row).to_contain_text(f"Run {run.pk} finished")
    expect(usage_state).to_contain_text("within max", timeout=LIVE_WAIT_MS)
    expect(usage_state).not_to_contain_text("over max")
    expect(queue.get_by_role("heading", name="Running tasks (2)")).to_be_visible()
    screenshot(dashboard, "live-dashboard-within-max")
    screenshot(queue, "live-queue-within-max")

    # No reload happened, and the tree kept its shape and its focus.
    assert same_document(dashboard) and same_document(queue)
    expect(batch).to_have_attribute("aria-expanded", "true")
    expect(row).to_be_visible()
    assert dashboard.evaluate("document.activeElement.dataset.path") == NIGHTLY


def test_an_unchanged_page_costs_a_304_and_a_failing_server_pauses_the_updates(signed_in_page):
    """Over 20 s: it waits for the page's own polls in real time (several until nothing changes,
    then the slower polls after a failure, then the recovery)."""
    import_demo()
    page = signed_in_page("viewer")

    def poll(response: Response) -> bool:
        return "/live/dashboard.json" in response.url

    with page.expect_response(poll, timeout=LIVE_WAIT_MS) as first:
        page.goto("/")
    assert first.value.status == 200  # no version to send yet
    # Each poll sends the version it has. Something may still change at first (the worker's
    # first heartbeat of the test, say); within a few polls nothing does: a 304, no body.
    etag, answers = first.value.headers["etag"], []
    for _ in range(4):
        with page.expect_response(poll, timeout=LIVE_WAIT_MS) as answer:
            pass
        assert answer.value.request.headers["if-none-match"] == etag
        answers.append(answer.value.status)
        if answer.value.status == 304:
            break
        etag = answer.value.headers["etag"]
    assert answers[-1] == 304, answers
    status = page.locator("[data-live-status]")
    expect(status).to_contain_text("Updates live")

    # The server fails: the page says so, waits longer, and recovers when the server does.
    page.route("**/live/dashboard.json*", lambda route: route.fulfill(status=503, body="down"))
    expect(status).to_contain_text(
        "Live updates paused: the server answered 503", timeout=LIVE_WAIT_MS
    )
    page.unroute("**/live/dashboard.json*")
    expect(status).to_contain_text("Updates live", timeout=LIVE_WAIT_MS)
