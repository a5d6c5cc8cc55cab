"""Live updates of the dashboard and the queue page (issue 13, section 3): the JSON documents the
pages poll. A timer that fires, the run it starts and the evictions that follow each change the
answer; an unchanged state costs a 304; the numbers and the rendered rows are the page's own."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler_admin.accounts.roles import OPERATOR, VIEWER
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.queues import scheduled, services
from scheduler_admin.queues.models import ChangeRequest, Partition, Queue
from tests.support.console import (
    BATCH_OPEN,
    LIVE_DASHBOARD,
    NIGHTLY,
    import_demo,
    lower_nightly_max,
    nightly_tasks,
    signed_in_client,
)

pytestmark = pytest.mark.django_db

GI = 1024**3
DASHBOARD = LIVE_DASHBOARD
QUEUE = "/live/queue.json"
NIGHTLY_QUERY = {"partition": "default", "queue": NIGHTLY}


@pytest.fixture
def partition() -> Partition:
    """The demo with 400Gi in nightly (t0..t3) and its max lowered to 250Gi: over max, with a
    pending quota timer. The quota order takes t3 and t2."""
    demo = import_demo()
    nightly_tasks(demo)
    lower_nightly_max()
    return Partition.objects.get(pk=demo.pk)


@pytest.fixture
def viewer() -> Client:
    return signed_in_client(VIEWER, "live-viewer")


def get(client: Client, url: str, params: dict, etag: str | None = None):
    headers = {"If-None-Match": etag} if etag else {}
    return client.get(url, params, headers=headers)


def row_html(rows: str, path: str) -> str:
    found = re.search(rf'<tr role="row"[^>]*data-path="{re.escape(path)}".*?</tr>', rows, re.S)
    assert found, f"no row of {path}"
    return found.group(0)


def test_both_documents_need_a_signed_in_user_and_answer_json(partition, client):
    for url, params in ((DASHBOARD, BATCH_OPEN), (QUEUE, NIGHTLY_QUERY)):
        anonymous = client.get(url, params)
        assert anonymous.status_code == 401  # not the sign-in page: the script must tell
        assert anonymous.json()["code"] == "not_authenticated"
        viewer = signed_in_client(VIEWER, "live-reader")
        assert viewer.get(url, params).status_code == 200
        assert viewer.post(url, params).status_code == 405  # read only


def test_unknown_partition_or_queue_is_a_json_404(partition, viewer):
    for url, params in (
        (DASHBOARD, {"partition": "nope"}),
        (QUEUE, {"partition": "nope", "queue": "root"}),
        (QUEUE, {"partition": "default", "queue": "root.gone"}),
        (QUEUE, {"partition": "default", "queue": "root.\x00"}),
    ):
        response = viewer.get(url, params)
        assert response.status_code == 404, params
        assert response.json()["code"] == "not_found"


def test_dashboard_document_has_the_open_rows_cards_and_a_version(partition, viewer):
    timer = QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)
    response = get(viewer, DASHBOARD, BATCH_OPEN)
    assert response.status_code == 200
    assert response["ETag"] == f'"{response.json()["version"]}"'
    assert "no-cache" in response["Cache-Control"] and "private" in response["Cache-Control"]
    data = response.json()

    # Root, its children, and the children of the opened root.batch; nothing deeper.
    assert {"root", "root.prod", "root.batch", NIGHTLY} <= set(data["queues"])
    assert not any(path.startswith(NIGHTLY + ".") for path in data["queues"])
    nightly = data["queues"][NIGHTLY]
    assert nightly["over_max"] is True
    assert nightly["timer"] == {
        "id": timer.pk, "due_at": timer.due_at.isoformat(), "deferred": False
    }  # fmt: skip
    assert nightly["run"] is None
    memory = next(bar for bar in nightly["bars"] if bar["resource"] == "memory")
    assert memory == {
        "resource": "memory", "used": 400 * GI, "guaranteed": None, "max": 250 * GI,
        "max_from": "", "level": "over",
    }  # fmt: skip
    assert data["over_max"]["count"] == 1
    assert [item["path"] for item in data["over_max"]["queues"]] == [NIGHTLY]
    assert data["config_version"] == partition.version

    # The rendered parts: the rows (as the page draws them) and each card's body.
    nightly_row = row_html(data["html"]["rows"], NIGHTLY)
    assert f'data-due-at="{timer.due_at.isoformat()}"' in nightly_row and "over max" in nightly_row
    assert set(data["html"]["sections"]) == {
        "alerts", "over_max", "runs", "revisions", "workers", "agents", "sparklines",
        "scheduled", "pending_requests",
    }  # fmt: skip
    assert 'data-path="root.batch.nightly"' in data["html"]["sections"]["over_max"]


def test_live_rows_are_the_rows_the_page_draws(partition, viewer):
    page = viewer.get("/", {"partition": "default"}).content.decode()
    rows = get(viewer, DASHBOARD, {"partition": "default"}).json()["html"]["rows"]
    for path in ("root.prod", "root.batch", "root.research"):
        assert row_html(rows, path) == row_html(page, path)


def test_live_cards_of_the_queue_page_are_the_cards_the_page_draws(partition, viewer):
    """Same templates, same numbers, same sort order and page of the task list."""
    query = "sort=priority&dir=desc"
    page = viewer.get(f"/partitions/default/queues/{NIGHTLY}/?{query}").content.decode()
    live = get(viewer, QUEUE, {**NIGHTLY_QUERY, "page_query": query}).json()
    for name in ("usage", "tasks", "asks"):
        drawn = re.search(rf'<div data-live-section="{name}">(.*?)</div>\n</section>', page, re.S)
        assert drawn, name
        assert live["html"]["sections"][name] == drawn.group(1), name
    # By priority, highest first; equal priorities by id, in the same direction.
    assert [row[0] for row in live["tasks"]["rows"]] == ["t0", "t1", "t3", "t2"]
    assert live["tasks"]["count"] == 4 and live["asks"] == {"count": 0, "rows": []}


def test_an_unchanged_state_is_a_304_and_a_change_a_new_version(partition, viewer):
    first = get(viewer, DASHBOARD, BATCH_OPEN)
    etag = first["ETag"]
    again = get(viewer, DASHBOARD, BATCH_OPEN, etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag

    queue_etag = get(viewer, QUEUE, NIGHTLY_QUERY)["ETag"]
    assert get(viewer, QUEUE, NIGHTLY_QUERY, queue_etag).status_code == 304

    # The same state for another role is another document: its controls differ.
    operator = signed_in_client(OPERATOR, "live-operator")
    as_operator = get(operator, DASHBOARD, BATCH_OPEN, etag)
    assert as_operator.status_code == 200
    assert "Cancel timer" in as_operator.json()["html"]["sections"]["over_max"]
    assert "Cancel timer" not in first.json()["html"]["sections"]["over_max"]

    # A task that ends changes the usage: a new version.
    Allocation.objects.filter(external_id="t0").update(state=AllocationState.RELEASED)
    changed = get(viewer, DASHBOARD, BATCH_OPEN, etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    memory = next(b for b in changed.json()["queues"][NIGHTLY]["bars"] if b["resource"] == "memory")
    assert memory["used"] == 300 * GI
    assert get(viewer, QUEUE, NIGHTLY_QUERY, queue_etag).status_code == 200


def test_the_timer_fires_the_run_ends_and_the_queue_is_within_max(partition, viewer):
    """The story of the issue, as the documents tell it: countdown, run N, within max."""
    timer = QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)
    before = get(viewer, QUEUE, NIGHTLY_QUERY).json()
    assert before["over_max"] is True and before["timer"]["id"] == timer.pk
    assert "over max" in before["html"]["sections"]["usage"]
    assert "Pending: quota enforcement is due at" in before["html"]["sections"]["timer"]

    [run_id] = runs.sweep_due_quota_timers(now=timer.due_at)  # the delay has passed
    fired = get(viewer, DASHBOARD, BATCH_OPEN).json()
    nightly = fired["queues"][NIGHTLY]
    assert nightly["timer"] is None
    assert nightly["run"] == {
        "id": run_id, "status": "pending", "outcome": "", "url": f"/runs/{run_id}/"
    }  # fmt: skip
    assert f'<a href="/runs/{run_id}/">Run {run_id}</a>' in row_html(fired["html"]["rows"], NIGHTLY)
    assert fired["runs"][0]["id"] == run_id
    queue = get(viewer, QUEUE, NIGHTLY_QUERY).json()
    assert queue["timer"] is None and queue["run"]["id"] == run_id
    assert f"Run {run_id}</a> started" in queue["html"]["sections"]["timer"]

    runs.execute_run(run_id, worker="test-worker")
    finished = get(viewer, DASHBOARD, BATCH_OPEN).json()
    assert finished["queues"][NIGHTLY]["run"]["status"] == RunStatus.FINISHED
    assert finished["queues"][NIGHTLY]["over_max"] is True  # victims count until evicted
    assert finished["runs"][0] == {
        "id": run_id, "queue": NIGHTLY, "status": "finished", "outcome": "complete", "victims": 2
    }  # fmt: skip

    for order in EvictionOrder.objects.filter(run_id=run_id):
        acknowledge_eviction(order.pk, actor=None)
    within = get(viewer, DASHBOARD, BATCH_OPEN).json()
    assert within["queues"][NIGHTLY]["over_max"] is False
    assert within["over_max"] == {"count": 0, "queues": []}
    assert "Every queue is within its max." in within["html"]["sections"]["over_max"]
    queue = get(viewer, QUEUE, NIGHTLY_QUERY).json()
    assert queue["over_max"] is False
    assert "within max" in queue["html"]["sections"]["usage"]
    assert [row[0] for row in queue["tasks"]["rows"]] == ["t0", "t1"]  # t2, t3 evicted
    assert "Running tasks (2)" in queue["html"]["sections"]["tasks"]
    memory = next(item for item in queue["usage"] if item["resource"] == "memory")
    assert memory["used"] == 200 * GI and memory["level"] != "over"


def test_a_poll_costs_the_same_queries_however_many_queues_are_open(partition, viewer):
    """One set of queries per poll, none per queue: opening every parent adds rows, not
    queries."""
    parents = sorted({q.rsplit(".", 1)[0] for q in Queue.objects.values_list("path", flat=True)})
    assert len(parents) > 3
    get(viewer, DASHBOARD, {"partition": "default"})  # warm up: session, content types
    with CaptureQueriesContext(connection) as few:
        get(viewer, DASHBOARD, {"partition": "default"})
    with CaptureQueriesContext(connection) as many:
        response = get(viewer, DASHBOARD, {"partition": "default", "open": parents})
    assert len(response.json()["queues"]) == Queue.objects.count()
    assert len(many) == len(few), [query["sql"] for query in many]


def test_a_scheduled_change_and_a_held_request_reach_an_open_dashboard(partition, viewer):
    """The cards of scheduled changes and of requests awaiting approval follow the live
    updates: each new one is a new version whose card is the one the page draws."""
    first = get(viewer, DASHBOARD, BATCH_OPEN)
    assert "No change is scheduled." in first.json()["html"]["sections"]["scheduled"]
    assert first.json()["html"]["sections"]["pending_requests"].strip() == ""

    queue = Queue.objects.get(path="root.batch.adhoc")
    change = scheduled.schedule_queue_change(
        "default", "root.batch.adhoc", version=queue.version, actor=None,
        comment="weekend", apply_at=timezone.now() + timedelta(hours=2),
        max={"memory": 200 * GI, "vcore": 100_000},
    )  # fmt: skip
    after = get(viewer, DASHBOARD, BATCH_OPEN, first["ETag"])
    assert after.status_code == 200
    assert after.json()["scheduled"] == [[change.pk, "pending"]]
    section = after.json()["html"]["sections"]["scheduled"]
    assert f'data-scheduled-change="{change.pk}"' in section and "weekend" in section
    page = viewer.get("/", {"partition": "default"}).content.decode()
    assert f'<div data-live-section="scheduled">{section}</div>' in page  # the page's own card

    services.update_partition_settings(
        "default", actor=None, comment="approvals", approval="decreases"
    )
    result = services.update_queue(
        "default", "root.batch.adhoc", version=Queue.objects.get(path="root.batch.adhoc").version,
        actor=None, comment="smaller adhoc", max={"memory": 100 * GI, "vcore": 100_000},
        request_approval=True,
    )  # fmt: skip
    held = result.change_request
    assert isinstance(held, ChangeRequest)
    held_answer = get(viewer, DASHBOARD, BATCH_OPEN, after["ETag"])
    assert held_answer.status_code == 200
    assert held_answer.json()["pending_requests"] == [held.pk]
    card = held_answer.json()["html"]["sections"]["pending_requests"]
    assert "Change requests awaiting approval" in card and "smaller adhoc" in card
