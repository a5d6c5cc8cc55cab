"""The cluster simulator and ``manage.py simulate_cluster`` on PostgreSQL, with the demo partition
of ``demo/queues.yaml``: the built cluster is physically possible and varied, the same seed builds
the same cluster, churn keeps it moving and acknowledges the product's evictions, and the command
validates its arguments and stops cleanly. Time is moved with time-machine."""

from __future__ import annotations

import io
import random
import signal
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError

from preemption import resources
from preemption.hierarchy import Hierarchy
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, DisruptionBudget, Node
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.demo_cluster.build import initial_cluster
from scheduler_admin.demo_cluster.churn import churn_step
from scheduler_admin.demo_cluster.snapshot import Task, read_snapshot
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus, RunStatus
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from tests.support.processes import PROJECT_DIR, ManagedProcess, test_database_env

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DEMO = str(PROJECT_DIR / "demo" / "queues.yaml")
GPU = "nvidia.com/gpu"


@pytest.fixture
def demo(db) -> Partition:
    with time_machine.travel(START, tick=False):
        call_command("import_config", DEMO, stdout=io.StringIO())
    return Partition.objects.get(name="default")


def simulate(*args: str, at: datetime = START) -> str:
    out = io.StringIO()
    with time_machine.travel(at, tick=False):
        call_command("simulate_cluster", *args, stdout=out, stderr=out)
    return out.getvalue()


def live_allocations(partition: Partition) -> list[Allocation]:
    return list(Allocation.objects.filter(partition=partition).exclude(state="released"))


def test_the_built_cluster_fits_its_nodes_and_queues(demo):
    output = simulate("--nodes", "60", "--tasks", "3000")
    assert "Cluster of 'default' built (seed 1)" in output

    allocations = live_allocations(demo)
    capacity = dict(Node.objects.filter(partition=demo).values_list("name", "capacity"))
    assert len(capacity) == 60
    on_node: dict[str, dict[str, int]] = defaultdict(dict)
    for allocation in allocations:
        assert allocation.node_name in capacity
        on_node[allocation.node_name] = resources.add(
            on_node[allocation.node_name], allocation.resources
        )
    for node, used in on_node.items():
        assert set(used) <= set(capacity[node]), node
        assert resources.fits(used, within=capacity[node]), (node, used, capacity[node])

    hierarchy = Hierarchy(demo.current_config())
    usage = hierarchy.usage_by_queue(
        Task(id=a.external_id, app="", queue=a.queue_path, user="", node="",
                       resources=a.resources)
        for a in allocations
    )  # fmt: skip
    for path, used in usage.items():
        assert resources.fits(used, within=hierarchy.queues[path].max), (path, used)
    ordinary = [a for a in allocations if not a.required_node]
    assert len(ordinary) == 3000  # the demo's quotas and 60 nodes have room for every task


def test_the_built_cluster_has_the_variety_the_dashboard_shows(demo):
    simulate("--nodes", "40", "--tasks", "2000")
    allocations = live_allocations(demo)
    nodes = dict(Node.objects.filter(partition=demo).values_list("name", "capacity"))
    ordinary = [a for a in allocations if not a.required_node]

    tenants = {a.queue_path.split(".")[1] for a in allocations}
    assert tenants == {"prod", "research", "batch"}  # root.prod is the fenced tenant
    assert {a.queue_path for a in allocations} == {
        "root.prod.web", "root.prod.api", "root.research.vision", "root.research.nlp",
        "root.batch.nightly", "root.batch.adhoc",
    }  # fmt: skip

    daemonset = [a for a in allocations if a.required_node]
    assert len(daemonset) == 2 * len(nodes)  # two DaemonSets, one pod per node
    assert all(a.required_node == a.node_name for a in daemonset)
    assert {a.queue_path for a in daemonset} == {"root.batch.nightly"}  # no system leaf in demo

    originators = [a for a in ordinary if a.originator]
    assert 0.02 * len(ordinary) <= len(originators) <= 0.10 * len(ordinary)
    per_app = defaultdict(int)
    for allocation in originators:
        per_app[allocation.application_id] += 1
    assert set(per_app.values()) == {1}  # one driver per application
    opted_out = [a for a in ordinary if not a.allow_preemption]
    assert 0.02 * len(ordinary) <= len(opted_out) <= 0.10 * len(ordinary)

    priorities = {a.priority for a in ordinary}
    assert {0, 100, 1000} <= priorities and all(0 <= p <= 1000 for p in priorities)
    assert any(p not in {0, 100, 1000} for p in priorities)

    gpu_tasks = [a for a in allocations if a.resources.get(GPU)]
    assert gpu_tasks and {a.queue_path.rsplit(".", 1)[0] for a in gpu_tasks} == {"root.research"}
    assert all(nodes[a.node_name].get(GPU) for a in gpu_tasks)
    assert any(a.job for a in gpu_tasks)  # multi-worker training runs are gangs

    budgets = dict(DisruptionBudget.objects.filter(partition=demo).values_list("name", "pk"))
    assert len(budgets) == 2
    assert {a.pdb for a in ordinary if a.pdb} == set(budgets)

    asks = list(Ask.objects.filter(partition=demo))
    assert asks and all(a.state == "pending" for a in asks)
    assert any(a.job for a in asks) and any(a.priority == 1000 for a in asks)

    assert all(START - timedelta(hours=14) <= a.created_at <= START for a in allocations)
    assert max(START - a.created_at for a in ordinary) > timedelta(hours=6)

    usage = Hierarchy(demo.current_config()).usage_by_queue(
        Task(id="", app="", queue=a.queue_path, user="", node="", resources=a.resources)
        for a in allocations
    )
    guaranteed = Queue.objects.get(path="root.prod.web").guaranteed
    assert not resources.fits(usage["root.prod.web"], within=guaranteed)  # above its guarantee
    assert resources.fits(
        usage["root.prod.api"], within=Queue.objects.get(path="root.prod.api").guaranteed
    )  # below it


