"""A tenant finds why their pod was evicted: tina holds a grant on root.team-a only; a quota
run of root.team-a.web preempted one of her tasks. She types the pod's id into the top bar's
Find box, opens the task from the results and reads which run took it, under which rule, in
words, and what became of the eviction order; the same search for another team's pod finds
nothing. Chromium against gunicorn + a Celery worker + beat."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
import time_machine
from playwright.sync_api import BrowserContext, Page, expect

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import PreemptionRun, RunVictim
from tests.e2e.browser import create_user, screenshot, submit_login_form
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition
from tests.support.tenants import START, TASKS, TENANTS_CONFIG, lower

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def a_preempted_task_of_team_a() -> RunVictim:
    """Team a's web queue lowered to 40G (60G used): its quota run takes one task; the run is
    executed here, so beat has nothing left to do."""
    with time_machine.travel(START, tick=False):
        partition = imported_partition(TENANTS_CONFIG, comment="tenants")
        ingest(partition, TASKS)
    lower("root.team-a.web", 40, START)
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        [run_id] = runs.sweep_due_quota_timers()
        runs.execute_run(run_id, worker="t")
    assert PreemptionRun.objects.get(pk=run_id).status == "finished"
    return RunVictim.objects.get(run_id=run_id)


def test_a_tenant_searches_a_pod_from_the_top_bar_and_reads_why_it_was_evicted(
    new_context: Callable[[], BrowserContext],
) -> None:
    victim = a_preempted_task_of_team_a()
    password = create_user("tina", None)
    give_grant(partition="default", queue_path="root.team-a", role="operator",
               user="tina", actor=None)  # fmt: skip

    page: Page = new_context().new_page()
    submit_login_form(page, "tina", password)
    find = page.get_by_role("search").get_by_label("Find a task (pod), application, user or queue")
    find.fill(victim.allocation_id)
    find.press("Enter")
    expect(
        page.get_by_role("heading", name="Find a task, application, user or queue")
    ).to_be_visible()
    screenshot(page, "find-a-task-tenant-results")
    tasks = page.get_by_role("region", name="Tasks")
    tasks.get_by_role("link", name=victim.allocation_id, exact=True).click()

    expect(
        page.get_by_role("heading", name=f"Why was task {victim.allocation_id} preempted?")
    ).to_be_visible()
    history = page.get_by_role("table")
    row = history.get_by_role("row").nth(1)
    expect(row).to_contain_text(f"Run {victim.run_id}")
    expect(row).to_contain_text("quota")
    expect(row).to_contain_text("Preempted: victim #1 of the run.")
    expect(
        row.get_by_role("link", name="Chosen: preempting it moves the plan towards its goal.")
    ).to_be_visible()
    expect(row).to_contain_text("Pending: the cluster has not answered yet.")
    screenshot(page, "find-a-task-tenant-history")

    # Another team's pod: the same box finds nothing for her.
    find = page.get_by_role("search").get_by_label("Find a task (pod), application, user or queue")
    find.fill("bw1")
    find.press("Enter")
    expect(page.locator("main")).to_contain_text("Nothing matches “bw1” in your queues.")
