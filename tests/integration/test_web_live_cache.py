"""The dashboard's live poll with its rendered parts kept per process (``web.dashboard.fragments``,
the sparklines' memo, the revisions that come with the shared roll-up): every thing the answer
shows changes the answer when it changes, right after, and a part kept for one viewer is never
another viewer's (their rights, their CSRF token)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.accounts.roles import OPERATOR, VIEWER
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.enforcement.timers import cancel_timer
from scheduler_admin.history.services import sample_partition
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.system.models import WorkerHeartbeat
from scheduler_admin.web.dashboard import fragments
from tests.support.console import (
    BATCH_OPEN,
    LIVE_DASHBOARD,
    NIGHTLY,
    import_demo,
    lower_nightly_max,
    nightly_tasks,
    signed_in_client,
)
from tests.support.factories.users import role_user

pytestmark = pytest.mark.django_db

GI = 1024**3
DASHBOARD = LIVE_DASHBOARD
#: The parts rendered once per content and kept (the others are rendered per request).
KEPT = ("over_max", "alerts", "runs", "revisions", "sparklines")


@pytest.fixture
def partition() -> Partition:
    """The demo with 400Gi in nightly and its max lowered to 250Gi: over max, a pending timer."""
    demo = import_demo()
    nightly_tasks(demo)
    lower_nightly_max()
    return Partition.objects.get(pk=demo.pk)


@pytest.fixture
def viewer() -> Client:
    return signed_in_client(VIEWER, "kept-viewer")


def row_html(rows: str, path: str) -> str:
    found = re.search(rf'<tr role="row"[^>]*data-path="{re.escape(path)}".*?</tr>', rows, re.S)
    assert found, f"no row of {path}"
    return found.group(0)


class Poll:
    """An open dashboard: each ``changed()`` polls with the previous version and asserts a new
    answer (not a 304), returning it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.last = client.get(DASHBOARD, BATCH_OPEN)
        assert self.last.status_code == 200

    def changed(self, what: str) -> dict:
        answer = self.client.get(DASHBOARD, BATCH_OPEN, headers={"If-None-Match": self.etag})
        assert answer.status_code == 200, f"{what}: still a 304"
        assert answer["ETag"] != self.etag, what
        self.last = answer
        return answer.json()

    def unchanged(self) -> None:
        again = self.client.get(DASHBOARD, BATCH_OPEN, headers={"If-None-Match": self.etag})
        assert again.status_code == 304

    @property
    def etag(self) -> str:
        return self.last["ETag"]


def test_each_thing_the_dashboard_shows_changes_its_answer(partition, viewer):
    poll = Poll(viewer)
    poll.unchanged()
    before = poll.last.json()

    # Usage: a task ends, nightly's row and the over-max card say so.
    Allocation.objects.filter(external_id="t3").update(state=AllocationState.RELEASED)
    now = poll.changed("usage")
    assert row_html(now["html"]["rows"], NIGHTLY) != row_html(before["html"]["rows"], NIGHTLY)
    assert now["html"]["sections"]["over_max"] != before["html"]["sections"]["over_max"]
    assert "300" in row_html(now["html"]["rows"], NIGHTLY)

    # A run that fell short: the runs card, the alerts; then it fails: both change again.
    run = PreemptionRun.objects.create(
        partition=partition, policy="quota", queue_path="root.batch.adhoc",
        trigger="quota_timer", status=RunStatus.FINISHED, outcome="short",
        created_at=timezone.now(),
    )  # fmt: skip
    now = poll.changed("a run")
    assert f"Run {run.pk}</a>" in now["html"]["sections"]["runs"]
    assert f"Run {run.pk}</a>" in now["html"]["sections"]["alerts"]
    assert 'class="badge bad">short<' in now["html"]["sections"]["alerts"]
    PreemptionRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error="worker lost")
    now = poll.changed("a run's status")
    assert "worker lost" in now["html"]["sections"]["alerts"]
    assert "failed" in now["html"]["sections"]["runs"].lower()

    # The timer is cancelled: nightly's row and its over-max row say "no timer".
    timer = QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)
    cancel_timer(timer.pk, actor=None)
    now = poll.changed("the timer")
    assert "data-due-at" not in row_html(now["html"]["rows"], NIGHTLY)
    assert "no timer" in now["html"]["sections"]["over_max"]

    # A saved revision: the revisions card (it comes with the shared roll-up) and the rows.
    adhoc = Queue.objects.get(path="root.batch.adhoc")
    services.update_queue(
        "default", adhoc.path, version=adhoc.version, actor=None, comment="bigger adhoc",
        max={"memory": 300 * GI, "vcore": 100_000},
    )  # fmt: skip
    now = poll.changed("a revision")
    newest = partition.revisions.order_by("-number").first()
    assert now["revisions"][0] == newest.number
    assert f"Revision {newest.number}</a>" in now["html"]["sections"]["revisions"]
    assert "bigger adhoc" in now["html"]["sections"]["revisions"]
    assert row_html(now["html"]["rows"], "root.batch.adhoc") != row_html(
        before["html"]["rows"], "root.batch.adhoc"
    )

    # A worker reports, then falls silent; an agent registers.
    moment = timezone.now()
    beat = WorkerHeartbeat.objects.create(worker="celery@kept", last_seen=moment)
    now = poll.changed("a worker")
    assert "celery@kept" in now["html"]["sections"]["workers"]
    WorkerHeartbeat.objects.filter(pk=beat.pk).update(last_seen=moment - timedelta(minutes=5))
    now = poll.changed("a silent worker")
    assert "silent" in now["html"]["sections"]["workers"]
    ClusterAgent.objects.create(
        partition=partition, name="kept-agent", started_at=moment, registered_at=moment,
        last_heartbeat_at=moment,
    )  # fmt: skip
    now = poll.changed("an agent")
    assert 'data-agent="kept-agent"' in now["html"]["sections"]["agents"]

    # A usage sample: the sparklines follow (their own memo, keyed by the sampling state).
    sparklines = now["html"]["sections"]["sparklines"]
    sample_partition(partition)
    now = poll.changed("a sample")
    assert now["sparklines"] is not None
    assert now["html"]["sections"]["sparklines"] != sparklines
    poll.unchanged()


