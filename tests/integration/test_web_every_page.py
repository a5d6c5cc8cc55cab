"""Every console page, rendered on a partition with tasks, a finished quota run, a pending timer
and several revisions, speaks the console's one visual language (issue 13):

- no raw Python value (``True``, ``False``, ``None``) anywhere in the text or tooltips;
- no queue path with a trailing slash;
- every revision and run number shown links to its page;
- quantities humanised with the exact value on hover.
"""

from __future__ import annotations

import html
import io
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client

from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
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
    RunCandidate,
)
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ChangeRequest, Partition, Queue
from scheduler_admin.web.common import queue_url
from tests.support.console import NIGHTLY, signed_in_client

pytestmark = pytest.mark.django_db

GI = 2**30
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: A Python value printed as such; word boundaries keep "Nonetheless" or "TrueNAS" out.
RAW_PYTHON = re.compile(r"\b(True|False|None)\b")
#: A queue path ending in "/" (``root/``, ``root.batch/``) as visible text or a tooltip.
TRAILING_SLASH_PATH = re.compile(r"\broot(?:\.[\w#@:-]+)*/(?![\w.])")
TAG = re.compile(r"<[^>]+>")
HIDDEN = re.compile(r"<(script|style)\b.*?</\1>", re.S)
ATTRIBUTE = re.compile(r'\s(title|aria-label|alt|placeholder)="([^"]*)"')


def lower_max(path: str, memory: int) -> None:
    queue = Queue.objects.get(path=path)
    services.update_queue(
        "default", path, version=queue.version, actor=None, comment=f"lower {path}",
        max={**queue.max, "memory": memory},
    )  # fmt: skip


@pytest.fixture
def state() -> dict[str, object]:
    """Demo config; tasks in nightly (one of an odd size) and vision; nightly lowered and its
    timer run (a finished run with victims); vision lowered with its timer still pending."""
    with time_machine.travel(START, tick=False):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
        partition = Partition.objects.get(name="default")
        ingest_cluster_state(
            partition,
            {
                "nodes": [{"name": "n1", "capacity": {"memory": "4Ti", "vcore": "1000"}}],
                "allocations": [
                    *[
                        {"id": f"night-{i}", "queue": NIGHTLY, "node": "n1", "priority": i,
                         "resources": {"memory": "100Gi", "vcore": "10"}}
                        for i in range(3)
                    ],
                    {"id": "odd", "queue": NIGHTLY, "node": "n1",
                     "resources": {"memory": "396480Mi", "vcore": "1500m"}},
                    {"id": "vis", "queue": "root.research.vision", "node": "n1",
                     "resources": {"memory": "200Gi", "vcore": "10"}},
                ],
            },
            actor=None,
        )  # fmt: skip
        lower_max(NIGHTLY, 400 * GI)
    due = START + timedelta(seconds=61)
    with time_machine.travel(due, tick=False):
        [run_id] = runs.sweep_due_quota_timers(due)
        run = runs.execute_run(run_id, worker="test-worker")
        lower_max("root.research.vision", 150 * GI)  # a timer that stays pending
    assert run is not None and run.victims.exists()
    # A cluster agent whose cluster runs revision 1, one that is read-only and stale, and the
    # cluster's answers on the run's orders: one blocked, one acknowledged as gone.
    record_heartbeat(
        partition,
        Heartbeat(name="agent-a", started_at=START, cluster="kind-dev", version="0.4.1",
                  last_push_at=due, lag_seconds=0.8, running_revision=1, publishing=True,
                  counts={"nodes": 1, "allocations": 5}),
        actor=None,
    )  # fmt: skip
    with time_machine.travel(START, tick=False):
        record_heartbeat(partition, Heartbeat(name="agent-b", started_at=START), actor=None)
    orders = EvictionOrder.objects.order_by("pk")
    blocked = orders.filter(allocation_id="odd").first() or orders[0]
    gone = orders.exclude(pk=blocked.pk).exclude(allocation_id="odd")[0]
    report_evictions(partition, [ClusterReport(blocked.pk, ClusterStatus.BLOCKED, "pdb", 429)],
                     actor=None)  # fmt: skip
    acknowledge_evictions(partition, [(gone.pk, "gone")], actor=None)
    # A decrease held for approval while the setting was on: a pending change request.
    with time_machine.travel(due, tick=False):
        services.update_partition_settings(
            "default", actor=None, comment="approvals", approval="decreases"
        )
        held = services.update_queue(
            "default", "root.batch.adhoc", actor=None, comment="smaller adhoc",
            version=Queue.objects.get(path="root.batch.adhoc").version,
            max={"memory": 100 * GI, "vcore": 100_000}, request_approval=True,
        ).change_request  # fmt: skip
        services.update_partition_settings(
            "default", actor=None, comment="approvals off", approval="none"
        )
    assert held is not None
    return {"partition": partition, "run": run, "change_request": held}


