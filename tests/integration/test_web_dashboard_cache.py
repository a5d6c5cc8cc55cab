"""The dashboard's shared usage roll-up (``web.dashboard.rollup``): computed once per change of the
partition, never stale after one, never one viewer's view for another. Each test warms the
roll-up first, then changes something and reads the page or the live poll right after."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.accounts.roles import VIEWER
from scheduler_admin.cluster.models import UsageGeneration
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.dashboard import rollup
from tests.support.console import (
    BATCH_OPEN,
    LIVE_DASHBOARD,
    NIGHTLY,
    import_demo,
    lower_nightly_max,
    nightly_tasks,
    signed_in_client,
)
from tests.support.factories.partitions import saved_partition

pytestmark = pytest.mark.django_db

GI = 1024**3
DASHBOARD = LIVE_DASHBOARD
SUMMARY_TABLE = "FROM cluster_queueusage "  # the roll-up's one query


@pytest.fixture
def demo() -> Partition:
    """The demo with 400Gi in nightly (t0..t3), within its max: no timer yet."""
    partition = import_demo()
    nightly_tasks(partition)
    return Partition.objects.get(pk=partition.pk)


@pytest.fixture
def viewer() -> Client:
    return signed_in_client(VIEWER, "cache-viewer")


def memory_of(document: dict, path: str) -> dict:
    return next(bar for bar in document["queues"][path]["bars"] if bar["resource"] == "memory")


def push(partition: Partition, *allocations: dict) -> None:
    """A cluster-state push that adds ``allocations`` (1-core tasks of the given memory)."""
    ingest_cluster_state(
        partition,
        {"allocations": [
            {"id": a["id"], "queue": a["queue"], "node": "n1",
             "resources": {"memory": a["memory"], "vcore": "1"}}
            for a in allocations
        ]},
        actor=None,
    )  # fmt: skip


def summary_reads(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries if SUMMARY_TABLE in query["sql"]]


def test_a_push_a_revision_a_timer_and_evictions_each_show_right_after(demo, viewer):
    warm = viewer.get(DASHBOARD, BATCH_OPEN).json()
    assert memory_of(warm, NIGHTLY)["used"] == 400 * GI
    assert memory_of(warm, NIGHTLY)["max"] == 512 * GI
    assert viewer.get(DASHBOARD, BATCH_OPEN).json()["version"] == warm["version"]  # cached

    # A push that moves usage: the new task counts in its queue and its ancestors.
    push(demo, {"id": "t9", "queue": NIGHTLY, "memory": "50Gi"})
    pushed = viewer.get(DASHBOARD, BATCH_OPEN).json()
    assert memory_of(pushed, NIGHTLY)["used"] == 450 * GI
    assert memory_of(pushed, "root.batch")["used"] == 450 * GI
    page = viewer.get("/", {"partition": "default"}).content.decode()
    assert "450" in page.split('data-path="root.batch"')[1].split("</tr>")[0]

    # A saved revision (nightly's max lowered) and the quota timer it starts.
    timer = lower_nightly_max()
    revised = viewer.get(DASHBOARD, BATCH_OPEN).json()
    assert memory_of(revised, NIGHTLY)["max"] == 250 * GI
    assert revised["queues"][NIGHTLY]["over_max"] is True
    assert revised["queues"][NIGHTLY]["timer"]["id"] == timer.pk
    assert [item["path"] for item in revised["over_max"]["queues"]] == [NIGHTLY]
    assert revised["revisions"][0] == Partition.objects.get(pk=demo.pk).revisions.count()

    # The timer fires, its run evicts; each acknowledged eviction takes usage off.
    [run_id] = runs.sweep_due_quota_timers(now=timer.due_at)
    runs.execute_run(run_id, worker="test-worker")
    running = viewer.get(DASHBOARD, BATCH_OPEN).json()
    assert running["queues"][NIGHTLY]["run"]["id"] == run_id
    assert running["queues"][NIGHTLY]["over_max"] is True  # victims count until evicted
    for order in EvictionOrder.objects.filter(run_id=run_id):
        acknowledge_eviction(order.pk, actor=None)
    evicted = viewer.get(DASHBOARD, BATCH_OPEN).json()
    assert memory_of(evicted, NIGHTLY)["used"] <= 250 * GI
    assert evicted["queues"][NIGHTLY]["over_max"] is False
    assert evicted["over_max"] == {"count": 0, "queues": []}


def test_a_pushed_dynamic_queue_appears_in_a_cached_tree(viewer):
    partition = saved_partition(
        """
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        queues:
          - name: tenants
            parent: true
            childtemplate: {resources: {max: {memory: 16Gi}}}
