"""The usage summaries (``cluster.QueueUsage``, ``QueueUsagePath``, ``PartitionUsage``), kept by
triggers on the allocation table (migration ``cluster.0003``), on real PostgreSQL.

Every write path is driven and the summaries compared with a ``SUM`` over the tasks
(``check_summary``): ingest (new, changed, moved, released and removed tasks, and replace pushes
that remove every task they do not list), ``COPY``, a real
run's evictions, acknowledgements, bulk ORM updates and deletes, the demo simulator's build and
churn, ``TRUNCATE`` and a partition's deletion; random ingests; writers of the same queues
released together (in opposite orders, which would deadlock if each statement locked the summary
rows it changes); reads inside a transaction that wrote; and the rebuild command.
"""

from __future__ import annotations

import io
import random
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from preemption.resources import MAX_QUANTITY, format_resources
from scheduler_admin.bench.data import copy_allocations
from scheduler_admin.cluster.adapters import queue_usage, usage_of_queues
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    PartitionUsage,
    QueueUsage,
    QueueUsagePath,
)
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.cluster.usage import (
    ENGINE_STATES,
    check_summary,
    configured_total,
    leaf_usage,
    summed_from_tasks,
)
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_tree
from tests.integration.test_sweep_races import TRIALS, make_partition
from tests.support.racing import release_together_or_raise
from tests.support.team import START, task

pytestmark = pytest.mark.django_db(transaction=True)  # commits: the triggers' real path


def agrees(partition: Partition) -> None:
    assert check_summary(partition) == {}


def reads_agree(partition: Partition) -> None:
    """Every read of usage equals the same read summed from the tasks."""
    agrees(partition)
    _, hierarchy = current_tree(partition)
    from_tasks = hierarchy.usage_by_queue(summed_from_tasks(partition))
    assert queue_usage(partition) == from_tasks
    assert usage_of_queues(partition, hierarchy, list(hierarchy.queues)) == from_tasks
    for states in ([AllocationState.RUNNING, AllocationState.PREEMPTING], ENGINE_STATES):
        [total] = summed_from_tasks(
            partition, paths=list(hierarchy.queues), states=states, grouped=False
        ) or [None]
        expected = dict(total.resources) if total else {}
        assert configured_total(partition, hierarchy.queues, states=states) == expected
        assert sorted(leaf_usage(partition, "root.team", states=states)) == sorted(
            summed_from_tasks(partition, "root.team", states=states)
        )


def stored_items(partition: Partition) -> list[dict[str, object]]:
    """The partition's allocations as a cluster-state push lists them (state left out)."""
    return [
        {"id": id_, "app": app, "queue": queue, "node": node,
         "resources": format_resources(resources)}
        for id_, app, queue, node, resources in Allocation.objects.filter(partition=partition)
        .order_by("external_id")
        .values_list("external_id", "application__external_id", "queue_path", "node_name",
                     "resources")
    ]  # fmt: skip


NODES = [{"name": "n1", "capacity": {"memory": "1000G"}}]


def test_every_write_path_keeps_the_summaries_equal_to_a_sum_over_the_tasks() -> None:
    make_partition("paths")  # ingest: team.a and team.b run eight 10G tasks each
    partition = Partition.objects.get(name="paths")
    reads_agree(partition)
    assert QueueUsage.objects.filter(partition_id=partition.pk).count() == 2
    assert set(QueueUsagePath.objects.values_list("queue_path", flat=True)) == {
        "root.team.a",
        "root.team.b",
    }

    # A real run: its victims turn preempting.
    clock = START + timedelta(seconds=2)
    with time_machine.travel(clock, tick=False):
        for run_id in runs.sweep_due_quota_timers(clock):
            runs.execute_run(run_id, worker="w")
    assert Allocation.objects.filter(state=AllocationState.PREEMPTING).exists()
    reads_agree(partition)
    assert QueueUsage.objects.filter(state=AllocationState.PREEMPTING).exists()

    # Acknowledgements release them.
    for order in EvictionOrder.objects.filter(partition=partition):
        acknowledge_eviction(order.pk, actor=None)
    assert not Allocation.objects.filter(state=AllocationState.PREEMPTING).exists()
    reads_agree(partition)
    assert not QueueUsage.objects.filter(state=AllocationState.PREEMPTING).exists()

    # Ingest: a task grows a resource and moves queue, one is released by the cluster, one
    # removed, new ones (one with a zero amount) arrive.
    live = list(
        Allocation.objects.filter(partition=partition, state=AllocationState.RUNNING)
        .order_by("external_id")
        .values_list("external_id", "queue_path")
    )
    (moved, _), (released, _), (removed, _) = live[:3]
    ingest_cluster_state(
        partition,
        {
            "allocations": [
                {**task(moved, "root.team.b", 3, 1), "resources": {"memory": "3G", "vcore": 2}},
                {**task(released, "root.team.a", 10, 1), "state": "released"},
                {**task("new1", "root.team.a", 7, 9), "resources": {"memory": "7G", "pods": 0}},
                task("new2", "root.team.b", 1, 9),
            ],
            "remove": {"allocations": [removed]},
        },
        actor=None,
    )
    reads_agree(partition)
    assert configured_total(partition, ["root", "root.team", "root.team.a"])["pods"] == 0

    # COPY, as the bench loads tasks.
    app = Application.objects.filter(partition=partition).first()
    created = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    copy_allocations(
        partition,
        [
            (f"copied{n}", app.pk, "root.team.a", "n1", {"memory": n, "vcore": 1}, 0, created)
            for n in range(50)
        ],
        analyse=False,
    )
    reads_agree(partition)

    # Bulk ORM writes: resources, queue (to a path no longer configured: counted nowhere), state.
    Allocation.objects.filter(external_id__startswith="copied").update(resources={"vcore": 5})
    Allocation.objects.filter(external_id__in=["copied1", "copied2"]).update(queue_path="root.gone")
    Allocation.objects.filter(external_id="copied3").update(state=AllocationState.PREEMPTING)
    reads_agree(partition)
    assert QueueUsagePath.objects.filter(queue_path="root.gone").exists()
    _, hierarchy = current_tree(partition)
    assert usage_of_queues(partition, hierarchy, ["root"])["root"]["vcore"] == 2000 + 48 * 5
    Allocation.objects.filter(external_id__startswith="copied").delete()
    reads_agree(partition)
    assert not QueueUsagePath.objects.filter(queue_path="root.gone").exists()

    # A replace push: every task but the first three, one resized and one naming no app of its
    # own any more; the three are removed because the body does not list them.
    items = stored_items(partition)
    items[3]["resources"] = {"memory": "11G", "gpu": "1"}
    items[4]["app"] = items[5]["app"]
    result = ingest_cluster_state(
        partition, {"nodes": NODES, "allocations": items[3:], "replace": True}, actor=None
    )
    assert result.removed["allocations"] == 3
    reads_agree(partition)


