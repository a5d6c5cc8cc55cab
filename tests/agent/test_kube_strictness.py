"""The agent against a stand-in as strict as the API server where a kinder one would hide a bug:
``managedFields`` on every object, budget updates that conflict under concurrent evictions,
watchers closed for falling behind, continue tokens that expire on their own, the 1 MiB limit
on a ConfigMap's create, and admission webhooks that deny.

Each test would fail on an agent that did not cope: one that kept ``managedFields``, acknowledged
a conflicted eviction, stopped on a closed watch or lost what it missed, started a list over (or
kept what it read before the expiry), or hid a webhook's refusal."""

from __future__ import annotations

import base64
import json
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
import time_machine
from kubernetes import client

from scheduler_admin_agent.kube import NODES, PODS, ClusterCache, Reflector, reflectors
from scheduler_admin_agent.publish import ConfigPublisher, PublishError
from scheduler_admin_agent.records import NodeRecord, PodRecord
from tests.agent.test_evictor import evictor, order
from tests.support.kube import fixtures
from tests.support.kube.admission import AdmissionRequest, Denial
from tests.support.kube.resources import PODS as POD_RESOURCE
from tests.support.kube.resources import ApiError
from tests.support.kube.server import FakeKubeAPI
from tests.support.kube.state import ClusterState
from tests.support.processes import wait_until

QUEUES = "partitions:\n  - name: default\n    queues:\n      - name: root\n"


def names(cache: ClusterCache) -> set[str]:
    objects, _ = cache.snapshot()
    return {obj.name for obj in objects[PODS]}


@pytest.fixture
def running() -> Iterator[tuple[FakeKubeAPI, ClusterCache, list[Reflector]]]:
    """The agent's reflectors against a server that closes a watcher 5 events behind."""
    with FakeKubeAPI(grace_seconds=0.05, watch_buffer=5) as api:
        api.load([fixtures.node("n1"), fixtures.pod("batch", "a", node="n1")])
        cache, stop = ClusterCache(), threading.Event()
        threads = reflectors(api.api_client(), cache, stop, lambda message: None)
        for thread in threads:
            thread.start()
        try:
            wait_until(lambda: cache.ready, 20, message="never listed")
            api.wait_for_watches(len(threads))
            yield api, cache, threads
        finally:
            stop.set()
            api.end_watches()
            for thread in threads:
                thread.join(10)


# --- managedFields


def test_the_agent_keeps_no_managed_fields(running) -> None:
    api, cache, _ = running
    assert api.get("pods", "a", "batch")["metadata"]["managedFields"]  # the server has them
    api.add(fixtures.pod("batch", "b", node="n1"))
    wait_until(lambda: names(cache) == {"a", "b"}, 10, message="watch event not applied")
    objects, _ = cache.snapshot()
    # Pods and nodes are flat records of what the agent reads; the other kinds drop the field.
    assert objects[PODS] and all(isinstance(pod, PodRecord) for pod in objects[PODS])
    assert all(isinstance(node, NodeRecord) for node in objects[NODES])
    kept = [
        obj
        for kind, items in objects.items()
        if kind not in (PODS, NODES)
        for obj in items
        if obj.metadata.managed_fields
    ]
    assert kept == []


def test_rest_writes_are_managed_by_the_callers_user_agent() -> None:
    with FakeKubeAPI() as api:
        api.load([fixtures.configmap("yunikorn", "cm", {"k": "v"})])
        core = client.CoreV1Api(api.api_client())
        configmap = core.read_namespaced_config_map("cm", "yunikorn")
        configmap.data = {"k": "w"}
        core.replace_namespaced_config_map("cm", "yunikorn", configmap)
        entries = api.get("configmaps", "cm", "yunikorn")["metadata"]["managedFields"]
    assert [e["manager"] for e in entries] == ["kube-controller-manager", "OpenAPI-Generator"]
    assert entries[1]["fieldsV1"]["f:data"] == {"f:k": {}}


# --- budget updates that conflict


@pytest.fixture
def budgeted() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(grace_seconds=30, eviction_retry_interval=0.001) as api:
        api.load(
            [
                fixtures.node("n1"),
                *[
                    fixtures.pod("batch", f"p{i}", node="n1", labels={"app": "etl"})
                    for i in range(6)
                ],
                fixtures.pdb("batch", "etl", match_labels={"app": "etl"}, disruptions_allowed=2),
            ]
        )
        yield api


