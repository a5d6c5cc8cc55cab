"""The cluster agent's recovery on a big cluster, end to end: the stand-in API server
(``FakeKubeAPI``) holds thousands of realistic pods (``clusterdata``: ``managedFields`` and all,
as the agent's benchmark builds them), the agent runs as its own process, and the product runs
its real web (gunicorn) on PostgreSQL and Redis.

In one test, the mechanisms a cluster of Kubernetes' documented size (150,000 pods) meets, here
at a size a 2-core test machine lists in seconds:

1. the agent lists the pods in pages; between two pages the cluster moves on and etcd compacts
   the list's version away: the next page answers 410 Expired with a fresh token; the agent
   continues from it and reads the pages before it again at the continuation's version, so the
   changes made meanwhile to pods it had already read are not lost (one list, never started
   over); the product gets the cluster as one replacement in several pages;
2. while pods churn, the watch cache closes the agent's pod watcher for falling behind: the
   agent resumes from the last version it received and gets what was dropped (no new list);
3. once more, but the history is compacted before the agent comes back: its watch answers
   410 Gone and it lists again, exactly once.

After each step the product holds exactly the stand-in's cluster: every bound pod as one
allocation in its queue on its node with its request, every pending pod as one ask, every node.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from scheduler_admin.accounts.services import create_user, issue_token
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState, Ask, Node
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from scheduler_admin_agent import clusterdata
from tests.integration.test_agent_end_to_end import AGENT_REDIS_DB, PARTITION, Stack, _answers
from tests.support.kube.fixtures import quantity_value
from tests.support.kube.server import FakeKubeAPI, RecordedRequest
from tests.support.processes import flush_redis_db, isolated_redis_url, venv_executable, wait_until

pytestmark = pytest.mark.redis

#: The cluster: realistic pods (about 6 KB each as served) on a few hundred nodes.
PODS = 12_000
NODES = 400
#: Pods a page of the agent's list (``scheduler_admin_agent.kube.PAGE_SIZE``).
LIST_PAGE = 500
#: The page of the agent's first pod list after which the cluster moves on and is compacted.
EXPIRE_AFTER = 8
#: Items a page of the agent's replace push: the first push goes in several pages.
PUSH_PAGE = 4000
#: Events the watch cache buffers for one watcher before closing it as too slow.
WATCH_BUFFER = 200
#: Pod events written while the watches are held: more than a watcher's buffer.
BURST = WATCH_BUFFER + 150
#: How long the product may take to hold a change of the whole cluster (a list, a push of
#: 12,000 items) on a loaded 2-core machine.
CONVERGE = 150

PODS_PATH = "/api/v1/pods"


def queues_yaml() -> str:
    """The partition of ``clusterdata``'s pods: its 50 leaf queues, the ``provided`` rule."""
    lines = [
        "partitions:",
        f"  - name: {PARTITION}",
        "    placementrules: [{name: provided}]",
        "    queues:",
        "      - name: root",
        '        submitacl: "*"',
        "        queues:",
    ]
    for tenant in range(10):
        lines += [f"          - name: tenant-{tenant}", "            queues:"]
        lines += [f"              - name: team-{team}" for team in range(5)]
    return "\n".join(lines) + "\n"


class WebStack(Stack):
    """The product's web alone (the agent only pushes here: no worker or beat), a stand-in
    that closes a watcher ``WATCH_BUFFER`` events behind, and the agent."""

    def __init__(self, tmp_path: Path, redis_url: str) -> None:
        super().__init__(tmp_path, redis_url)
        self.kube = FakeKubeAPI(grace_seconds=0.3, watch_buffer=WATCH_BUFFER)

    def start(self) -> None:
        self.kube.start()
        self.kube.write_kubeconfig(self.kubeconfig, context="kind-e2e")
        web = [
            venv_executable("gunicorn"), "scheduler_admin.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", "2", "--timeout", "120",
        ]  # fmt: skip
        process = self.loop._start("web", web, {"XDG_RUNTIME_DIR": str(self.tmp_path)})
        wait_until(lambda: _answers(self.port), 30, message="web never answered", watch=[process])
        user = create_user("cluster-agent", role="operator", actor=None).user
        self.token = issue_token(user, actor=None)
        self.token_file.write_text(self.token + "\n")


