"""The console shows what the cluster agents say (issue 15): the dashboard's "Cluster agents"
card (each agent's partition, cluster, version, last push, lag, last error, which revision its
cluster runs against the newest, and a stale warning), kept current by the dashboard's live
JSON; the history page's marker on the revision each cluster runs; and, on the run page, what
the cluster answered about each eviction order."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from scheduler_admin.accounts.roles import VIEWER
from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import (
    ClusterReport,
    acknowledge_evictions,
    report_evictions,
)
from scheduler_admin.enforcement.models import ClusterStatus, EvictionOrder, PreemptionRun
from scheduler_admin.queues.models import Partition
from tests.integration.test_web_every_page import visible_text
from tests.support.console import import_demo, lower_nightly_max, nightly_tasks, signed_in_client

pytestmark = pytest.mark.django_db

BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def viewer() -> Client:
    return signed_in_client(VIEWER, "agent-viewer")


@pytest.fixture
def run() -> PreemptionRun:
    """The demo (revision 1), nightly lowered (revision 2) and its quota run done: t3 and t2
    preempted. The cluster reported t3 blocked by a budget, twice, and acknowledged t2 as
    already gone."""
    partition = import_demo()
    nightly_tasks(partition)
    timer = lower_nightly_max()
    with time_machine.travel(timer.due_at + timedelta(seconds=1), tick=False):
        [run_id] = runs.sweep_due_quota_timers(timer.due_at)
        run = runs.execute_run(run_id, worker="w")
    orders = dict(EvictionOrder.objects.values_list("allocation_id", "pk"))
    for _ in range(2):
        report_evictions(
            partition, [ClusterReport(orders["t3"], ClusterStatus.BLOCKED, BUDGET, 429)],
            actor=None,
        )  # fmt: skip
    acknowledge_evictions(partition, [(orders["t2"], "gone")], actor=None)
    return run


def beat(name: str, **fields: object) -> Heartbeat:
    return Heartbeat(name=name, started_at=timezone.now() - timedelta(minutes=5), **fields)


def agents(partition: Partition, *, stale_agent_at=None) -> None:
    """agent-a publishes and its cluster runs revision 1 of 2; agent-b is read-only and last
    reported at ``stale_agent_at``."""
    record_heartbeat(
        partition,
        beat("agent-a", cluster="kind-dev", version="0.4.1", publishing=True, running_revision=1,
             last_push_at=timezone.now() - timedelta(seconds=3), lag_seconds=0.8,
             counts={"nodes": 50, "allocations": 1990, "asks": 10, "budgets": 4, "skipped": 2}),
        actor=None,
    )  # fmt: skip
    with time_machine.travel(stale_agent_at or timezone.now(), tick=False):
        record_heartbeat(
            partition,
            beat("agent-b", cluster="prod-eu", version="0.4.0",
                 last_error="pods is forbidden: User cannot list resource pods"),
            actor=None,
        )  # fmt: skip


PROJECT_DIR = Path(__file__).resolve().parents[2]


def words(html: str) -> str:
    """The visible text on one line, without the blank a tag boundary leaves before a colon."""
    return re.sub(r"\s+([:;,])", r"\1", " ".join(visible_text(html).split()))


def card(page: str) -> str:
    return page.split('id="agents-heading"')[1].split("</section>")[0]


def test_without_agents_the_card_points_at_the_connect_a_real_cluster_tutorial(run, viewer):
    html = card(viewer.get("/").content.decode())
    text = visible_text(html)
    assert "No cluster agent has reported yet" in text
    assert "see Connect a real cluster in the help" in " ".join(text.split())
    assert '<a href="/docs/tutorials/connect-a-real-cluster/">Connect a real cluster</a>' in html
    assert (PROJECT_DIR / "docs" / "tutorials" / "connect-a-real-cluster.md").is_file()


def test_the_card_shows_each_agent_and_which_revision_its_cluster_runs(run, viewer, settings):
    settings.STALE_AGENT_SECONDS = 60
    agents(run.partition, stale_agent_at=timezone.now() - timedelta(minutes=3))
    html = card(viewer.get("/").content.decode())
    text = " ".join(visible_text(html).split())
    row_a = " ".join(visible_text(html.split('data-agent="agent-a"')[1].split("</tr>")[0]).split())
    row_b = " ".join(visible_text(html.split('data-agent="agent-b"')[1].split("</tr>")[0]).split())
    assert "reporting" in row_a and "stale" not in row_a
    assert "default" in row_a and "kind-dev" in row_a and "0.4.1" in row_a
    assert re.search(r"last heartbeat \d+s ago", row_a)
    assert re.search(r"\b3s ago\b", row_a)  # the last push
    assert "50 nodes · 1990 running · 10 pending · 4 budgets · 2 skipped" in row_a
    assert "0.8s" in row_a
    assert "runs revision 1 of 2 behind" in row_a
    assert '<a href="/history/default/1/">revision 1</a>' in html
    assert '<a href="/history/default/2/">2</a>' in html
    assert "none" in row_a  # no last error
    assert "stale" in row_b and "last heartbeat 3m" in row_b
    assert "Agent agent-b (prod-eu) has sent no heartbeat for 3m" in text
    assert "is it running, and can it reach the product?" in text
    assert "read-only: not publishing" in row_b
    assert "pods is forbidden: User cannot list resource pods" in row_b
    assert "An agent is stale after 1m without a heartbeat" in text


def test_a_cluster_on_the_newest_revision_says_so(run, viewer):
    record_heartbeat(run.partition, beat("agent-a", cluster="kind-dev", publishing=True,
                                         running_revision=2), actor=None)  # fmt: skip
    row = visible_text(card(viewer.get("/").content.decode()))
    assert "runs revision 2 newest" in " ".join(row.split())
    record_heartbeat(run.partition, beat("agent-a", publishing=True), actor=None)
    row = visible_text(card(viewer.get("/").content.decode()))
    assert "publishing; no revision applied yet" in " ".join(row.split())


def test_the_live_json_follows_the_agents_but_not_their_clock(run, viewer, settings):
    """Heartbeats and pushes that change nothing but their times keep the dashboard's answer
    a 304; an agent going stale, or its cluster running another revision, changes it."""
    settings.STALE_AGENT_SECONDS = 60
    params = {"partition": "default"}
    agents(run.partition)
    first = viewer.get("/live/dashboard.json", params)
    assert first.status_code == 200
    state = {agent["name"]: agent for agent in first.json()["agents"]}
    assert state["agent-a"]["running_revision"] == 1 and state["agent-a"]["newest_revision"] == 2
    assert state["agent-b"]["stale"] is False
    assert "agent-a" in first.json()["html"]["sections"]["agents"]
    etag = first["ETag"]
    agents(run.partition)  # again: new times only
    assert viewer.get("/live/dashboard.json", params, headers={"If-None-Match": etag}
                      ).status_code == 304  # fmt: skip
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        record_heartbeat(run.partition, beat("agent-a", cluster="kind-dev", version="0.4.1",
                         publishing=True, running_revision=1,
                         last_push_at=timezone.now() - timedelta(seconds=3), lag_seconds=0.8,
                         counts={"nodes": 50, "allocations": 1990, "asks": 10, "budgets": 4,
                                 "skipped": 2}), actor=None)  # fmt: skip
        later = viewer.get("/live/dashboard.json", params, headers={"If-None-Match": etag})
    assert later.status_code == 200  # agent-b went stale
    assert {a["name"]: a["stale"] for a in later.json()["agents"]} == {
        "agent-a": False, "agent-b": True,
    }  # fmt: skip


def test_the_history_page_marks_the_revision_each_cluster_runs(run, viewer):
    agents(run.partition)
    page = viewer.get("/history/").content.decode()
    rows = page.split("<tbody>")[1].split("</tbody>")[0]
    [running] = re.findall(r'<tr class="history-running">.*?</tr>', rows, re.S)
    assert "Revision 1" in running and "runs in kind-dev" in visible_text(running)
    assert rows.count("history-running") == 1  # agent-b knows of no revision
    summary = words(page.split("history-agents")[1].split("</ul>")[0])
    assert "Cluster kind-dev (agent agent-a): runs revision 1 of 2" in summary
    assert "Cluster prod-eu (agent agent-b): runs no revision of this product yet" in summary
    assert "read-only: not publishing" in summary
    # The config the cluster should run is a download of its own.
    assert 'href="/api/v1/partitions/default/config.yaml?publish=true"' in page
    assert "YuniKorn's own quota preemption off: the product enforces quota decreases" in page


def test_the_run_page_shows_what_the_cluster_answered_for_each_order(run, viewer):
    page = viewer.get(f"/runs/{run.pk}/").content.decode()
    victims = page.split('id="victims-heading"')[1].split("</section>")[0]
    row = {
        task: " ".join(visible_text(victims.split(f'<th scope="row">{task}</th>')[1]
                                    .split("</tr>")[0]).split())
        for task in ("t3", "t2")
    }  # fmt: skip
    assert "pending blocked" in row["t3"]
    assert "already gone" in row["t2"] and "acknowledged: the task was already gone" in row["t2"]
    # What the cluster said about the pending order, in the row under its victim.
    [answer] = re.findall(r'<tr class="activity-answer">.*?</tr>', victims, re.S)
    assert victims.index(answer) > victims.index('<th scope="row">t3</th>')
    answer = words(answer)
    order = EvictionOrder.objects.get(allocation_id="t3").pk
    assert (
        f"The cluster on order {order}: Blocked by a disruption budget (HTTP 429): “{BUDGET}”"
        in (answer)
    )
    assert "· 2 attempts, last reported" in answer
    summary = " ".join(visible_text(page.split('id="summary-heading"')[1]
                                    .split("</section>")[0]).split())  # fmt: skip
    assert (
        "Eviction orders 2 (1 waiting for the cluster's acknowledgement; 1 blocked by a "
        "disruption budget)"
    ) in summary