def allowed(api: FakeKubeAPI) -> int:
    return api.get("poddisruptionbudgets", "etl", "batch")["status"]["disruptionsAllowed"]


def test_a_few_budget_conflicts_are_retried_inside_the_server(budgeted: FakeKubeAPI) -> None:
    agent, _ = evictor(budgeted)
    budgeted.interfere_with_budget("batch", "etl", times=3)
    assert agent.carry_out(order(budgeted, "batch", "p0")).outcome == "evicted"
    assert budgeted.eviction_attempts("batch", "p0") == [201]
    assert budgeted.budget_conflicts == 3
    assert allowed(budgeted) == 1  # decremented once, from the budget read again


def test_a_budget_that_keeps_conflicting_is_reported_and_retried_not_acknowledged(
    budgeted: FakeKubeAPI,
) -> None:
    """20 conflicts in a row: the server gives up with the last one (409 on the budget); the
    pod is still running, so the order fails this turn and is carried out on the next."""
    agent, _ = evictor(budgeted)
    budgeted.interfere_with_budget("batch", "etl", times=20)
    result = agent.carry_out(order(budgeted, "batch", "p0", id_=4))
    assert (result.outcome, result.status, result.code) == ("", "failed", 409)
    assert 'poddisruptionbudgets.policy "etl"' in result.reason
    assert "the pod is still there" in result.reason
    assert allowed(budgeted) == 2
    assert "deletionTimestamp" not in budgeted.get("pods", "p0", "batch")["metadata"]
    assert agent.carry_out(order(budgeted, "batch", "p0", id_=5)).outcome == "evicted"
    assert allowed(budgeted) == 1


def test_concurrent_evictions_never_spend_more_than_the_budget(budgeted: FakeKubeAPI) -> None:
    agent, _ = evictor(budgeted)
    orders = [order(budgeted, "batch", f"p{i}", id_=i) for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(agent.carry_out, orders))
    assert sorted(r.outcome or r.status for r in results) == ["blocked"] * 4 + ["evicted"] * 2
    assert all(r.code == 429 for r in results if r.status == "blocked")
    assert allowed(budgeted) == 0
    assert len(budgeted.evictions()) == 2


def test_the_stand_in_answers_a_stale_uid_as_the_disruption_condition_update_does(
    budgeted: FakeKubeAPI,
) -> None:
    agent, _ = evictor(budgeted)
    stale = order(budgeted, "batch", "p0")
    core = client.CoreV1Api(budgeted.api_client())
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name="p0", namespace="batch"),
        delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="old")),
    )
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("p0", "batch", body)
    assert refused.value.status == 409
    assert "the UID in the precondition (old) does not match" in refused.value.body
    assert agent.carry_out(stale).outcome == "evicted"  # the right uid goes through


# --- watchers that fall behind


def test_a_watcher_closed_for_falling_behind_resumes_and_misses_nothing(running) -> None:
    api, cache, threads = running
    with api.hold_watches():
        for i in range(12):
            api.add(fixtures.pod("batch", f"burst{i}", node="n1"))
        api.delete("pods", "a", "batch")
        assert api.slow_watchers_closed >= 1
    wanted = {f"burst{i}" for i in range(12)}
    wait_until(lambda: names(cache) == wanted, 20, message="events lost after the close")
    pods = next(thread for thread in threads if thread.kind == PODS)
    assert pods.lists == 1  # resumed from its last version: the server still had the events


def test_a_watcher_closed_behind_a_compaction_lists_again(running) -> None:
    api, cache, threads = running
    with api.hold_watches():
        for i in range(8):
            api.add(fixtures.pod("batch", f"burst{i}", node="n1"))
        api.delete("pods", "a", "batch")
        api.compact()
    wanted = {f"burst{i}" for i in range(8)}
    wait_until(lambda: names(cache) == wanted, 20, message="no re-list after 410")
    pods = next(thread for thread in threads if thread.kind == PODS)
    assert pods.lists >= 2


# --- continue tokens that expire


