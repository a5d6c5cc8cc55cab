"""Replace-mode cluster-state pushes (``"replace": true``), on PostgreSQL with commits.

A replace push is the partition's whole state: whatever it does not list (nodes, allocations,
asks, budgets) is removed in the same transaction, with the applications left without tasks,
counted in the answer and the audit event, and a second identical push changes nothing. What
the product owns survives it: a listed victim stays ``preempting``; an unlisted one is removed
while its eviction order stays pending, and acknowledging that order still works. A replace
push released at the same instant as the enforcement marking victims never loses a mark nor
leaves the usage summary different from a ``SUM`` over the tasks.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection, transaction

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.locking import lock_allocations
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    DisruptionBudget,
    Node,
    QueueUsage,
)
from scheduler_admin.cluster.services import IngestErrors, IngestResult, ingest_cluster_state
from scheduler_admin.cluster.usage import check_summary
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import (
    AckResult,
    acknowledge_eviction,
    acknowledge_evictions,
)
from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from tests.integration.test_ingest_races import wait_for_a_lock_wait
from tests.support.factories.partitions import imported_partition
from tests.support.racing import release_together
from tests.support.team import GB, START, TEAM_TASKS, task, team_config

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 8


def whole_state() -> dict[str, Any]:
    """The team partition's state as an agent that listed everything would push it."""
    return {
        "nodes": [
            {"name": "n1", "capacity": {"memory": "1000G"}},
            {"name": "n2", "capacity": {"memory": "500G"}},
        ],
        "allocations": [dict(item) for item in TEAM_TASKS],
        "asks": [
            {"id": "ask1", "queue": "root.team.a", "resources": {"memory": "1G"}},
            {"id": "ask2", "queue": "root.team.b", "resources": {"memory": "2G"}},
        ],
        "budgets": [
            {"name": "ns/pdb1", "allowed_disruptions": 1},
            {"name": "ns/pdb2", "allowed_disruptions": 0},
        ],
    }


@pytest.fixture
def partition() -> Partition:
    with time_machine.travel(START, tick=False):
        default = imported_partition(team_config("2s"))
        ingest_cluster_state(default, whole_state(), actor=None)
    return default


def stored() -> dict[str, set[str]]:
    return {
        "nodes": set(Node.objects.values_list("name", flat=True)),
        "allocations": set(Allocation.objects.values_list("external_id", flat=True)),
        "asks": set(Ask.objects.values_list("external_id", flat=True)),
        "budgets": set(DisruptionBudget.objects.values_list("name", flat=True)),
        "applications": set(Application.objects.values_list("external_id", flat=True)),
    }


def ingest_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).order_by("id"))


def test_a_replace_push_removes_what_it_does_not_list_and_counts_it(partition):
    body = whole_state()
    body["nodes"] = body["nodes"][:1]
    body["allocations"] = [body["allocations"][0], {**body["allocations"][2], "priority": 5}]
    body["asks"] = body["asks"][:1]
    body["budgets"] = body["budgets"][:1]
    events = len(ingest_events())

    result = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)

    assert result.replace is True
    assert result.removed == {
        "nodes": 1, "allocations": 3, "asks": 1, "budgets": 1, "dynamic_queues": 0
    }  # fmt: skip
    assert result.changed == {
        "nodes": {"created": 0, "updated": 0, "removed": 1},
        # a2, b2 and b3 had their own application (the id), and so had ask2
        "applications": {"created": 0, "updated": 0, "removed": 4},
        "allocations": {"created": 0, "updated": 1, "removed": 3},
        "asks": {"created": 0, "updated": 0, "removed": 1},
        "budgets": {"created": 0, "updated": 0, "removed": 1},
        "dynamic_queues": {"created": 0, "updated": 0, "removed": 0},
    }
    assert stored() == {
        "nodes": {"n1"},
        "allocations": {"a1", "b1"},
        "asks": {"ask1"},
        "budgets": {"ns/pdb1"},
        "applications": {"a1", "b1", "ask1"},
    }
    [event] = ingest_events()[events:]
    assert event.data == result.to_json() and event.data["replace"] is True
    assert event.summary.startswith("Cluster state of default changed (replaced): nodes 1 removed")
    assert check_summary(partition) == {}
    assert QueueUsage.objects.filter(queue_path="root.team.b").exists()

    again = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)
    assert not again.anything_changed
    assert again.removed == {
        "nodes": 0,
        "allocations": 0,
        "asks": 0,
        "budgets": 0,
        "dynamic_queues": 0,
    }
    assert len(ingest_events()) == events + 1  # the identical push wrote nothing


