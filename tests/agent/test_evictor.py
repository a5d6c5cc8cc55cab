"""How the agent carries out one eviction order (``Evictor.carry_out``) against a server
speaking the Kubernetes wire format: evict, gone, terminating, budgets, failures, soft
eviction. What it then tells the product is covered end to end
(``tests/integration/test_agent_end_to_end.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from scheduler_admin_agent.evictions import PREEMPTED_LABEL, RUN_ANNOTATION, Evictor
from scheduler_admin_agent.kube import PODS, ClusterCache
from scheduler_admin_agent.translate import pod_id
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(grace_seconds=30) as api:  # evicted pods stay terminating in these tests
        api.load(
            [
                fixtures.node("n1"),
                *[
                    fixtures.pod("batch", f"p{i}", node="n1", labels={"app": "etl"})
                    for i in range(4)
                ],
                fixtures.pod("web", "w0", node="n1", labels={"app": "web"}),
                fixtures.pdb("web", "web", match_labels={"app": "web"}, disruptions_allowed=0),
            ]
        )
        yield api


def evictor(kube: FakeKubeAPI) -> tuple[Evictor, ClusterCache]:
    api = kube.api_client()
    cache = ClusterCache()
    cache.replace(PODS, client.CoreV1Api(api).list_pod_for_all_namespaces().items)
    return Evictor(api, cache, product=None), cache  # type: ignore[arg-type]


def order(kube: FakeKubeAPI, namespace: str, name: str, *, soft: bool = False, id_: int = 1):
    pod = kube.get("pods", name, namespace)
    uid = pod["metadata"]["uid"]
    return {"id": id_, "allocation_id": f"{namespace}/{name}@{uid}", "soft": soft, "run": 7}


def test_an_order_evicts_its_pod_through_the_eviction_api(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    result = agent.carry_out(order(kube, "batch", "p0"))
    assert (result.outcome, result.status) == ("evicted", "")
    assert kube.evictions() == [("batch", "p0")]
    assert kube.get("pods", "p0", "batch")["metadata"].get("deletionTimestamp")


def test_a_pod_the_cluster_no_longer_has_is_gone_without_a_call(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    the_order = order(kube, "batch", "p1")
    kube.delete("pods", "p1", "batch")
    agent.cache.replace(
        PODS, client.CoreV1Api(kube.api_client()).list_pod_for_all_namespaces().items
    )
    assert agent.carry_out(the_order).outcome == "gone"
    assert kube.eviction_attempts("batch", "p1") == []


def test_a_pod_gone_after_the_cache_saw_it_answers_404_and_is_gone(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    the_order = order(kube, "batch", "p1")
    kube.delete("pods", "p1", "batch")  # the cache has not seen it yet
    assert agent.carry_out(the_order).outcome == "gone"
    # Read again by name before the eviction: found gone, so no eviction is even sent.
    assert kube.eviction_attempts("batch", "p1") == []


def test_a_pod_recreated_under_the_same_name_is_not_evicted_by_an_old_order(
    kube: FakeKubeAPI,
) -> None:
    agent, _ = evictor(kube)
    the_order = order(kube, "batch", "p2")
    kube.delete("pods", "p2", "batch")
    kube.add(fixtures.pod("batch", "p2", node="n1", uid="a-new-pod-with-the-old-name"))
    # The cache still holds the old pod; read again by name, the pod has another uid: no
    # eviction is sent (the API server would spend a budget's disruption before refusing it).
    assert agent.carry_out(the_order).outcome == "gone"
    assert kube.eviction_attempts("batch", "p2") == []
    assert not kube.get("pods", "p2", "batch")["metadata"].get("deletionTimestamp")


def test_terminating_pods_are_acknowledged_without_a_second_eviction(kube: FakeKubeAPI) -> None:
    agent, cache = evictor(kube)
    assert agent.carry_out(order(kube, "batch", "p3")).outcome == "evicted"
    cache.replace(PODS, client.CoreV1Api(kube.api_client()).list_pod_for_all_namespaces().items)
    # This process evicted it: evicted. A restarted agent (new Evictor) cannot tell: gone.
    assert agent.carry_out(order(kube, "batch", "p3")).outcome == "evicted"
    fresh, _ = evictor(kube)
    assert fresh.carry_out(order(kube, "batch", "p3")).outcome == "gone"
    assert kube.eviction_attempts("batch", "p3") == [201]


def test_a_budget_that_refuses_is_reported_blocked_with_backoff(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    result = agent.carry_out(order(kube, "web", "w0", id_=5))
    assert (result.outcome, result.status, result.code) == ("", "blocked", 429)
    assert "disruption budget" in result.reason
    assert agent._backoff[5][1] == 1
    agent.carry_out(order(kube, "web", "w0", id_=5))
    assert agent._backoff[5][1] == 2  # the wait doubles with every refusal


def test_other_failures_are_reported_failed_and_retried(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    kube.fail_next("POST", r"/pods/p0/eviction$", 500, message="etcd timed out")
    result = agent.carry_out(order(kube, "batch", "p0"))
    assert (result.status, result.code) == ("failed", 500)
    assert "etcd timed out" in result.reason
    assert agent.carry_out(order(kube, "batch", "p0")).outcome == "evicted"


def test_soft_eviction_labels_the_pod_and_waits_for_its_owner(kube: FakeKubeAPI) -> None:
    agent, cache = evictor(kube)
    the_order = order(kube, "batch", "p0", soft=True)
    result = agent.carry_out(the_order)
    assert (result.outcome, result.status) == ("", "waiting")
    meta = kube.get("pods", "p0", "batch")["metadata"]
    assert meta["labels"][PREEMPTED_LABEL] == "true"
    assert meta["annotations"][RUN_ANNOTATION] == "7"
    assert kube.evictions() == []
    # Labelled already: nothing more is written while it runs; once its owner deletes it, gone.
    cache.replace(PODS, client.CoreV1Api(kube.api_client()).list_pod_for_all_namespaces().items)
    patches = [r for r in kube.requests if r.method == "PATCH"]
    assert agent.carry_out(the_order).status == "waiting"
    assert [r for r in kube.requests if r.method == "PATCH"] == patches
    kube.delete("pods", "p0", "batch")
    cache.replace(PODS, client.CoreV1Api(kube.api_client()).list_pod_for_all_namespaces().items)
    assert agent.carry_out(the_order).done


def test_order_ids_name_pods_by_uid(kube: FakeKubeAPI) -> None:
    _, cache = evictor(kube)
    pod = cache.snapshot()[0][PODS][0]
    assert order(kube, pod.namespace, pod.name)["allocation_id"] == pod_id(pod)