def test_kept_parts_follow_the_viewers_rights_whoever_asked_first(partition, viewer):
    """An operator's over-max rows carry a cancel button; a viewer asking after them gets rows
    without it, a tenant of another subtree none of nightly; no kept part holds a CSRF token."""
    operator = signed_in_client(OPERATOR, "kept-operator")
    tenant = Client()
    holder = role_user("kept-holder", OPERATOR)
    holder.groups.clear()  # a queue grant only
    give_grant(partition="default", queue_path="root.prod", role="operator", user=holder.username,
               actor=None)  # fmt: skip
    tenant.force_login(holder)
    # A global viewer who operates root.prod: the actions column, but no button on nightly.
    role_user("kept-prod-operator", VIEWER)
    give_grant(partition="default", queue_path="root.prod", role="operator",
               user="kept-prod-operator", actor=None)  # fmt: skip
    prod_operator = signed_in_client(VIEWER, "kept-prod-operator")

    for _ in range(2):  # the second round reads what the first one kept
        as_operator = operator.get(DASHBOARD, BATCH_OPEN).json()
        as_viewer = viewer.get(DASHBOARD, BATCH_OPEN).json()
        as_tenant = tenant.get(DASHBOARD, {"partition": "default"}).json()
        assert "Cancel timer" in as_operator["html"]["sections"]["over_max"]
        assert "Cancel timer" not in as_viewer["html"]["sections"]["over_max"]
        assert "Actions" not in as_viewer["html"]["sections"]["over_max"]
        as_prod_operator = prod_operator.get(DASHBOARD, BATCH_OPEN).json()
        assert "Actions" in as_prod_operator["html"]["sections"]["over_max"]
        assert NIGHTLY in as_prod_operator["html"]["sections"]["over_max"]
        assert "Cancel timer" not in as_prod_operator["html"]["sections"]["over_max"]
        assert NIGHTLY in as_viewer["html"]["sections"]["over_max"]
        assert NIGHTLY not in as_tenant["html"]["sections"]["over_max"]
        assert "nightly" not in as_tenant["html"]["rows"]
        assert as_tenant["revisions"] == []
        assert "No revision yet." in as_tenant["html"]["sections"]["revisions"]
        for answer in (as_operator, as_viewer, as_tenant, as_prod_operator):
            for name in KEPT:
                assert "csrfmiddlewaretoken" not in answer["html"]["sections"][name], name
            assert "csrfmiddlewaretoken" not in answer["html"]["rows"]
    assert fragments._cache  # the parts were kept


def test_the_page_the_children_fragment_and_the_poll_draw_the_same_rows(partition, viewer):
    """All three render rows through the kept parts: a row kept by one is the row of the
    others, and a change shows in each. (Compared on root.batch: nightly's row counts its
    timer down, to the second.)"""
    page = viewer.get("/", {"partition": "default"}).content.decode()
    children = viewer.get(
        "/dashboard/children/", {"partition": "default", "queue": "root.batch"}
    ).content.decode()
    live = viewer.get(DASHBOARD, BATCH_OPEN).json()["html"]["rows"]
    assert row_html(page, "root.batch") == row_html(live, "root.batch")
    assert 'data-path="root.batch.nightly"' in children
    Allocation.objects.filter(external_id="t0").update(state=AllocationState.RELEASED)
    page = viewer.get("/", {"partition": "default"}).content.decode()
    live = viewer.get(DASHBOARD, BATCH_OPEN).json()["html"]["rows"]
    assert row_html(page, "root.batch") == row_html(live, "root.batch")
    assert "300" in row_html(page, "root.batch")