def test_an_empty_replace_push_empties_the_partition(partition):
    result = ingest_cluster_state(partition, {"replace": True}, actor=None)
    assert result.removed == {
        "nodes": 2,
        "allocations": 5,
        "asks": 2,
        "budgets": 2,
        "dynamic_queues": 0,
    }
    assert stored() == {kind: set() for kind in stored()}
    assert check_summary(partition) == {}
    assert not QueueUsage.objects.filter(partition_id=partition.pk).exists()


def test_without_replace_only_what_the_body_names_changes(partition):
    result = ingest_cluster_state(
        partition,
        {"allocations": [task("new", "root.team.a", 1, 9)], "remove": {"budgets": ["ns/pdb2"]}},
        actor=None,
    )
    assert result.replace is False
    assert result.removed == {
        "nodes": 0,
        "allocations": 0,
        "asks": 0,
        "budgets": 1,
        "dynamic_queues": 0,
    }
    assert stored()["budgets"] == {"ns/pdb1"}
    assert stored()["allocations"] == {"a1", "a2", "b1", "b2", "b3", "new"}
    assert stored()["nodes"] == {"n1", "n2"}


def test_a_moved_task_leaves_no_empty_application_after_a_replace_push(partition):
    body = whole_state()
    for item in body["allocations"]:
        item["app"] = "shared-a" if item["queue"] == "root.team.a" else "shared-b"
    ingest_cluster_state(partition, body, actor=None)  # without replace: apps a1 .. b3 stay
    assert {"a1", "shared-a"} <= stored()["applications"]
    result = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)
    assert stored()["applications"] == {"shared-a", "shared-b", "ask1", "ask2"}
    assert result.changed["applications"]["removed"] == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"replace": "yes"}, "replace"),
        ({"replace": 1}, "replace"),
        ({"remove": {"budgets": "ns/pdb1"}}, "remove.budgets"),
        ({"remove": {"budgets": [""]}}, "remove.budgets[0]"),
        ({"remove": {"pdbs": ["ns/pdb1"]}}, "remove.pdbs"),
        # n1 is stored, but a replace push that does not list it removes it: not a known node
        (
            {"replace": True, "allocations": [task("x", "root.team.a", 1, 1)]},
            "allocations[0].node",
        ),
        (
            {
                "replace": True,
                "nodes": [{"name": "n2", "capacity": {"memory": "1G"}}],
                "allocations": [task("x", "root.team.a", 1, 1, required_node="n1")],
            },
            "allocations[0].node",
        ),
    ],
)
def test_a_bad_body_is_refused_whole_and_changes_nothing(partition, body, field):
    before = stored()
    events = len(ingest_events())
    with pytest.raises(IngestErrors) as caught:
        ingest_cluster_state(partition, body, actor=None)
    assert field in caught.value.errors, caught.value.errors
    assert stored() == before and len(ingest_events()) == events


def preempt_team(partition: Partition) -> list[EvictionOrder]:
    """Lower root.team to 100G and let its run preempt a2, b2 and b1 (pending orders)."""
    with time_machine.travel(START, tick=False):
        config_services.update_queue(
            "default", "root.team", version=Queue.objects.get(path="root.team").version,
            actor=None, comment="lower", max={"memory": 100 * GB},
        )  # fmt: skip
    at = START + timedelta(seconds=2)
    with time_machine.travel(at, tick=False):
        for run_id in runs.sweep_due_quota_timers(at):
            runs.execute_run(run_id, worker="t")
    return list(EvictionOrder.objects.order_by("allocation_id"))


def test_listed_victims_stay_preempting_and_an_unlisted_ones_order_stays_pending(partition):
    orders = preempt_team(partition)
    assert [order.allocation_id for order in orders] == ["a2", "b1", "b2"]
    body = whole_state()
    body["allocations"] = [item for item in body["allocations"] if item["id"] not in ("a2", "b2")]

    ingest_cluster_state(partition, {**body, "replace": True}, actor=None)

    # b1 is listed without a state: it stays a victim; a2 and b2 are gone from the cluster.
    assert Allocation.objects.get(external_id="b1").state == AllocationState.PREEMPTING
    assert not Allocation.objects.filter(external_id__in=["a2", "b2"]).exists()
    assert set(EvictionOrder.objects.values_list("status", flat=True)) == {"pending"}
    assert check_summary(partition) == {}
    # The orders of the removed tasks are still acknowledged, one by one or in bulk.
    a2, b1, b2 = orders
    assert acknowledge_eviction(a2.pk, actor=None).status == EvictionStatus.ACKNOWLEDGED
    assert acknowledge_evictions(partition, [(b2.pk, "gone"), (b1.pk, "evicted")], actor=None) == [
        (b2.pk, AckResult.ACKNOWLEDGED),
        (b1.pk, AckResult.ACKNOWLEDGED),
    ]
    assert dict(EvictionOrder.objects.values_list("allocation_id", "outcome")) == {
        "a2": "evicted", "b1": "evicted", "b2": "gone",
    }  # fmt: skip
    assert Allocation.objects.get(external_id="b1").state == AllocationState.RELEASED
    assert check_summary(partition) == {}


