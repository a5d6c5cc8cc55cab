"""The cluster agent end to end: a Kubernetes API (``FakeKubeAPI``, the real wire format), the
agent as its own process (the console script, the real ``kubernetes`` client, a kubeconfig), and
the product's real web (gunicorn), worker and beat on PostgreSQL and Redis.

Nothing here is mocked: the agent reaches the product only over HTTP with an operator token,
the product decides and orders evictions as in production, and the test watches both sides
until the expected state appears (or the wait times out, with every process's log in the
message). Each test names the claim of docs/reference/cluster-agent.md it shows.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from scheduler_admin.accounts.services import create_user, issue_token
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.adapters import queue_usage
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Ask,
    DisruptionBudget,
    DynamicQueue,
    Node,
    ReplacementPage,
)
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    EvictionStatus,
    PreemptionRun,
    RunStatus,
    RunVictim,
)
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.integration.test_live_loop import LiveLoop
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI
from tests.support.processes import (
    ManagedProcess,
    flush_redis_db,
    free_port,
    isolated_redis_url,
    venv_executable,
    wait_until,
)

pytestmark = pytest.mark.redis

#: Redis database of these tests (the live-loop tests use 13, the compose test 14).
AGENT_REDIS_DB = 11
PARTITION = "kind"
#: The agent's push interval in these tests.
INTERVAL = 1.0
#: What a quota run and the evictions that follow may take on a loaded 2-core machine: the
#: timer's delay, a 5 s sweep, the run, the agent's turn, the pods' grace, the next push.
RUN_WAIT = 90

QUEUES = """
partitions:
  - name: kind
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: sandbox
            resources: {max: {memory: 10Ti}}
            properties: {quota.preemption.delay: 1s}
          - name: prod
            queues:
              - name: web
              - name: api
          - name: research
            queues:
              - name: vision
              - name: nlp
          - name: batch
            queues:
              - name: nightly
              - name: adhoc
"""


class Stack:
    """The product (web, worker, beat), one fake cluster and the agents of one test."""

    def __init__(self, tmp_path: Path, redis_url: str) -> None:
        self.tmp_path = tmp_path
        self.loop = LiveLoop(redis_url, tmp_path)
        self.port = free_port()
        self.kube = FakeKubeAPI(grace_seconds=0.3)
        self.kubeconfig = tmp_path / "kubeconfig"
        self.token_file = tmp_path / "token"
        self.agents: list[ManagedProcess] = []
        self.token = ""

    def start(self) -> None:
        self.kube.start()
        self.kube.write_kubeconfig(self.kubeconfig, context="kind-e2e")
        # The three start at once (each spends its first seconds importing) and are then waited
        # for: a few seconds less per test than starting them one after another.
        worker = self.loop.worker("worker", wait=False)
        beat = self.loop.beat(wait=False)
        web = [
            venv_executable("gunicorn"), "scheduler_admin.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", "2", "--timeout", "120",
        ]  # fmt: skip
        process = self.loop._start("web", web, {"XDG_RUNTIME_DIR": str(self.tmp_path)})
        self.loop.wait_started(worker)
        self.loop.wait_started(beat)
        wait_until(lambda: _answers(self.port), 30, message="web never answered", watch=[process])
        user = create_user("cluster-agent", role="operator", actor=None).user
        self.token = issue_token(user, actor=None)
        self.token_file.write_text(self.token + "\n")

    @property
    def processes(self) -> list[ManagedProcess]:
        return [*self.loop.processes, *self.agents]

    def agent(self, *extra: str, name: str | None = None) -> ManagedProcess:
        """Start an agent (the console script) against the product and the fake cluster."""
        args = [
            venv_executable("scheduler-admin-agent"),
            "--api", f"http://127.0.0.1:{self.port}",
            "--token-file", str(self.token_file),
            "--partition", PARTITION,
            "--kubeconfig", str(self.kubeconfig),
            "--interval", str(INTERVAL),
            "--agent-name", "e2e-agent",
            *extra,
        ]  # fmt: skip
        process = ManagedProcess(
            name or f"agent-{len(self.agents) + 1}",
            args,
            env=self.loop.env({"AGENT_LOG_LEVEL": "INFO"}),
            log_dir=self.tmp_path / "logs",
        )
        self.agents.append(process)
        return process.start()

    def wait(self, predicate: Any, message: str, timeout: float = 60) -> None:
        running = [process for process in self.processes if process.returncode is None]
        wait_until(predicate, timeout, interval=0.25, message=message, watch=running)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/v1/{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                text = response.read().decode()
                return response.status, _maybe_json(text), dict(response.headers)
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, _maybe_json(text), dict(error.headers)

    def close(self) -> None:
        try:
            for agent in self.agents:
                agent.stop()
            self.loop.close()
        finally:
            self.kube.stop()


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _get_json(port: int, path: str) -> tuple[int, str]:
    """Status and ``status`` field of a JSON answer on loopback (errors included)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, json.load(response)["status"]
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)["status"]
    except OSError:
        return 0, "unreachable"


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture
def stack(transactional_db: None, tmp_path: Path) -> Iterator[Stack]:
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    url = isolated_redis_url(settings.REDIS_URL, AGENT_REDIS_DB)
    flush_redis_db(url)
    [config] = parse_queues_yaml(QUEUES, settings_for=config_services.settings_for_import)
    config_services.save_partition_config(config, actor=None, comment="the cluster's queues")
    stack = Stack(tmp_path, url)
    try:
        stack.start()
        yield stack
    finally:
        stack.close()