@pytest.fixture
def stack(transactional_db: None, tmp_path: Path) -> Iterator[WebStack]:
    url = isolated_redis_url(settings.REDIS_URL, AGENT_REDIS_DB)
    flush_redis_db(url)
    [config] = parse_queues_yaml(queues_yaml(), settings_for=config_services.settings_for_import)
    config_services.save_partition_config(config, actor=None, comment="the cluster's queues")
    stack = WebStack(tmp_path, url)
    try:
        stack.start()
        yield stack
    finally:
        stack.close()


# --- The cluster and its churn (what the expectations are read from) ---------------------------


def pod_name(index: int) -> tuple[str, str]:
    """(namespace, name) of ``clusterdata.pod(index)``."""
    pod = clusterdata.pod(index, NODES)
    return pod["metadata"]["namespace"], pod["metadata"]["name"]


class Churn:
    """Pod changes as controllers, the scheduler and kubelets make them: new pods, deletions,
    pending pods bound to a node, pods that finish. Deterministic (one seed)."""

    def __init__(self, api: FakeKubeAPI) -> None:
        self.api = api
        self.rng = random.Random(26)
        self.next_index = PODS + 1  # PODS itself is added between the list's pages
        self.alive = set(range(PODS))
        self.pending = {i for i in self.alive if i % 20 == 18}  # clusterdata's pending pods
        #: The version the last ``compact()`` kept (the oldest a watch or list may ask for).
        self.floor = 0

    def add(self, index: int) -> None:
        self.api.add(clusterdata.pod(index, NODES))
        self.alive.add(index)

    def delete(self, index: int) -> None:
        self.api.delete("pods", *reversed(pod_name(index)))
        self.alive.discard(index)
        self.pending.discard(index)

    def bind(self, index: int) -> None:
        def bound(pod: dict[str, Any]) -> None:
            pod["spec"]["nodeName"] = clusterdata.node_name(index % NODES)
            pod["status"]["phase"] = "Running"

        namespace, name = pod_name(index)
        self.api.edit("pods", name, bound, namespace)
        self.pending.discard(index)

    def finish(self, index: int) -> None:
        def finished(pod: dict[str, Any]) -> None:
            pod["status"]["phase"] = "Succeeded"

        namespace, name = pod_name(index)
        self.api.edit("pods", name, finished, namespace)
        self.alive.discard(index)  # no longer changed: it stays, finished
        self.pending.discard(index)

    def burst(self, events: int) -> None:
        for _ in range(events):
            roll = self.rng.random()
            if roll < 0.4:
                self.add(self.next_index)
                self.next_index += 1
            elif roll < 0.6 and self.pending:
                self.bind(self.rng.choice(sorted(self.pending)))
            elif roll < 0.8:
                self.delete(self.rng.choice(sorted(self.alive)))
            else:
                self.finish(self.rng.choice(sorted(self.alive)))


def request_of(pod: dict[str, Any]) -> dict[str, int]:
    """The pod's request in product units (one container: its requests)."""
    [container] = pod["spec"]["containers"]
    requests = container["resources"]["requests"]
    return {
        "vcore": int(quantity_value(requests["cpu"]) * 1000),
        "memory": int(quantity_value(requests["memory"])),
    }


def task_id(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['name']}@{meta['uid']}"


def expected(api: FakeKubeAPI) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """What the product should hold for the stand-in's cluster now, from the objects alone:
    allocation id -> (queue, node) for every bound pod of YuniKorn's not yet finished (a
    terminating one still holds its node), ask id -> queue for every pending one."""
    allocations: dict[str, tuple[str, str]] = {}
    asks: dict[str, str] = {}
    for pod in api.peek("pods"):
        if pod["spec"].get("schedulerName") != "yunikorn":
            continue
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        queue = pod["metadata"]["labels"]["queue"]
        node = pod["spec"].get("nodeName")
        if node:
            allocations[task_id(pod)] = (queue, node)
        elif "deletionTimestamp" not in pod["metadata"]:
            asks[task_id(pod)] = queue
    return allocations, asks