def test_a_replace_push_racing_the_marking_of_victims_loses_no_mark_and_keeps_the_summary(
    partition,
):
    """Each round: 40 new tasks; the enforcement marks the even ones preempting while, at the
    same instant, a replace push lists every task but every fourth one (with new priorities,
    no state). Whatever the interleaving, the listed victims are preempting, the unlisted tasks
    are gone, and the summary equals the sum over the tasks. Neither fails: both lock the rows
    they write in id order first (``cluster.locking``); without that, the push's removals and
    updates (two statements) and the marking deadlocked within a few rounds."""
    base = whole_state()
    for round_ in range(ROUNDS):
        ids = [f"r{round_}-{i:02}" for i in range(40)]
        tasks = [task(id_, "root.team.b", 1, 1, app=f"r{round_}-app") for id_ in ids]
        ingest_cluster_state(partition, {**base, "allocations": tasks, "replace": True}, actor=None)
        victims = ids[::2]
        listed = [{**item, "priority": round_ + 1} for i, item in enumerate(tasks) if i % 4]

        def mark(victims: list[str] = victims) -> int:
            """What a run's chunk does to its victims' allocations
            (``runs.execution._preempt_chunk``)."""
            with transaction.atomic():
                lock_allocations(partition, victims)
                return Allocation.objects.filter(
                    partition=partition, external_id__in=victims, state=AllocationState.RUNNING
                ).update(state=AllocationState.PREEMPTING)

        def push(listed: list[dict[str, Any]] = listed) -> IngestResult:
            return ingest_cluster_state(
                partition, {**base, "allocations": listed, "replace": True}, actor=None
            )

        marked, pushed = release_together(mark, push)
        assert isinstance(pushed, IngestResult), pushed
        assert isinstance(marked, int), marked
        kept = {item["id"] for item in listed}
        assert set(Allocation.objects.values_list("external_id", flat=True)) == kept
        states = dict(Allocation.objects.values_list("external_id", "state"))
        assert {id_ for id_, state in states.items() if state == "preempting"} == (
            kept & set(victims)
        ), f"round {round_}"
        assert set(Allocation.objects.values_list("priority", flat=True)) == {round_ + 1}
        assert check_summary(partition) == {}


def set_max(path: str, memory_gb: int) -> None:
    config_services.update_queue(
        "default", path, version=Queue.objects.get(path=path).version, actor=None,
        comment="max", max={"memory": memory_gb * GB},
    )  # fmt: skip


def test_a_replace_push_racing_a_real_run_never_fails_and_keeps_the_summary(partition):
    """Each round: 30 new tasks in root.team.b, its max lowered so a run must preempt most of
    them; the worker executes the run (plan, then its chunk) while a replace push that drops a
    third of the tasks is released at the same instant. Neither raises; every victim still in
    the cluster is ``preempting``, each victim has its one order (pending, also for the tasks
    the push removed), and the summary equals the sum over the tasks."""
    base = whole_state()
    for round_ in range(ROUNDS):
        tasks = [
            task(f"q{round_}-{i:02}", "root.team.b", 10, 1, app=f"q{round_}-app") for i in range(30)
        ]
        with time_machine.travel(START + timedelta(minutes=round_), tick=False):
            set_max("root.team.b", 400)  # room for the new tasks: no timer
            ingest_cluster_state(
                partition, {**base, "allocations": tasks, "replace": True}, actor=None
            )
            set_max("root.team.b", (round_ + 2) * 10)  # a decrease: a quota timer starts
        due = START + timedelta(minutes=round_, seconds=5)
        with time_machine.travel(due, tick=False):
            [run_id] = runs.sweep_due_quota_timers(due)
        listed = [item for i, item in enumerate(tasks) if i % 3]
        with time_machine.travel(due + timedelta(seconds=1), tick=True):  # every thread
            ran, pushed = release_together(
                lambda run_id=run_id: runs.execute_run(run_id, worker="w"),
                lambda listed=listed: ingest_cluster_state(
                    partition, {**base, "allocations": listed, "replace": True}, actor=None
                ),
            )
        assert isinstance(pushed, IngestResult), pushed
        assert not isinstance(ran, BaseException), ran
        orders = dict(
            EvictionOrder.objects.filter(run_id=run_id).values_list("allocation_id", "status")
        )
        assert orders and set(orders.values()) == {"pending"}, f"round {round_}"
        victims = set(orders)
        states = dict(Allocation.objects.values_list("external_id", "state"))
        assert set(states) == {item["id"] for item in listed}
        assert {id_ for id_, state in states.items() if state == "preempting"} == (
            victims & set(states)
        ), f"round {round_}"
        assert check_summary(partition) == {}
        # Acknowledge them all (some tasks are gone) before the next round lowers the max again.
        acknowledge_evictions(
            partition,
            [(pk, "gone") for pk in EvictionOrder.objects.filter(run_id=run_id).values_list(
                "pk", flat=True)],
            actor=None,
        )  # fmt: skip