def test_the_same_seed_builds_the_same_cluster(demo):
    config = demo.current_config()
    first = initial_cluster(config, nodes=30, tasks=800, seed=7, now=START)
    again = initial_cluster(config, nodes=30, tasks=800, seed=7, now=START)
    other = initial_cluster(config, nodes=30, tasks=800, seed=8, now=START)
    assert first == again
    assert first != other
    later = initial_cluster(config, nodes=30, tasks=800, seed=7, now=START + timedelta(1))
    assert not {a["id"] for a in first["allocations"]} & {a["id"] for a in later["allocations"]}


def test_a_churn_step_is_deterministic_and_keeps_within_capacity(demo):
    simulate("--nodes", "20", "--tasks", "600")
    snapshot = read_snapshot(demo)
    now = START + timedelta(minutes=1)
    body = churn_step(snapshot, now=now, rng=random.Random(3))
    assert body == churn_step(snapshot, now=now, rng=random.Random(3))
    assert body["allocations"] and body["remove"]["allocations"]
    ingest_cluster_state(demo, body, actor=None)
    capacity = dict(Node.objects.filter(partition=demo).values_list("name", "capacity"))
    on_node: dict[str, dict[str, int]] = defaultdict(dict)
    for allocation in live_allocations(demo):
        on_node[allocation.node_name] = resources.add(
            on_node[allocation.node_name], allocation.resources
        )
    assert all(resources.fits(used, within=capacity[node]) for node, used in on_node.items())


def lower_nightly_memory() -> None:
    """Half nightly's memory usage as its new max: quota enforcement (batch's delay is 60 s)."""
    used = sum(
        a.resources.get("memory", 0)
        for a in Allocation.objects.filter(queue_path="root.batch.nightly", state="running")
    )
    queue = Queue.objects.get(path="root.batch.nightly")
    config_services.update_queue(
        "default", queue.path, version=queue.version, actor=None, comment="shrink nightly",
        max={**queue.max, "memory": used // 2},
    )  # fmt: skip


def test_churn_adds_and_finishes_tasks_and_acknowledges_the_products_evictions(demo):
    simulate("--nodes", "20", "--tasks", "600")
    with time_machine.travel(START + timedelta(seconds=10), tick=False):
        lower_nightly_memory()
    [run_id] = runs.sweep_due_quota_timers(START + timedelta(seconds=70))
    with time_machine.travel(START + timedelta(seconds=71), tick=False):
        run = runs.execute_run(run_id, worker="t")
    assert run is not None and run.status == RunStatus.FINISHED
    victims = set(EvictionOrder.objects.values_list("allocation_id", flat=True))
    assert victims and EvictionOrder.objects.filter(status=EvictionStatus.PENDING).count() == len(
        victims
    )
    before = set(Allocation.objects.values_list("external_id", flat=True))

    output = simulate(
        "--churn", "--max-steps", "1", "--interval", "0", at=START + timedelta(seconds=80)
    )

    assert "step 1:" in output and f"{len(victims)} evictions acknowledged" in output
    orders = EvictionOrder.objects.all()
    assert all(o.status == EvictionStatus.ACKNOWLEDGED for o in orders)
    assert all(o.acknowledged_by == "system (simulator)" for o in orders)
    assert set(
        Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
    ) == {AllocationState.RELEASED}
    after = set(Allocation.objects.values_list("external_id", flat=True))
    assert after - before, "no task was added"
    assert before - after, "no task finished"

    # The next step removes the evicted pods (the cluster deleted them); they come back as
    # pending asks of their queue.
    simulate("--churn", "--max-steps", "1", "--interval", "0", at=START + timedelta(seconds=90))
    assert not Allocation.objects.filter(external_id__in=victims).exists()
    requeued = Ask.objects.filter(created_at=START + timedelta(seconds=90), job="")
    assert requeued.filter(queue_path="root.batch.nightly").count() >= min(len(victims), 10)


def test_the_build_is_audited_but_churn_steps_are_not(demo):
    """The simulator stands in for the cluster: its steps would bury the audit log."""
    ingested = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED)
    simulate("--nodes", "20", "--tasks", "300")
    assert ingested.count() == 1
    before = set(Allocation.objects.values_list("external_id", flat=True))
    simulate("--churn", "--max-steps", "3", "--interval", "0")
    assert set(Allocation.objects.values_list("external_id", flat=True)) != before  # it moved
    assert ingested.count() == 1