# --- Expectations read from the fixtures themselves (not through the agent's code) ---------------


def task_id(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['name']}@{meta['uid']}"


def yunikorn_pods(kube: FakeKubeAPI) -> list[dict[str, Any]]:
    return [
        pod
        for pod in kube.objects("pods")
        if pod["spec"].get("schedulerName") == "yunikorn"
        and "deletionTimestamp" not in pod["metadata"]
        and pod["status"].get("phase") not in ("Succeeded", "Failed")
    ]


def expected_tasks(kube: FakeKubeAPI) -> tuple[set[str], set[str]]:
    """(allocation ids, ask ids) the product should hold for the cluster as it is now: a
    terminating pod still holds its node (an allocation) until it is gone."""
    pods = [
        pod
        for pod in kube.objects("pods")
        if pod["spec"].get("schedulerName") == "yunikorn"
        and pod["status"].get("phase") not in ("Succeeded", "Failed")
    ]
    bound = {task_id(pod) for pod in pods if pod["spec"].get("nodeName")}
    pending = {
        task_id(pod)
        for pod in pods
        if not pod["spec"].get("nodeName") and "deletionTimestamp" not in pod["metadata"]
    }
    return bound, pending


def product_tasks() -> tuple[set[str], set[str]]:
    partition = Partition.objects.get(name=PARTITION)
    allocations = set(
        Allocation.objects.filter(partition=partition)
        .exclude(state=AllocationState.RELEASED)
        .values_list("external_id", flat=True)
    )
    return allocations, set(
        Ask.objects.filter(partition=partition).values_list("external_id", flat=True)
    )


def converged(kube: FakeKubeAPI) -> bool:
    return product_tasks() == expected_tasks(kube)