def test_the_worst_interleaving_of_a_replace_push_and_a_marking_does_not_deadlock(partition):
    """Forced rather than hoped for: the enforcement, having locked its victims as every writer
    of many allocations does (``cluster.locking``), marks a victim the push removes, waits until
    the push waits for a row, then marks a victim the push updates. Without the ordered locks
    the push updated the second victim before removing the first: each transaction held a row
    the other wanted, and PostgreSQL's deadlock detector killed one of them."""
    removed, kept = "a2", "b1"
    body = whole_state()
    body["allocations"] = [
        {**item, "priority": 9} for item in body["allocations"] if item["id"] != removed
    ]
    locked = threading.Event()
    failures: list[BaseException] = []

    def enforce() -> None:
        try:
            with transaction.atomic():
                lock_allocations(partition, [removed, kept])
                Allocation.objects.filter(external_id=removed).update(
                    state=AllocationState.PREEMPTING
                )
                locked.set()
                wait_for_a_lock_wait()
                Allocation.objects.filter(external_id=kept).update(state=AllocationState.PREEMPTING)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)
        finally:
            locked.set()
            connection.close()

    thread = threading.Thread(target=enforce)
    thread.start()
    locked.wait()
    result = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)
    thread.join()
    assert not failures, failures
    assert result.removed["allocations"] == 1
    assert not Allocation.objects.filter(external_id=removed).exists()
    assert Allocation.objects.get(external_id=kept).state == AllocationState.PREEMPTING
    assert set(Allocation.objects.values_list("priority", flat=True)) == {9}
    assert check_summary(partition) == {}


def test_one_replace_push_creating_and_changing_rows_stores_each_as_given(partition):
    """New rows and changed stored rows go by different statements on PostgreSQL (``COPY``
    for the new, an upsert for the others): both land whole, with the usage summary exact."""
    body = whole_state()
    body["nodes"].append(
        {"name": "n3", "capacity": {"memory": "64G"}, "labels": {"zone": "b"},
         "taints": [{"key": "gpu", "effect": "NoSchedule"}]}
    )  # fmt: skip
    body["allocations"][0] = {**body["allocations"][0], "node": "n2", "state": "preempting"}
    body["allocations"] += [
        task("c1", "root.team.a", 7, 20, node="n3", app="app-c", qos="Guaranteed", pdb="ns/pdb1"),
        task("c2", "root.team.b", 3, 21, node="n3", state="preempting", priority=-4),
    ]
    body["asks"].append(
        {"id": "ask3", "queue": "root.team.a", "resources": {"memory": "5G"}, "node": "n3",
         "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    )  # fmt: skip

    result = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)

    assert result.changed["nodes"] == {"created": 1, "updated": 0, "removed": 0}
    assert result.changed["allocations"] == {"created": 2, "updated": 1, "removed": 0}
    assert result.changed["asks"] == {"created": 1, "updated": 0, "removed": 0}
    node = Node.objects.get(partition=partition, name="n3")
    assert (node.capacity, node.labels) == ({"memory": 64 * GB}, {"zone": "b"})
    assert [(t["key"], t["effect"]) for t in node.taints] == [("gpu", "NoSchedule")]
    rows = {
        a.external_id: a
        for a in Allocation.objects.filter(partition=partition).select_related("application")
    }
    assert (rows["a1"].node_name, rows["a1"].state) == ("n2", AllocationState.PREEMPTING)
    c1, c2 = rows["c1"], rows["c2"]
    assert (c1.application.external_id, c1.queue_path, c1.resources, c1.qos, c1.pdb) == (
        "app-c", "root.team.a", {"memory": 7 * GB}, "Guaranteed", "ns/pdb1"
    )  # fmt: skip
    assert c1.state == AllocationState.RUNNING and c1.created_at == datetime(
        2026, 3, 1, 10, 20, tzinfo=UTC
    )
    assert (c2.state, c2.priority, c2.application.external_id) == (
        AllocationState.PREEMPTING, -4, "c2"
    )  # fmt: skip
    ask = Ask.objects.get(partition=partition, external_id="ask3")
    assert (ask.node, ask.resources, ask.tolerations[0]["key"]) == ("n3", {"memory": 5 * GB}, "gpu")
    assert check_summary(partition) == {}
    again = ingest_cluster_state(partition, {**body, "replace": True}, actor=None)
    assert not again.anything_changed