def held() -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """What the product holds: allocation id -> (queue, node), ask id -> queue."""
    partition = Partition.objects.get(name=PARTITION)
    allocations = (
        Allocation.objects.filter(partition=partition)
        .exclude(state=AllocationState.RELEASED)
        .values_list("external_id", "queue_path", "node_name")
    )
    asks = Ask.objects.filter(partition=partition).values_list("external_id", "queue_path")
    return {a: (q, n) for a, q, n in allocations}, dict(asks)


def wait_converged(stack: WebStack, message: str) -> None:
    """Until the product holds what the stand-in's cluster implies. Counted first, and the
    cluster read again only when it changed: reading 12,000 rows and pods at every poll would
    take the CPU the stand-in (it serves from this process) and the agent need."""
    api = stack.kube
    want: dict[int, tuple[dict[str, tuple[str, str]], dict[str, str]]] = {}
    partition = Partition.objects.get(name=PARTITION)
    allocations = Allocation.objects.filter(partition=partition).exclude(
        state=AllocationState.RELEASED
    )
    asks = Ask.objects.filter(partition=partition)

    def done() -> bool:
        version = api.resource_version
        if version not in want:
            want.clear()
            want[version] = expected(api)
        wanted = want[version]
        if (allocations.count(), asks.count()) != (len(wanted[0]), len(wanted[1])):
            return False
        return held() == wanted

    stack.wait(done, message, CONVERGE)


# --- What the agent asked the stand-in -----------------------------------------------------------


def pod_lists(api: FakeKubeAPI) -> list[RecordedRequest]:
    return [
        r
        for r in api.requests
        if r.method == "GET" and r.path == PODS_PATH and "watch" not in r.query
    ]


def fresh_lists(api: FakeKubeAPI) -> list[RecordedRequest]:
    """Pod lists started from the beginning at the latest version (not a continuation, not a
    read at a given version)."""
    return [
        r for r in pod_lists(api) if "continue" not in r.query and "resourceVersion" not in r.query
    ]


def pod_watches(api: FakeKubeAPI) -> list[RecordedRequest]:
    return [r for r in api.requests if r.path == PODS_PATH and "watch" in r.query]


def between_pages(api: FakeKubeAPI, churn: Churn) -> Callable[[], None]:
    """While the agent is between two pages: pods it has read change or go, one is added
    among them, one it has not read yet goes; then etcd compacts."""

    def act() -> None:
        churn.finish(0)  # the first pod of the first page
        churn.delete(200)  # the second
        churn.add(PODS)  # in the first page's namespace
        churn.bind(18)  # a pending pod of the first pages gets its node
        churn.delete(150)  # not read yet
        churn.floor = api.compact()

    return act