def product_resources(pod: dict[str, Any]) -> dict[str, int]:
    """The pod's effective request (the fixture module's own computation) in product units."""
    amounts = {}
    for name, value in fixtures.pod_request(pod).items():
        amount = value * 1000 if name == "cpu" else value
        whole = int(-(-amount // 1))  # rounded up
        if whole:
            amounts["vcore" if name == "cpu" else name] = whole
    return amounts


# --- State in -------------------------------------------------------------------------------------


def test_a_cluster_of_50_nodes_and_2000_pods_appears_in_one_push(stack: Stack) -> None:
    """Slow (about 30 s): 2,000 pods created in the stand-in, listed by the real agent and pushed
    to the product."""
    cluster = fixtures.cluster(nodes=50, pods=2000)
    stack.kube.load(cluster)
    summary = cluster["summary"]
    health = free_port()
    stack.agent("--health-listen", f"127.0.0.1:{health}")
    stack.wait(lambda: converged(stack.kube), "the product never held the cluster's tasks", 90)
    # Its probes: alive, and ready once listed and heard by the product.
    assert _get_json(health, "/healthz") == (200, "alive")
    stack.wait(lambda: _get_json(health, "/readyz") == (200, "ready"), "the agent never got ready")

    # One push carried all of it: a single state.ingested event with every item.
    [ingest] = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED)
    changed = ingest.data["changed"]
    assert changed["nodes"]["created"] == summary["nodes"] == 50
    # Bound pods, the terminating ones included (they hold their node until they are gone).
    assert changed["allocations"]["created"] == summary["bound"]
    assert changed["asks"]["created"] == summary["asks"]
    assert changed["budgets"]["created"] == summary["pdbs"] == 4

    partition = Partition.objects.get(name=PARTITION)
    nodes = {node.name: node for node in Node.objects.filter(partition=partition)}
    assert sum(node.schedulable for node in nodes.values()) == summary["schedulable_nodes"]
    assert not nodes["worker-001"].schedulable and not nodes["worker-002"].schedulable
    allocations = {a.external_id: a for a in Allocation.objects.filter(partition=partition)}
    pods = {task_id(pod): pod for pod in yunikorn_pods(stack.kube)}

    # Queues: where YuniKorn's placement puts them. The partition has no placement rules (an
    # implicit provided rule): a label that does not start with "root." in lower case names one
    # queue under root (ROOT.Batch.Adhoc is root.ROOT_dot_Batch_dot_Adhoc), which does not
    # exist, so those pods go to root.default like the pods that name none; every task of an
    # application sits in its application's queue.
    used = Counter(a.queue_path for a in allocations.values())
    assert used["root.batch.adhoc"] == 0  # only the label ROOT.Batch.Adhoc names it
    adhoc_label = [
        tid for tid, pod in pods.items()
        if pod["metadata"].get("labels", {}).get("queue") == "ROOT.Batch.Adhoc"
    ]  # fmt: skip
    adhoc_queues = {allocations[tid].queue_path for tid in adhoc_label if tid in allocations}
    assert adhoc_queues == {"root.default"}
    assert {a.queue_path for a in allocations.values()} <= {
        "root.default", "root.sandbox", "root.prod.web", "root.prod.api",
        "root.research.vision", "root.research.nlp", "root.batch.nightly", "root.batch.adhoc",
    }  # fmt: skip
    by_app: dict[str, set[str]] = {}
    for allocation in allocations.values():
        by_app.setdefault(allocation.application.external_id, set()).add(allocation.queue_path)
    assert all(len(queues) == 1 for queues in by_app.values())

    # Applications: Spark's app selector, app id labels and annotations, YuniKorn's autogen id.
    spark = [pod for pod in pods.values() if pod["metadata"]["namespace"] == "spark"]
    assert (
        len({pod["metadata"]["labels"]["spark-app-selector"] for pod in spark})
        == summary["spark_apps"]
    )
    for pod in spark:
        if task_id(pod) in allocations:
            app = allocations[task_id(pod)].application.external_id
            assert app == pod["metadata"]["labels"]["spark-app-selector"]
    exporters = [
        allocations[tid]
        for tid, pod in pods.items()
        if pod["metadata"]["namespace"] == "monitoring" and tid in allocations
    ]
    assert len(exporters) == summary["daemonset_pods"] == 50
    assert {a.application.external_id for a in exporters} == {"yunikorn-monitoring-autogen"}

    # Originators: every bound Spark driver, no executor.
    for pod in spark:
        tid = task_id(pod)
        if tid in allocations:
            role = pod["metadata"]["labels"].get("spark-role")
            assert allocations[tid].originator is (role == "driver"), tid

    # DaemonSet pods: pinned to their node.
    for allocation in exporters:
        assert allocation.required_node == allocation.node_name

    # Budgets and the pods they cover.
    budgets = dict(
        DisruptionBudget.objects.filter(partition=partition).values_list(
            "name", "allowed_disruptions"
        )
    )
    assert budgets["prod/payments-api"] == 0
    payments = [
        allocations[tid]
        for tid, pod in pods.items()
        if pod["metadata"]["name"].startswith("payments-api") and tid in allocations
    ]
    assert payments and {a.pdb for a in payments} == {"prod/payments-api"}
    assert {a.allow_preemption for a in payments} == {False}

    # Resources: the effective request, as the fixture module computes it independently.
    for tid in [tid for tid in allocations if tid in pods][:300]:  # terminating ones aside
        assert allocations[tid].resources == product_resources(pods[tid]), tid

    # Gangs: pending pods of a task-group application form one job per application.
    gang_asks = Ask.objects.filter(partition=partition).exclude(job="")
    assert gang_asks.exists()
    assert all(ask.job == ask.application.external_id for ask in gang_asks)

    # The agent reported in.
    stack.wait(
        lambda: ClusterAgent.objects.filter(name="e2e-agent", last_push_at__isnull=False).exists(),
        "no heartbeat with a push",
    )
    agent = ClusterAgent.objects.get(name="e2e-agent")
    assert agent.cluster == "kind-e2e"
    assert agent.counts["allocations"] == summary["bound"]


def test_a_cluster_larger_than_a_page_is_replaced_in_pages_then_kept_by_deltas(
    stack: Stack,
) -> None:
    """At 400 items a page, 50 nodes and 2,000 pods go as several pages of one replacement
    (applied once, on its last page); later changes go as deltas, not as a new replacement."""
    cluster = fixtures.cluster(nodes=50, pods=2000)
    stack.kube.load(cluster)
    agent = stack.agent("--page-items", "400")
    stack.wait(lambda: converged(stack.kube), "the paged replacement never arrived", 120)
    assert re.search(r"replaced the partition's state: \d+ items in [2-9]\d* pages of up to 400",
                     agent.log_text())  # fmt: skip
    [ingest] = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED)
    assert ingest.data["replace"] is True
    assert ingest.data["changed"]["allocations"]["created"] == cluster["summary"]["bound"]
    assert not ReplacementPage.objects.exists()  # the kept pages went with the last one
    bound = [pod for pod in yunikorn_pods(stack.kube) if pod["spec"].get("nodeName")]
    for pod in bound[:5]:
        stack.kube.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
    stack.wait(lambda: converged(stack.kube), "the deletions were never pushed")
    latest = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).latest("id")
    assert not latest.data.get("replace")  # a delta, translated from the watch events