def test_deleting_a_partition_empties_its_summaries() -> None:
    """Its tasks go with it (Django's cascade), and their deltas empty its rows; the other
    partition's are untouched."""
    make_partition("kept")
    make_partition("deleted")
    partition = Partition.objects.get(name="deleted")
    pk = partition.pk
    partition.delete()
    agrees(Partition.objects.get(name="kept"))
    assert QueueUsage.objects.exists()
    assert not QueueUsage.objects.filter(partition_id=pk).exists()
    assert not QueueUsagePath.objects.filter(partition_id=pk).exists()
    assert not PartitionUsage.objects.filter(partition_id=pk).exists()


def test_truncating_the_tasks_empties_the_summaries() -> None:
    make_partition("truncated")
    assert PartitionUsage.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Allocation._meta.db_table} CASCADE")
    assert not QueueUsage.objects.exists() and not PartitionUsage.objects.exists()
    assert not QueueUsagePath.objects.exists()


def test_the_demo_simulator_build_run_and_churn_keep_the_summaries() -> None:
    with time_machine.travel(START, tick=False):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
        call_command("simulate_cluster", "--nodes", "20", "--tasks", "600", stdout=io.StringIO())
    partition = Partition.objects.get(name="default")
    reads_agree(partition)
    for step in range(1, 4):
        at = START + timedelta(seconds=10 * step)
        with time_machine.travel(at, tick=False):
            call_command(
                "simulate_cluster", "--churn", "--max-steps", "1", "--interval", "0",
                stdout=io.StringIO(),
            )  # fmt: skip
        reads_agree(partition)


def test_random_ingests_keep_the_summaries() -> None:
    """Rounds of random pushes: new tasks of random sizes and resource names (some zero), tasks
    resized, moved, turned preempting, running again or released, and removed."""
    make_partition("random")
    partition = Partition.objects.get(name="random")
    rng = random.Random(14)
    names = ["memory", "vcore", "pods", "nvidia.com/gpu"]
    known: list[str] = [f"{leaf}{n}" for leaf in "ab" for n in range(1, 9)]
    fresh_ids = iter(range(10**6))
    for _ in range(12):
        items = {}
        for _ in range(rng.randint(1, 12)):
            fresh = rng.random() < 0.4
            id_ = f"r{next(fresh_ids)}" if fresh else rng.choice(known)
            if id_ in items:
                continue
            item = task(id_, f"root.team.{rng.choice('ab')}", 1, 1)
            item["resources"] = {
                name: rng.choice([0, 1, 7, 2**40]) for name in rng.sample(names, rng.randint(0, 3))
            }
            if not fresh and rng.random() < 0.5:
                item["state"] = rng.choice(["running", "preempting", "released"])
            items[id_] = item
        known.extend(id_ for id_ in items if id_ not in known)
        gone = rng.sample(known, min(len(known), rng.randint(0, 3)))
        items = [item for id_, item in items.items() if id_ not in gone]
        known = [id_ for id_ in known if id_ not in gone]
        ingest_cluster_state(
            partition, {"allocations": items, "remove": {"allocations": gone}}, actor=None
        )
        reads_agree(partition)
        # Now and then the whole state again, as an agent that re-listed the cluster: a random
        # part of what is stored, the rest removed.
        if rng.random() < 0.4:
            listed = [item for item in stored_items(partition) if rng.random() < 0.8]
            ingest_cluster_state(
                partition, {"nodes": NODES, "allocations": listed, "replace": True}, actor=None
            )
            known = [item["id"] for item in listed]
            reads_agree(partition)