def test_a_big_cluster_recovers_from_an_expired_list_and_closed_watches(stack: WebStack) -> None:
    """Slow (30 to 50 s on the shared 2-core machine, by its load): 12,000 realistic pods are
    built, listed (twice, and a part a third time), pushed, and each step waits for the product
    to hold the whole cluster."""
    api = stack.kube
    api.load((clusterdata.node(i) for i in range(NODES)), fresh=True)
    api.load((clusterdata.pod(i, NODES) for i in range(PODS)), fresh=True)
    churn = Churn(api)
    api.at_list_page("pods", EXPIRE_AFTER, between_pages(api, churn))
    no_limit = stack.tmp_path / "memory.max"
    no_limit.write_text("max\n")  # no memory check: its count would be one more pod list
    agent = stack.agent("--page-items", str(PUSH_PAGE), "--memory-limit-file", str(no_limit))

    # 1. One list, continued past its expired token; one replacement in pages.
    wait_converged(stack, "the listed cluster never reached the product")
    lists = pod_lists(api)
    assert len(fresh_lists(api)) == 1  # never started over
    assert [r.status for r in lists].count(410) == 1
    expired = next(i for i, r in enumerate(lists) if r.status == 410)
    assert expired == EXPIRE_AFTER  # the request after page EXPIRE_AFTER
    assert "continue" in lists[expired + 1].query  # continued from the fresh token
    rereads = [r for r in lists if r.query.get("resourceVersionMatch") == "Exact"]
    assert len(rereads) == 1  # then continued by tokens
    # The first pages read again at the continuation's version: the latest, as compacted.
    assert rereads[0].query["resourceVersion"] == str(churn.floor)
    assert agent.log_text().count("continue token expired") == 1
    # The agent logs the replacement once the product has answered its last page, which can be
    # a moment after the product's rows are there.
    stack.wait(
        lambda: "replaced the partition's state" in agent.log_text(), "no replacement logged", 30
    )
    pages = re.findall(
        r"replaced the partition's state: (\d+) items in (\d+) pages", agent.log_text()
    )
    assert len(pages) == 1 and int(pages[0][1]) >= PODS // PUSH_PAGE, pages
    [ingest] = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED)
    assert ingest.data["replace"] is True
    check_contents(api)

    # 2. A burst while the agent's watches are held: its pod watcher is closed for falling
    # behind, and the agent resumes it from the last version it received.
    api.wait_for_watches(5, timeout=30)
    watches = pod_watches(api)
    assert len(watches) == 1
    closed = api.slow_watchers_closed
    before = api.resource_version
    with api.hold_watches():
        churn.burst(BURST)
        assert api.slow_watchers_closed == closed + 1
    wait_converged(stack, "the events dropped with the watcher were lost")
    watches = pod_watches(api)
    assert len(watches) == 2
    assert int(watches[1].query["resourceVersion"]) <= before  # resumed, not from the end
    assert len(fresh_lists(api)) == 1  # the history still had it: no new list

    # 3. Again, and the history is compacted before the agent comes back: its watch answers
    # 410 Gone and it lists again, once.
    with api.hold_watches():
        churn.burst(BURST)
        assert api.slow_watchers_closed == closed + 2
        floor = api.compact()
    wait_converged(stack, "no re-list after the compacted watch")
    api.wait_for_watches(1, timeout=30, kind="pods")
    assert len(fresh_lists(api)) == 2
    assert [r.status for r in pod_lists(api)].count(410) == 1  # no new expiry
    watches = pod_watches(api)
    assert len(watches) == 4  # resumed (answered 410 Gone), then from the new list
    assert int(watches[2].query["resourceVersion"]) < floor  # gone: answered 410 Gone
    assert watches[3].query["resourceVersion"] == str(floor)  # the new list's version
    check_contents(api)
    assert AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED, data__replace=True).count() == 1


def check_contents(api: FakeKubeAPI) -> None:
    """The product's rows equal the stand-in's cluster: no pod lost or held twice, each in its
    queue on its node with its request, every node."""
    allocations, asks = expected(api)
    partition = Partition.objects.get(name=PARTITION)
    rows = list(
        Allocation.objects.filter(partition=partition).exclude(state=AllocationState.RELEASED)
    )
    assert len(rows) == len(allocations)
    assert {row.external_id for row in rows} == set(allocations)
    pods = {task_id(pod): pod for pod in api.peek("pods")}
    for row in rows:
        assert (row.queue_path, row.node_name) == allocations[row.external_id], row.external_id
        wanted = request_of(pods[row.external_id])
        assert {k: row.resources.get(k) for k in wanted} == wanted, row.external_id
    assert Ask.objects.filter(partition=partition).count() == len(asks)
    nodes = set(Node.objects.filter(partition=partition).values_list("name", flat=True))
    assert nodes == {node["metadata"]["name"] for node in api.peek("nodes")}