def test_churn_schedules_an_ask_on_the_node_the_product_reserved(demo):
    simulate("--nodes", "20", "--tasks", "200")
    node = Node.objects.filter(partition=demo, name__startswith="cpu-").first()
    ingest_cluster_state(
        demo,
        {"asks": [{"id": "reserved-ask", "queue": "root.prod.api", "node": node.name,
                   "resources": {"vcore": "100m", "memory": "128Mi"}, "state": "reserved"}]},
        actor=None,
    )  # fmt: skip
    simulate("--churn", "--max-steps", "1", "--interval", "0")
    assert not Ask.objects.filter(external_id="reserved-ask").exists()
    assert Allocation.objects.get(external_id="reserved-ask").node_name == node.name


def test_an_existing_cluster_is_kept_unless_reset(demo):
    simulate("--nodes", "20", "--tasks", "100")
    ids = set(Allocation.objects.values_list("external_id", flat=True))
    output = simulate("--nodes", "30", "--tasks", "100", at=START + timedelta(hours=1))
    assert "already has cluster state; kept it" in output
    assert set(Allocation.objects.values_list("external_id", flat=True)) == ids

    output = simulate("--nodes", "30", "--tasks", "100", "--reset", at=START + timedelta(hours=1))
    assert "rebuilt" in output
    assert Node.objects.filter(partition=demo).count() == 30
    assert not ids & set(Allocation.objects.values_list("external_id", flat=True))


def test_an_empty_cluster_has_nodes_and_daemonsets_and_churn_fills_it(demo):
    simulate("--nodes", "20", "--tasks", "0")
    assert Allocation.objects.exclude(required_node="").count() == 40
    assert not Allocation.objects.filter(required_node="").exists()
    simulate("--churn", "--max-steps", "2", "--interval", "0")
    assert Allocation.objects.filter(required_node="").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "19"], "--nodes must be between 20 and 200 (got 19)"),
        (["--nodes", "201"], "--nodes must be between 20 and 200 (got 201)"),
        (["--tasks", "-1"], "--tasks must be 0 or more (got -1)"),
        (["--churn", "--interval", "-1"], "--interval must be 0 or more seconds"),
        (["--churn", "--max-steps", "0"], "--max-steps must be at least 1"),
        (["--partition", "nope"], "--partition: no partition 'nope'"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(demo, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        simulate(*args)
    assert not Node.objects.exists()


def test_max_steps_ends_the_churn_loop(demo):
    output = simulate("--nodes", "20", "--tasks", "300", "--churn", "--max-steps", "2",
                      "--interval", "0", "--verbosity", "2")  # fmt: skip
    assert "step 1:" in output and "step 2:" in output and "step 3:" not in output
    assert "Churn reached --max-steps after 2 step(s)." in output


def test_routine_steps_are_printed_only_at_verbosity_2(demo):
    """``make run`` runs the churn for hours: a step without evictions is not worth a line."""
    simulate("--nodes", "20", "--tasks", "300")
    quiet = simulate("--churn", "--max-steps", "3", "--interval", "0")
    assert "Steps with evictions are printed." in quiet
    assert " step " not in quiet
    assert "Churn reached --max-steps after 3 step(s)." in quiet
    loud = simulate("--churn", "--max-steps", "3", "--interval", "0", "--verbosity", "2")
    assert "step 1:" in loud and "step 3:" in loud


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_churn_loop_cleanly(transactional_db, tmp_path, signum):
    call_command("import_config", DEMO, stdout=io.StringIO())
    command = [
        sys.executable, "manage.py", "simulate_cluster",
        "--nodes", "20", "--tasks", "200", "--churn", "--interval", "0.2", "--verbosity", "2",
    ]  # fmt: skip
    with ManagedProcess("simulator", command, env=test_database_env(), log_dir=tmp_path) as sim:
        deadline = time.monotonic() + 60
        while "step 2:" not in sim.log_path.read_text() and time.monotonic() < deadline:
            assert sim.returncode is None, sim.log_path.read_text()
            time.sleep(0.1)
        sim.process.send_signal(signum)
        assert sim.wait_stopped() == 0
        log = sim.log_path.read_text()
    assert not sim.killed
    assert "Churn stopped by signal after" in log
    assert "Traceback" not in log