"""
    )
    params = {"partition": "default", "open": ["root.tenants"]}
    assert "root.tenants.etl" not in viewer.get(DASHBOARD, params).json()["queues"]
    ingest_cluster_state(
        partition,
        {"dynamic_queues": [{"path": "root.tenants.etl",
                             "template": {"resources": {"max": {"memory": "16Gi"}}}}]},
        actor=None,
    )  # fmt: skip
    assert "root.tenants.etl" in viewer.get(DASHBOARD, params).json()["queues"]


def test_viewers_with_different_grants_never_see_each_others_rows(demo, viewer):
    lower_nightly_max()  # nightly over max: an over-max card only batch's holder may see
    push(demo, {"id": "p1", "queue": "root.prod.web", "memory": "3Gi"})
    prod, batch = Client(), Client()
    for client, name, queue in ((prod, "tenant-prod", "root.prod"),
                                (batch, "tenant-batch", "root.batch")):  # fmt: skip
        user = get_user_model().objects.create_user(name)
        give_grant(partition="default", queue_path=queue, role="operator", user=name, actor=None)
        client.force_login(user)

    for _ in range(2):  # the second round reads the roll-up the first one cached
        everything = viewer.get(DASHBOARD, {"partition": "default"}).json()
        of_prod = prod.get(DASHBOARD, {"partition": "default"}).json()
        of_batch = batch.get(DASHBOARD, BATCH_OPEN).json()
        assert {"root", "root.prod", "root.batch"} <= set(everything["queues"])
        assert set(of_prod["queues"]) and all(
            path.startswith("root.prod") for path in of_prod["queues"]
        )
        assert NIGHTLY in of_batch["queues"] and all(
            path.startswith("root.batch") for path in of_batch["queues"]
        )
        assert of_prod["over_max"] == {"count": 0, "queues": []}
        assert [item["path"] for item in of_batch["over_max"]["queues"]] == [NIGHTLY]
        assert "nightly" not in of_prod["html"]["rows"] + of_prod["html"]["sections"]["over_max"]
        assert of_prod["revisions"] == [] and everything["revisions"] != []
        assert len({of_prod["version"], of_batch["version"], everything["version"]}) == 3
        page = prod.get("/", {"partition": "default"}).content.decode()
        assert 'data-path="root.prod"' in page and 'data-path="root.batch"' not in page


def test_an_unchanged_poll_is_a_304_without_reading_usage_again(demo, viewer):
    etag = viewer.get(DASHBOARD, BATCH_OPEN)["ETag"]
    with CaptureQueriesContext(connection) as queries:
        unchanged = viewer.get(DASHBOARD, BATCH_OPEN, headers={"If-None-Match": etag})
        viewer.get("/", {"partition": "default"})
    assert unchanged.status_code == 304 and unchanged.content == b""
    assert summary_reads(queries) == []  # the roll-up was not recomputed

    push(demo, {"id": "t9", "queue": NIGHTLY, "memory": "1Gi"})
    with CaptureQueriesContext(connection) as queries:
        changed = viewer.get(DASHBOARD, BATCH_OPEN, headers={"If-None-Match": etag})
        viewer.get(DASHBOARD, BATCH_OPEN, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert len(summary_reads(queries)) == 1  # once per change, not once per poll


def test_the_generation_moves_with_usage_and_not_with_a_push_that_changes_nothing(demo):
    generation = rollup.usage_generation(demo)
    assert generation > 0
    nightly_tasks(demo)  # the same tasks again: nothing written
    assert rollup.usage_generation(demo) == generation
    push(demo, {"id": "t9", "queue": NIGHTLY, "memory": "1Gi"})
    assert rollup.usage_generation(demo) > generation


@pytest.mark.django_db(transaction=True)
def test_a_committed_push_moves_the_generation_at_commit():
    """Outside a test's transaction the summary is written when the push commits (its
    deferred trigger): the generation is written with it."""
    partition = import_demo()
    nightly_tasks(partition)
    assert not connection.in_atomic_block
    before = UsageGeneration.objects.get(partition_id=partition.pk).number
    viewer = signed_in_client(VIEWER, "committed-viewer")
    assert memory_of(viewer.get(DASHBOARD, BATCH_OPEN).json(), NIGHTLY)["used"] == 400 * GI
    push(partition, {"id": "t9", "queue": NIGHTLY, "memory": "50Gi"})
    assert UsageGeneration.objects.get(partition_id=partition.pk).number > before
    assert memory_of(viewer.get(DASHBOARD, BATCH_OPEN).json(), NIGHTLY)["used"] == 450 * GI