def test_writers_of_the_same_queues_released_together_never_deadlock_nor_lose_a_change() -> None:
    """Each trial releases four writers at once: two change a task of team.a and one of team.b
    in opposite orders, in two statements 50 ms apart (had each statement locked the summary
    rows it changed, each would hold one queue's rows and wait for the other's: a deadlock);
    a third flips tasks of both queues between running and preempting in one statement, the
    fourth pushes state for both queues through the ingest. After each trial the summaries
    equal the sums over the tasks."""
    make_partition("race")
    partition = Partition.objects.get(name="race")

    def two_statements(first: str, second: str, size: int) -> None:
        with transaction.atomic():
            Allocation.objects.filter(partition=partition, external_id=first).update(
                resources={"memory": size, "vcore": size}
            )
            time.sleep(0.05)
            Allocation.objects.filter(partition=partition, external_id=second).update(
                resources={"memory": size * 2}
            )

    def flip(trial: int) -> None:
        state = AllocationState.PREEMPTING if trial % 2 else AllocationState.RUNNING
        Allocation.objects.filter(partition=partition, external_id__in=["a5", "b5"]).update(
            state=state
        )

    def push(trial: int) -> None:
        ingest_cluster_state(
            partition,
            {
                "allocations": [
                    task("a7", "root.team.a", trial + 1, 7),
                    task(f"b-new{trial}", "root.team.b", 2, 9),
                ],
                "remove": {"allocations": [f"b-new{trial - 1}"]},
            },
            actor=None,
        )

    for trial in range(TRIALS):
        release_together_or_raise(
            lambda trial=trial: two_statements("a1", "b1", trial + 1),
            lambda trial=trial: two_statements("b2", "a2", trial + 3),
            lambda trial=trial: flip(trial),
            lambda trial=trial: push(trial),
        )
        agrees(partition)
    reads_agree(partition)


@pytest.mark.django_db
def test_a_read_inside_the_writing_transaction_sees_its_writes() -> None:
    """Deltas are applied at commit; a read in the transaction applies its own first, and a
    savepoint rolled back takes its deltas with it."""
    make_partition("inside")
    partition = Partition.objects.get(name="inside")
    with transaction.atomic():
        Allocation.objects.filter(partition=partition, external_id="a1").update(
            resources={"memory": 1, "gpu": 2}
        )
        try:
            with transaction.atomic():
                Allocation.objects.filter(partition=partition, queue_path="root.team.b").delete()
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        reads_agree(partition)
        assert configured_total(partition, ["root.team.a"])["gpu"] == 2
        Allocation.objects.filter(partition=partition, external_id="a2").update(
            state=AllocationState.RELEASED
        )
        reads_agree(partition)


def test_rebuild_usage_summary_finds_and_repairs_a_damaged_summary() -> None:
    make_partition("damaged")
    partition = Partition.objects.get(name="damaged")
    call_command("rebuild_usage_summary", "--check", stdout=io.StringIO())
    # Written behind the triggers' back (no trigger on the summaries themselves).
    QueueUsage.objects.filter(queue_path="root.team.a").update(amount=1)
    QueueUsagePath.objects.filter(queue_path="root.team.b").delete()
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 summary row"):
        call_command("rebuild_usage_summary", "--check", stdout=out)
    assert "damaged root.team.a running memory: summary 1, tasks " in out.getvalue()

    with pytest.raises(CommandError, match="no partition 'nope'"):
        call_command("rebuild_usage_summary", "--partition", "nope", stdout=io.StringIO())
    out = io.StringIO()
    call_command("rebuild_usage_summary", "--partition", "damaged", stdout=out)
    assert "rebuilt for partition damaged: 2 rows" in out.getvalue()
    agrees(partition)
    call_command("rebuild_usage_summary", stdout=io.StringIO())
    reads_agree(partition)


def test_usage_beyond_64_bits_is_summed_exactly() -> None:
    """Each task may hold up to ``MAX_QUANTITY`` of a resource; a queue's sum of several is
    wider than ``bigint`` and is still read exactly, running and preempting tasks together."""
    make_partition("wide")
    partition = Partition.objects.get(name="wide")
    tasks = Allocation.objects.filter(partition=partition, queue_path="root.team.a")
    assert tasks.count() >= 2
    tasks.update(resources={"memory": MAX_QUANTITY})
    tasks.filter(pk=tasks.order_by("pk").values_list("pk")[0][0]).update(
        state=AllocationState.PREEMPTING
    )
    reads_agree(partition)
    [own] = [row for row in leaf_usage(partition) if row.queue == "root.team.a"]
    assert own.resources["memory"] == tasks.count() * MAX_QUANTITY > 2**63
