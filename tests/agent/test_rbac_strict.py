"""The agent under the RBAC of its own manifests (``tests/support/kube/strict_rbac.py``): with
``deploy/kubernetes`` alone it reads the whole cluster, places pods and evicts, and it reads the
revision YuniKorn runs; publishing and soft eviction are refused (403, shown) until their
overlay grants them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from scheduler_admin_agent.kube import ClusterCache, reflectors
from scheduler_admin_agent.publish import ConfigPublisher, PublishError
from tests.agent.test_evictor import evictor, order
from tests.agent.test_publish_strict import Product
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI
from tests.support.kube.strict_rbac import Authorizer, grants_from_manifests
from tests.support.processes import wait_until


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(grace_seconds=30) as api:
        api.load(
            [
                fixtures.node("n1"),
                fixtures.pod("batch", "p0", node="n1", labels={"app": "etl"}),
                fixtures.pod("batch", "p1", node="n1", labels={"app": "etl"}),
                fixtures.configmap("yunikorn", "yunikorn-configs", {"queues.yaml": "old"}),
            ]
        )
        yield api


def publisher(kube: FakeKubeAPI) -> ConfigPublisher:
    return ConfigPublisher(
        kube.api_client(), Product(),  # type: ignore[arg-type]
        namespace="yunikorn", name="yunikorn-configs", key="queues.yaml", enabled=True,
    )  # fmt: skip


def test_the_default_grants_are_enough_to_read_place_and_evict(kube: FakeKubeAPI) -> None:
    kube.authorizer = Authorizer(grants_from_manifests())
    cache, stop = ClusterCache(), threading.Event()
    errors: list[str] = []
    threads = reflectors(kube.api_client(), cache, stop, errors.append)
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: cache.ready, 20, message=f"never listed: {errors}")
    finally:
        stop.set()
        kube.end_watches()
        for thread in threads:
            thread.join(10)
    assert errors == []
    agent, _ = evictor(kube)
    assert agent.carry_out(order(kube, "batch", "p0")).outcome == "evicted"
    read_only = publisher(kube)
    read_only.enabled = False
    read_only.sync(5)  # reads the running revision: allowed


def test_publishing_needs_its_overlay(kube: FakeKubeAPI) -> None:
    kube.authorizer = Authorizer(grants_from_manifests())
    with pytest.raises(PublishError, match='cannot update resource "configmaps"'):
        publisher(kube).sync(5)
    kube.authorizer = Authorizer(grants_from_manifests("publish-config"))
    agent = publisher(kube)
    agent.sync(5)
    assert agent.running_revision == 5


def test_soft_eviction_needs_its_overlay(kube: FakeKubeAPI) -> None:
    kube.authorizer = Authorizer(grants_from_manifests())
    agent, _ = evictor(kube)
    refused = agent.carry_out(order(kube, "batch", "p1", soft=True, id_=2))
    assert (refused.status, refused.code) == ("failed", 403)
    assert 'cannot patch resource "pods"' in refused.reason
    kube.authorizer = Authorizer(grants_from_manifests("soft-eviction"))
    agent, _ = evictor(kube)
    assert agent.carry_out(order(kube, "batch", "p1", soft=True, id_=3)).status == "waiting"
    pod = client.CoreV1Api(kube.api_client()).read_namespaced_pod("p1", "batch")
    assert pod.metadata.labels["scheduling.koordinator.sh/soft-eviction"] == "true"


def test_nothing_else_is_granted(kube: FakeKubeAPI) -> None:
    """Deleting a pod, or reading another namespace's ConfigMap, is refused."""
    kube.authorizer = Authorizer(grants_from_manifests("publish-config", "soft-eviction"))
    core = client.CoreV1Api(kube.api_client())
    with pytest.raises(client.ApiException) as deleted:
        core.delete_namespaced_pod("p0", "batch")
    assert deleted.value.status == 403
    with pytest.raises(client.ApiException) as other:
        core.read_namespaced_config_map("other", "yunikorn")
    assert other.value.status == 403