def console_pages(run: PreemptionRun) -> list[str]:
    """Every page of the console a signed-in admin can open, with query strings that fill
    them (an open subtree, a fence pick, a simulation, a diff)."""
    simulation = urlencode({
        "partition": "default", "policy": "quota", "queue": NIGHTLY,
        "max-TOTAL_FORMS": "2", "max-INITIAL_FORMS": "0", "max-0-name": "memory",
        "max-0-max": "300Gi",
    })  # fmt: skip
    queues = [queue_url("default", path) for path in Queue.objects.values_list("path", flat=True)]
    victim = run.victims.order_by("position").first()
    application = RunCandidate.objects.get(run=run, candidate=victim.allocation_id).application
    return [
        "/",
        "/?open=root.batch.nightly",
        "/dashboard/children/?partition=default&queue=root.batch",
        *queues,
        "/history/",
        "/history/default/1/",
        "/history/default/2/",
        "/history/diff/?partition=default&from=1&to=3",
        "/history/default/1/revert/",
        "/history/import/",
        "/runs/",
        f"/runs/{run.pk}/",
        "/audit/",
        "/audit/verify/?run=1",
        f"/find/?q={victim.allocation_id}",
        "/find/?q=root",
        f"/partitions/default/tasks/{victim.allocation_id}/",
        f"/partitions/default/applications/{application}/",
        "/simulator/",
        f"/simulator/?{simulation}",
        "/fences/",
        "/fences/?partition=default&queue=root.prod.web",
        "/users/",
        "/partitions/default/settings/",
        "/partitions/default/change-requests/",
        *[
            f"/partitions/default/change-requests/{pk}/"
            for pk in ChangeRequest.objects.values_list("pk", flat=True)
        ],
        "/account/notifications/",
        *[
            f"/timers/{pk}/cancel/"
            for pk in QuotaTimer.objects.filter(status="pending").values_list("pk", flat=True)
        ],
    ]


def visible_text(page: str) -> str:
    """What a reader can see or hover: text nodes and tooltip-like attributes, unescaped."""
    body = HIDDEN.sub(" ", page)
    attributes = " ".join(value for _, value in ATTRIBUTE.findall(body))
    return html.unescape(TAG.sub(" ", body) + " " + attributes)


@pytest.fixture
def admin() -> Client:
    return signed_in_client("admin")


def test_no_page_shows_a_raw_python_value_or_a_path_with_a_trailing_slash(state, admin):
    checked = 0
    for url in console_pages(state["run"]):
        response = admin.get(url)
        assert response.status_code == 200, url
        text = visible_text(response.content.decode())
        raw = [text[max(0, m.start() - 40) : m.end() + 10] for m in RAW_PYTHON.finditer(text)]
        assert not raw, f"{url} shows raw Python values: {raw}"
        slashed = TRAILING_SLASH_PATH.findall(text)
        assert not slashed, f"{url} shows paths with a trailing slash: {slashed}"
        checked += 1
    assert checked >= 25  # every queue page and every other page


def test_revision_and_run_numbers_link_to_their_pages(state, admin):
    run = state["run"]
    dashboard = admin.get("/").content.decode()
    for number in (1, 2, 3):
        assert f'<a href="/history/default/{number}/">Revision {number}</a>' in dashboard
    assert f'<a href="/runs/{run.pk}/">Run {run.pk}</a>' in dashboard

    vision = admin.get(queue_url("default", "root.research.vision")).content.decode()
    timer = vision.split('id="timer-heading"')[1].split("</section>")[0]
    # The pending timer names the revision that started it, with its delay as a duration.
    assert 'Started by <a href="/history/default/3/">revision 3</a>' in timer
    assert "with a delay of 2m." in timer

    nightly = admin.get(queue_url("default", NIGHTLY)).content.decode()
    history = nightly.split('id="history-heading"')[1]
    assert '<a href="/history/default/2/">2</a>' in history

    audit = admin.get("/audit/").content.decode()
    assert '<a href="/history/default/3/">Open revision 3</a>' in audit
    assert f'<a href="/runs/{run.pk}/">Open run</a>' in audit
    assert f'<a href="/runs/{run.pk}/">Run {run.pk}</a>' in admin.get("/runs/").content.decode()


def test_quantities_are_humanised_with_the_exact_value_on_hover(state, admin):
    page = admin.get(queue_url("default", NIGHTLY)).content.decode()
    # The odd task, in the task table: 396480Mi reads 387Gi, 1500m reads 1.5 (cores).
    tasks = page.split('id="tasks-heading"')[1].split("</section>")[0]
    assert '<span class="qty" title="396480Mi">387Gi</span>' in tasks
    assert '<span class="qty" title="1500m">1.5</span>' in tasks
    # The effective settings table: max memory as set, humanised.
    settings = page.split('id="settings-heading"')[1].split("</section>")[0]
    assert '<span class="qty" title="400Gi">400Gi</span>' in settings