# --- Evictions out --------------------------------------------------------------------------------

GB = 2**30


def sandbox_pods(count: int, app: str, *, labels: dict[str, str] | None = None) -> list[dict]:
    """``count`` pods of 4Gi in root.sandbox, spread over n1..n3, created a minute apart."""
    return [
        fixtures.pod(
            "sandbox",
            f"{app}-{i}",
            node=f"n{i % 3 + 1}",
            containers=[{"requests": {"cpu": "500m", "memory": "4Gi"}}],
            labels={"queue": "root.sandbox", "applicationId": app, **(labels or {})},
            created=f"2026-01-01T10:{i:02d}:00Z",
        )
        for i in range(count)
    ]


def small_cluster(pods: Sequence[dict], *extra: dict) -> list[dict]:
    nodes = [fixtures.node(f"n{i}", cpu="16", memory="64Gi") for i in (1, 2, 3)]
    return [*nodes, *pods, *extra]


def lower_sandbox_max(stack: Stack, memory: str) -> None:
    status, queue, _ = stack.api("GET", f"partitions/{PARTITION}/queues/root.sandbox/")
    assert status == 200, queue
    status, answer, _ = stack.api(
        "PATCH",
        f"partitions/{PARTITION}/queues/root.sandbox/",
        {"max": {"memory": memory}, "version": queue["version"], "comment": "quota cut"},
    )
    assert status == 200, answer


