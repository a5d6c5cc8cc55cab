"""What the cluster agents say, in Chromium against the live stack (issue 15): the dashboard's
"Cluster agents" card (an agent whose cluster runs an older revision, a read-only one gone
stale) and its live update when the cluster applies the newest revision; the run page's
eviction orders with the cluster's answers (a budget blocking one, another already gone).

The run is the stack's own: the test fires the quota timer (due now) and the stack's worker
executes it. Heartbeats, reports and acknowledgements are made here through the product's
services, as the agent's requests would make them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from playwright.sync_api import expect

from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.enforcement.evictions import (
    ClusterReport,
    acknowledge_evictions,
    report_evictions,
)
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOrder,
    PreemptionRun,
    QuotaTimer,
    RunStatus,
)
from tests.e2e.browser import screenshot
from tests.e2e.test_console_flows import demo_with_nightly_tasks
from tests.e2e.test_visual_language import WIDE, WRAPPED_CELLS
from tests.support.console import NIGHTLY, lower_nightly_max

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."
#: A poll every 5 s on a loaded machine.
LIVE_WAIT_MS = 30_000


def test_the_agents_card_and_the_run_pages_cluster_answers(signed_in_page, live_stack):
    partition = demo_with_nightly_tasks(delay="1h")  # revisions 1 and 2
    timer = lower_nightly_max()  # revision 3
    QuotaTimer.objects.filter(pk=timer.pk).update(due_at=timezone.now())
    live_stack.wait_for(
        lambda: PreemptionRun.objects.filter(
            queue_path=NIGHTLY, status=RunStatus.FINISHED
        ).exists(),
        30,
        "the stack's worker never finished the run",
    )
    run = PreemptionRun.objects.get(queue_path=NIGHTLY)
    orders = dict(EvictionOrder.objects.values_list("allocation_id", "pk"))
    assert set(orders) == {"t3", "t2"}
    for _ in range(3):
        report_evictions(
            partition, [ClusterReport(orders["t3"], ClusterStatus.BLOCKED, BUDGET, 429)],
            actor=None,
        )  # fmt: skip
    acknowledge_evictions(partition, [(orders["t2"], "gone")], actor=None)

    now = timezone.now()
    record_heartbeat(
        partition,
        Heartbeat(name="agent-7f9c", started_at=now - timedelta(minutes=20), cluster="kind-dev",
                  version="0.4.1", last_push_at=now - timedelta(seconds=2), lag_seconds=0.7,
                  running_revision=2, publishing=True,
                  counts={"nodes": 50, "allocations": 1990, "asks": 12, "budgets": 4}),
        actor=None,
    )  # fmt: skip
    with time_machine.travel(now - timedelta(minutes=10), tick=False):
        record_heartbeat(
            partition,
            Heartbeat(name="agent-readonly", started_at=now - timedelta(hours=2),
                      cluster="prod-eu", version="0.4.0",
                      last_error="pods is forbidden: User \"system:serviceaccount:yunikorn:"
                      "agent\" cannot list resource \"pods\" in API group \"\" at the cluster "
                      "scope"),
            actor=None,
        )  # fmt: skip

    page = signed_in_page("viewer")
    page.set_viewport_size(WIDE)
    page.goto("/")
    card = page.locator('[data-live-section="agents"]')
    agent = card.locator('tr[data-agent="agent-7f9c"]')
    stale = card.locator('tr[data-agent="agent-readonly"]')
    expect(page.get_by_role("heading", name="Cluster agents")).to_be_visible()
    expect(agent).to_contain_text("reporting")
    expect(agent).to_contain_text("kind-dev")
    expect(agent).to_contain_text("0.4.1")
    expect(agent).to_contain_text("runs revision 2 of 3")
    expect(agent.get_by_role("link", name="revision 2")).to_have_attribute(
        "href", "/history/default/2/"
    )
    expect(agent).to_contain_text("behind")
    expect(agent).to_contain_text("50 nodes · 1990 running · 12 pending · 4 budgets")
    expect(stale).to_contain_text("stale")
    expect(stale).to_contain_text("read-only: not publishing")
    expect(stale).to_contain_text("cannot list resource")
    expect(stale.locator(".agent-beat")).to_contain_text("last heartbeat 10m")
    # The ages tick in the page, without a request.
    first = agent.locator(".agent-beat time").inner_text()
    page.wait_for_timeout(2100)
    assert agent.locator(".agent-beat time").inner_text() != first
    assert page.evaluate(WRAPPED_CELLS) == []
    card.scroll_into_view_if_needed()
    screenshot(page, "dashboard-cluster-agents")

    # The cluster applies the newest revision: the card follows without a reload.
    page.evaluate("window.__sameDocument = true")
    record_heartbeat(
        partition,
        Heartbeat(name="agent-7f9c", started_at=now - timedelta(minutes=20), cluster="kind-dev",
                  version="0.4.1", last_push_at=timezone.now(), lag_seconds=0.7,
                  running_revision=3, publishing=True),
        actor=None,
    )  # fmt: skip
    expect(agent).to_contain_text("runs revision 3 newest", timeout=LIVE_WAIT_MS)
    assert page.evaluate("window.__sameDocument === true")

    page.goto("/history/")
    marked = page.locator("tr.history-running")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("Revision 3")
    expect(marked).to_contain_text("runs in kind-dev")
    screenshot(page, "history-cluster-runs")

    page.goto(f"/runs/{run.pk}/")
    victims = page.locator("section", has=page.get_by_role("heading", name="Victims (2)"))
    blocked = victims.locator("tr", has=page.get_by_role("rowheader", name="t3"))
    gone = victims.locator("tr", has=page.get_by_role("rowheader", name="t2"))
    answer = victims.locator("tr.activity-answer")
    expect(blocked).to_contain_text("pending")
    expect(blocked).to_contain_text("blocked")
    expect(answer).to_have_count(1)
    expect(answer).to_contain_text(f"Blocked by a disruption budget (HTTP 429): “{BUDGET}”")
    expect(answer).to_contain_text("3 attempts, last reported")
    expect(gone.get_by_title("acknowledged: the task was already gone")).to_have_text(
        "already gone"
    )
    expect(page.get_by_role("main")).to_contain_text(
        "1 waiting for the cluster's acknowledgement; 1 blocked by a disruption budget"
    )
    assert page.evaluate(WRAPPED_CELLS) == []
    victims.scroll_into_view_if_needed()
    screenshot(page, "run-cluster-answers")
