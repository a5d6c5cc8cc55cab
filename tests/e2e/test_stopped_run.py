"""A run that stopped because it was no longer needed, as an admin sees it in Chromium: the run
page says it stopped, after how many victims and why, and offers no abort; the Runs list shows
the status.

The run is made the product's way in this test process (the team partition, root.team lowered,
the sweep, then the run executed chunk by chunk with the max raised back after the first
chunk); the live worker is never handed it (``dispatch.enqueue_run`` is a no-op here), so it cannot
finish it first.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from playwright.sync_api import expect

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import dispatch, runs
from scheduler_admin.enforcement.models import RunStatus
from scheduler_admin.enforcement.runs import execution
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.e2e.browser import screenshot
from tests.support.team import GB, START, TEAM_TASKS, team_config

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def max_of_team(memory_gb: int) -> None:
    version = Queue.objects.get(path="root.team").version
    config_services.update_queue(
        "default", "root.team", version=version, actor=None, comment=f"max {memory_gb}G",
        max={"memory": memory_gb * GB},
    )  # fmt: skip


def stopped_run(monkeypatch: pytest.MonkeyPatch, settings) -> int:
    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: None)
    settings.RUN_EVICTION_BATCH = 1
    with time_machine.travel(START, tick=False):
        [config] = parse_queues_yaml(
            team_config("1h"), settings_for=config_services.settings_for_import
        )
        result = config_services.save_partition_config(config, actor=None, comment="initial")
        ingest_cluster_state(
            result.partition,
            {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}],
             "allocations": TEAM_TASKS},
            actor=None,
        )  # fmt: skip
        max_of_team(100)
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(hours=2))
    chunk = execution._preempt_chunk
    calls: list[int] = []

    def raise_back_after_the_first(run, victims, token):
        went_on = chunk(run, victims, token)
        calls.append(1)
        if len(calls) == 1:
            max_of_team(400)
        return went_on

    monkeypatch.setattr(execution, "_preempt_chunk", raise_back_after_the_first)
    run = runs.execute_run(run_id, worker="e2e")
    assert run is not None and run.status == RunStatus.STOPPED
    return run_id


def test_a_stopped_run_says_why_on_its_page_and_in_the_list(signed_in_page, monkeypatch, settings):
    run_id = stopped_run(monkeypatch, settings)
    page = signed_in_page("admin")
    page.goto(f"/runs/{run_id}/")
    expect(page.get_by_text("Stopped after 1 of 3 victims: no longer needed.")).to_be_visible()
    expect(page.get_by_text("Why it stopped")).to_be_visible()
    expect(page.get_by_text("The max of root.team was raised or removed").first).to_be_visible()
    expect(page.get_by_role("button", name="Abort this run")).to_have_count(0)
    screenshot(page, "run-stopped-admin")
    page.goto("/runs/?status=stopped")
    expect(page.get_by_role("cell", name="Stopped (no longer needed)")).to_be_visible()
    screenshot(page, "runs-stopped-admin")