def finished_run(stack: Stack) -> PreemptionRun:
    stack.wait(
        lambda: PreemptionRun.objects.filter(
            queue_path="root.sandbox", status=RunStatus.FINISHED
        ).exists(),
        "no finished quota run on root.sandbox",
        RUN_WAIT,
    )
    return PreemptionRun.objects.get(queue_path="root.sandbox", status=RunStatus.FINISHED)


def victim_pods(run: PreemptionRun) -> set[tuple[str, str]]:
    ids = RunVictim.objects.filter(run=run).values_list("allocation_id", flat=True)
    return {tuple(task.split("@")[0].split("/", 1)) for task in ids}


def sandbox_usage() -> int:
    partition = Partition.objects.get(name=PARTITION)
    return sum(
        a.resources.get("memory", 0)
        for a in Allocation.objects.filter(
            partition=partition, queue_path="root.sandbox", state=AllocationState.RUNNING
        )
    )


def all_acknowledged(run: PreemptionRun) -> bool:
    orders = EvictionOrder.objects.filter(run=run)
    return orders.exists() and not orders.exclude(status=EvictionStatus.ACKNOWLEDGED).exists()


def test_a_lowered_quota_evicts_exactly_the_runs_victims_then_usage_fits(stack: Stack) -> None:
    """Slow (about 30 s): the whole loop with real processes: a lowered quota's delay, beat's
    sweep, the run, the agent's evictions and its next push."""
    stack.kube.load(small_cluster(sandbox_pods(8, "etl")))  # 32Gi in root.sandbox
    stack.agent()
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")
    lower_sandbox_max(stack, "12Gi")
    run = finished_run(stack)
    victims = victim_pods(run)
    assert len(victims) == 5  # 32Gi down to 12Gi: five 4Gi tasks, newest first
    stack.wait(lambda: all_acknowledged(run), "the run's orders were never acknowledged", RUN_WAIT)

    evicted = stack.kube.evictions()
    assert Counter(evicted) == Counter(victims)  # exactly the victims, each once
    assert set(EvictionOrder.objects.filter(run=run).values_list("outcome", flat=True)) == {
        "evicted"
    }
    # The pods went away in the cluster; the next pushes remove them and usage fits the max.
    stack.wait(lambda: converged(stack.kube), "the evicted pods never left the product")
    assert sandbox_usage() <= 12 * GB
    assert len(product_tasks()[0]) == 3