def test_an_expired_continue_token_is_answered_with_a_fresh_one() -> None:
    state = ClusterState(continue_ttl=60)
    state.load([fixtures.pod("batch", f"a{i}") for i in range(5)])
    with time_machine.travel(datetime(2026, 3, 1, tzinfo=UTC), tick=False) as traveller:
        first = state.rest_list(POD_RESOURCE, None, {"limit": "2"})
        token = first["metadata"]["continue"]
        traveller.shift(120)  # nothing written since: the version is still the latest
        assert len(state.rest_list(POD_RESOURCE, None, {"limit": "2", "continue": token})["items"])
        state.add(fixtures.pod("batch", "b0"))
        traveller.shift(61)  # superseded over a minute ago: etcd has compacted it
        with pytest.raises(ApiError) as expired:
            state.rest_list(POD_RESOURCE, None, {"limit": "2", "continue": token})
    assert expired.value.code == 410
    fresh = expired.value.status["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(fresh + "=" * (-len(fresh) % 4)))
    assert decoded["rv"] == -1 and decoded["start"] == "batch/a1\x00"
    rest = state.rest_list(POD_RESOURCE, None, {"limit": "10", "continue": fresh})
    assert [p["metadata"]["name"] for p in rest["items"]] == ["a2", "a3", "a4", "b0"]
    assert rest["metadata"]["resourceVersion"] == str(state.resource_version)


def test_the_agent_continues_an_expired_list_and_reads_what_came_before_again() -> None:
    """While the agent reads its first page the cluster moves on and the token expires. The
    agent continues from the fresh token (no second full list), then reads the first page's
    range again at the continuation's version: the edit to ``a0`` and the deletion of ``a1`` are
    not lost."""
    with FakeKubeAPI(continue_ttl=0.0) as api:
        api.load([fixtures.pod("batch", f"a{i}", node="n1") for i in range(6)])
        core = client.CoreV1Api(api.api_client())
        calls: list[dict] = []

        def listing(**kwargs):
            page = core.list_pod_for_all_namespaces(**kwargs)
            calls.append(kwargs)
            if len(calls) == 1:  # the cluster moves on while the agent reads page 1
                api.edit(
                    "pods",
                    "a0",
                    lambda p: p["metadata"].setdefault("labels", {}).update(v="2"),
                    "batch",
                )
                api.delete("pods", "a1", "batch")
                api.add(fixtures.pod("batch", "z9", node="n1"))
            return page

        cache = ClusterCache()
        reflector = Reflector(PODS, listing, cache, threading.Event())
        reflector.page_size = 2
        version = reflector._list()
        assert version == str(api.resource_version)
    assert reflector.resumed == 1
    objects, _ = cache.snapshot()
    by_name = {pod.name: pod for pod in objects[PODS]}
    assert set(by_name) == {"a0", "a2", "a3", "a4", "a5", "z9"}
    assert by_name["a0"].labels["v"] == "2"
    fresh_starts = [c for c in calls if "_continue" not in c and "resource_version" not in c]
    assert len(fresh_starts) == 1  # never started over
    rereads = [c for c in calls if c.get("resource_version_match") == "Exact"]
    assert [c["resource_version"] for c in rereads] == [version]
    listed = [r for r in api.requests if r.path == "/api/v1/pods"]
    assert [r.status for r in listed].count(410) == 1


def test_an_action_between_two_pages_that_compacts_expires_the_lists_token() -> None:
    """``at_list_page``: the action runs once, when page 2 of a paged list has been read and
    before the client asks for page 3; a write and a compaction there expire the list's token,
    and the 410's fresh token continues after page 2, at the latest version."""
    with FakeKubeAPI() as api:
        api.load([fixtures.pod("batch", f"a{i}") for i in range(6)])
        core = client.CoreV1Api(api.api_client())
        versions: list[int] = []

        def act() -> None:
            versions.append(api.resource_version)
            api.add(fixtures.pod("batch", "z9"))
            api.compact()

        api.at_list_page("pods", 2, act)
        core.list_pod_for_all_namespaces(limit=1)  # another list: pages are counted per list
        first = core.list_pod_for_all_namespaces(limit=2)
        assert versions == []
        second = core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
        assert [pod.metadata.name for pod in second.items] == ["a2", "a3"]
        assert versions == [int(first.metadata.resource_version)]  # after page 2 was read
        with pytest.raises(client.ApiException) as expired:
            core.list_pod_for_all_namespaces(limit=2, _continue=second.metadata._continue)
        assert expired.value.status == 410
        fresh = json.loads(expired.value.body)["metadata"]["continue"]
        rest = core.list_pod_for_all_namespaces(limit=10, _continue=fresh)
        assert [pod.metadata.name for pod in rest.items] == ["a4", "a5", "z9"]
        assert rest.metadata.resource_version == str(api.resource_version)
        # The action ran once: a new list's page 2 runs nothing.
        again = core.list_pod_for_all_namespaces(limit=2)
        core.list_pod_for_all_namespaces(limit=2, _continue=again.metadata._continue)
        assert len(versions) == 1


def test_a_list_served_from_kept_encodings_shows_each_objects_latest_version() -> None:
    """List items are encoded once per object version and kept: a second list gives the
    changed object as it is now, and the body is the list the store reads."""
    with FakeKubeAPI() as api:
        api.load([fixtures.pod("batch", f"a{i}") for i in range(3)])

        def body() -> dict:
            with urllib.request.urlopen(f"{api.url}/api/v1/pods") as answer:  # noqa: S310
                return json.load(answer)

        body()
        api.edit(
            "pods", "a1", lambda p: p["metadata"].setdefault("labels", {}).update(v="2"), "batch"
        )
        listed = body()
        assert listed == api.rest_list(POD_RESOURCE, None, {})
        assert listed["items"][1]["metadata"]["labels"]["v"] == "2"


# --- the 1 MiB limit on create, and admission webhooks


class Product:
    def __init__(self, text: str = QUEUES) -> None:
        self.text = text

    def publishable_config(self) -> tuple[str, int]:
        return self.text, 5


def publisher(api: FakeKubeAPI, product: Product) -> ConfigPublisher:
    return ConfigPublisher(
        api.api_client(), product,  # type: ignore[arg-type]
        namespace="yunikorn", name="yunikorn-configs", key="queues.yaml", enabled=True,
    )  # fmt: skip


def test_a_config_over_the_limit_is_refused_on_create_too() -> None:
    with FakeKubeAPI() as api:  # no ConfigMap yet: the agent creates it
        agent = publisher(api, Product(QUEUES + "#" * (1024 * 1024)))
        with pytest.raises(PublishError, match="Too long: must have at most 1048576 bytes"):
            agent.sync(5)
        assert agent.refusals == 1 and agent.running_revision is None
        assert api.get("configmaps", "yunikorn-configs", "yunikorn") is None
        assert [r.status for r in api.requests if r.method == "POST"] == [422]


def test_a_webhook_denial_of_the_config_is_shown_and_backed_off() -> None:
    seen: list[AdmissionRequest] = []

    def freeze(request: AdmissionRequest) -> Denial:
        seen.append(request)
        return Denial("change freeze until Monday", code=403, reason="Forbidden")

    with FakeKubeAPI() as api:
        api.load([fixtures.configmap("yunikorn", "yunikorn-configs", {"queues.yaml": "old"})])
        api.add_webhook("configs.example.com", freeze)
        agent = publisher(api, Product())
        denied = 'admission webhook "configs.example.com" denied the request: change freeze'
        with pytest.raises(PublishError, match=denied):
            agent.sync(5)
        with pytest.raises(PublishError, match=denied):
            agent.sync(5)  # still shown; not written again within the backoff
        assert [r.status for r in api.requests if r.method == "PUT"] == [403]
        assert api.get("configmaps", "yunikorn-configs", "yunikorn")["data"] == {
            "queues.yaml": "old"
        }
    assert [(r.operation, r.resource, r.name) for r in seen] == [
        ("UPDATE", "configmaps", "yunikorn-configs")
    ]


def test_a_webhook_denial_of_an_eviction_fails_the_order_with_its_reason(
    budgeted: FakeKubeAPI,
) -> None:
    budgeted.add_webhook(
        "evictions.example.com",
        lambda request: "node pool frozen" if request.name == "p0" else None,
        operations=("CREATE",),
        resources=("pods/eviction",),
    )
    agent, _ = evictor(budgeted)
    result = agent.carry_out(order(budgeted, "batch", "p0", id_=8))
    assert (result.outcome, result.status, result.code) == ("", "failed", 400)
    assert 'admission webhook "evictions.example.com" denied the request: node pool' in (
        result.reason
    )
    assert allowed(budgeted) == 2  # admission runs before the budget is looked at
    assert agent._backoff[8][1] == 1  # tried again later, with backoff
    assert agent.carry_out(order(budgeted, "batch", "p1", id_=9)).outcome == "evicted"