def test_a_budget_that_refuses_delays_an_eviction_without_losing_it(stack: Stack) -> None:
    """Slow (about 30 s): the real agent, product, worker and beat; the refused eviction is retried
    after the agent's back-off."""
    pods = sandbox_pods(6, "web", labels={"app": "web"})
    budget = fixtures.pdb("sandbox", "web", match_labels={"app": "web"}, disruptions_allowed=0)
    stack.kube.load(small_cluster(pods, budget))
    stack.agent()
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")
    lower_sandbox_max(stack, "8Gi")  # 24Gi -> 8Gi: four victims, all covered by the budget
    run = finished_run(stack)
    victims = sorted(victim_pods(run))
    assert len(victims) == 4

    # 429: each order is reported blocked with the API server's words, and stays pending.
    def blocked() -> bool:
        orders = EvictionOrder.objects.filter(run=run)
        return orders.count() == 4 and all(o.cluster_status == "blocked" for o in orders)

    stack.wait(blocked, "the refusals were never reported on the orders")
    for order in EvictionOrder.objects.filter(run=run):
        assert order.status == EvictionStatus.PENDING
        assert order.cluster_code == 429
        assert "disruption budget" in order.cluster_reason
        assert order.cluster_attempts >= 1
    assert stack.kube.evictions() == []

    # A victim deleted meanwhile (its owner scaled down) is acknowledged as gone.
    gone_ns, gone_name = victims[0]
    stack.kube.delete("pods", gone_name, gone_ns)
    gone_order = EvictionOrder.objects.get(
        run=run, allocation_id__startswith=f"{gone_ns}/{gone_name}@"
    )
    stack.wait(
        lambda: EvictionOrder.objects.get(pk=gone_order.pk).status == EvictionStatus.ACKNOWLEDGED,
        "the deleted victim's order was never acknowledged",
    )
    assert EvictionOrder.objects.get(pk=gone_order.pk).outcome == "gone"

    # The budget allows disruptions again: the agent's next tries evict the others, once each.
    stack.kube.set_pdb_allowed("sandbox", "web", 10)
    stack.wait(lambda: all_acknowledged(run), "the blocked evictions were lost", RUN_WAIT)
    assert Counter(stack.kube.evictions()) == Counter(victims[1:])
    for namespace, name in victims[1:]:
        attempts = stack.kube.eviction_attempts(namespace, name)
        assert attempts[-1] == 201 and set(attempts[:-1]) == {429}, attempts


def test_a_killed_agent_restarts_converges_and_evicts_nothing_twice(stack: Stack) -> None:
    """SIGKILL mid-watch, while evictions are in flight; the cluster changes while no agent
    runs; the restarted agent converges, and every victim is evicted exactly once."""
    pods = sandbox_pods(10, "etl")
    # The three newest pods are covered by a budget that refuses for now: their orders are
    # still pending when the agent dies.
    for pod in pods[7:]:
        pod["metadata"]["labels"]["guarded"] = "yes"
    budget = fixtures.pdb(
        "sandbox", "guard", match_labels={"guarded": "yes"}, disruptions_allowed=0
    )
    stack.kube.load(small_cluster(pods, budget))
    first = stack.agent()
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")
    lower_sandbox_max(stack, "8Gi")  # 40Gi -> 8Gi: eight victims
    run = finished_run(stack)
    victims = victim_pods(run)
    assert len(victims) == 8
    stack.wait(
        lambda: len(stack.kube.evictions()) >= 5,
        "the unguarded victims were never evicted",
        RUN_WAIT,
    )
    first.kill()
    assert first.returncode == -9

    # While no agent runs: a non-victim pod goes, a new pod comes, the budget opens up.
    survivor = next(p for p in pods if ("sandbox", p["metadata"]["name"]) not in victims)
    stack.kube.delete("pods", survivor["metadata"]["name"], "sandbox")
    stack.kube.add(sandbox_pods(11, "late")[10])
    stack.kube.set_pdb_allowed("sandbox", "guard", 10)

    stack.agent(name="agent-restarted")
    stack.wait(lambda: all_acknowledged(run), "orders were lost across the restart", RUN_WAIT)
    stack.wait(lambda: converged(stack.kube), "the restarted agent never converged")
    evictions = Counter(stack.kube.evictions())
    assert set(evictions) == victims
    assert set(evictions.values()) == {1}, evictions  # nothing evicted twice
    assert "sandbox/late-10@" in " ".join(product_tasks()[0])


def test_a_410_gone_relists_and_pushes_the_difference(stack: Stack) -> None:
    """Slow (about 20 s): the real agent against the stand-in and the product; it waits for a re-
    list and the push after it."""
    pods = sandbox_pods(4, "etl")
    stack.kube.load(small_cluster(pods))
    stack.agent()
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")
    stack.kube.wait_for_watches(3)

    def pod_lists() -> int:
        return sum(
            1
            for r in stack.kube.requests
            if r.method == "GET" and r.path == "/api/v1/pods" and "watch" not in r.query
        )

    lists_before = pod_lists()
    # The watches break; while they are down a pod goes and one comes, and the history they
    # would resume from is compacted away: resuming answers 410 Gone.
    stack.kube.end_watches(abrupt=True)
    stack.kube.delete("pods", "etl-0", "sandbox")
    stack.kube.add(sandbox_pods(6, "etl")[5])
    stack.kube.compact()
    stack.wait(lambda: converged(stack.kube), "the difference was never pushed after 410")
    assert pod_lists() > lists_before
    allocations, _ = product_tasks()
    assert not any(task.startswith("sandbox/etl-0@") for task in allocations)


# --- Config out -----------------------------------------------------------------------------------


def newest_revision() -> int:
    return ConfigRevision.objects.filter(partition__name=PARTITION).order_by("-number")[0].number


def published(stack: Stack) -> dict[str, Any]:
    return stack.kube.get("configmaps", "yunikorn-configs", "yunikorn") or {}


def publishes(stack: Stack, revision: int) -> bool:
    configmap = published(stack)
    annotations = configmap.get("metadata", {}).get("annotations") or {}
    return annotations.get("scheduler-admin.io/revision") == str(revision)


def test_saved_revisions_reach_yunikorns_configmap_and_conflicts_are_retried(stack: Stack) -> None:
    configmap = fixtures.configmap(
        "yunikorn",
        "yunikorn-configs",
        {"queues.yaml": "partitions: [{name: default, queues: [{name: root}]}]\n",
         "log.level": "INFO"},
    )  # fmt: skip
    stack.kube.load(small_cluster(sandbox_pods(2, "etl"), configmap))
    stack.agent("--publish-config")

    revision = newest_revision()
    stack.wait(lambda: publishes(stack, revision), "the saved config was never published")
    status, body, headers = stack.api("GET", f"partitions/{PARTITION}/config.yaml?publish=true")
    assert status == 200
    assert headers["X-Config-Revision"] == str(revision)
    assert published(stack)["data"] == {"queues.yaml": body, "log.level": "INFO"}
    assert "quotapreemptionenabled" not in body  # YuniKorn must not enforce quotas a second time
    assert yaml.safe_load(body)["partitions"][0]["name"] == "default"  # the shim's partition
    stack.wait(
        lambda: ClusterAgent.objects.get(name="e2e-agent").running_revision == revision,
        "the agent never reported the revision the cluster runs",
    )

    # Someone edits the ConfigMap at the same time as the agent writes the next revision: the
    # agent's replace answers 409 and it writes again on the fresh version, keeping that edit.
    stack.kube.fail_next("PUT", r"/configmaps/yunikorn-configs$", 409, message="concurrent edit")
    stack.kube.edit_configmap(
        "yunikorn", "yunikorn-configs", lambda cm: cm["data"].update({"log.level": "DEBUG"})
    )
    lower_sandbox_max(stack, "5Ti")
    new = newest_revision()
    assert new > revision
    stack.wait(lambda: publishes(stack, new), "the new revision was never published")
    _, body, _ = stack.api("GET", f"partitions/{PARTITION}/config.yaml?publish=true")
    assert published(stack)["data"] == {"queues.yaml": body, "log.level": "DEBUG"}
    conflicts = [r for r in stack.kube.requests if r.method == "PUT" and r.status == 409]
    assert conflicts, "no write was refused: the retry was not exercised"


def test_orders_can_come_by_signed_webhook_instead_of_polling(stack: Stack) -> None:
    """The product's webhook worker POSTs each order, signed, to the agent, which carries it
    out and answers; an unsigned or wrongly signed order is refused and changes nothing."""
    secret = "webhook-secret-for-the-e2e-test"
    secret_file = stack.tmp_path / "webhook-secret"
    secret_file.write_text(secret)
    port = free_port()
    hooks = {
        "EVICTION_WEBHOOK_URL": f"http://127.0.0.1:{port}/evictions",
        "EVICTION_WEBHOOK_SECRET": secret,
    }
    deliverer = stack.loop._start(
        "webhook-worker",
        [
            venv_executable("celery"), "-A", "scheduler_admin", "worker", "--loglevel", "INFO",
            "--concurrency", "1", "--queues", "webhooks", "-n", "webhooks@%h",
            "--without-mingle", "--without-gossip",
        ],
        hooks,
    )  # fmt: skip
    stack.wait(lambda: " ready." in deliverer.log_text(), "the webhook worker never started")
    stack.kube.load(small_cluster(sandbox_pods(6, "etl")))
    agent = stack.agent(
        "--webhook-listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(secret_file)
    )
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")

    forged = json.dumps({"order_id": 1, "partition": PARTITION, "allocation_id": "x@y"}).encode()
    for signature in ("", "sha256=" + "0" * 64):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/evictions",
            data=forged,
            method="POST",
            headers={"X-Scheduler-Signature": signature, "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        assert refused.value.code == 401

    lower_sandbox_max(stack, "8Gi")  # 24Gi -> 8Gi: four victims
    run = finished_run(stack)
    victims = victim_pods(run)
    stack.wait(lambda: all_acknowledged(run), "webhook orders were never carried out", RUN_WAIT)
    assert Counter(stack.kube.evictions()) == Counter(victims)
    assert set(EvictionOrder.objects.filter(run=run).values_list("outcome", flat=True)) == {
        "evicted"
    }
    # Each order came by webhook: the agent did not poll for it.
    assert "receiving eviction orders on port" in agent.log_text()
    for order in EvictionOrder.objects.filter(run=run):
        assert f"order {order.pk} by webhook: evicted" in agent.log_text()


# --- Dynamic queues -------------------------------------------------------------------------------

TENANT_QUEUES = QUEUES.replace(
    "    queues:\n      - name: root\n",
    "    placementrules: [{name: provided, create: true}]\n    queues:\n      - name: root\n",
).replace(
    "          - name: default\n",
    "          - name: default\n"
    "          - name: tenants\n"
    "            parent: true\n"
    "            childtemplate:\n"
    "              resources: {guaranteed: {memory: 4Gi}, max: {memory: 32Gi}}\n",
)


def test_pods_in_a_queue_yunikorn_creates_are_pushed_with_the_queue(stack: Stack) -> None:
    """A ``create: true`` rule places ``root.tenants.etl``, which the config does not have: the
    agent pushes the queue (with the parent's child template) and its pods; once the pods are
    gone, a replace push drops the queue."""
    [config] = parse_queues_yaml(TENANT_QUEUES, settings_for=config_services.settings_for_import)
    config_services.save_partition_config(config, actor=None, comment="tenants")
    pods = [
        fixtures.pod(
            "tenants", f"etl-{i}", node="n1",
            containers=[{"requests": {"cpu": "500m", "memory": "4Gi"}}],
            labels={"queue": "root.tenants.etl", "applicationId": "etl"},
            created=f"2026-01-01T10:0{i}:00Z",
        )
        for i in range(3)
    ]  # fmt: skip
    stack.kube.load(small_cluster(pods))
    stack.agent()
    stack.wait(lambda: converged(stack.kube), "the dynamic queue's pods never reached the product")
    partition = Partition.objects.get(name=PARTITION)
    queue = DynamicQueue.objects.get(partition=partition)
    assert (queue.path, queue.leaf) == ("root.tenants.etl", True)
    assert (queue.guaranteed, queue.max) == ({"memory": 4 * GB}, {"memory": 32 * GB})
    queues = set(
        Allocation.objects.filter(partition=partition).values_list("queue_path", flat=True)
    )
    assert queues == {"root.tenants.etl"}
    assert queue_usage(partition)["root.tenants"] == {"memory": 12 * GB, "vcore": 1500, "pods": 3}

    for pod in pods:
        stack.kube.delete("pods", pod["metadata"]["name"], "tenants")
    stack.wait(
        lambda: not DynamicQueue.objects.filter(partition=partition).exists(),
        "the dynamic queue was never dropped",
    )
