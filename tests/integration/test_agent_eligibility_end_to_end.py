"""Where a waiting pod may run, end to end (SPEC 3.3): the agent pushes the nodes' taints and the
pods' tolerations from the Kubernetes API stand-in, and the product's priority preemption for a
pod that does not tolerate a GPU node's ``nvidia.com/gpu:NoSchedule`` taint never evicts there,
although the GPU node holds the cheapest victim."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from scheduler_admin.cluster.models import Node
from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition
from tests.integration.test_agent_end_to_end import PARTITION, RUN_WAIT, Stack, converged, stack
from tests.support.kube import fixtures

pytestmark = pytest.mark.redis
__all__ = ["stack"]  # the fixture, shared with the agent's other end-to-end tests

GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cluster() -> list[dict]:
    """Two full nodes: g1 (tainted, GPUs) runs a priority-0 training pod that tolerates the
    taint; n1 runs a priority-50 batch pod. A web pod of priority 100 that tolerates nothing
    waits: without the taint the priority policy would take the priority-0 pod on g1."""
    work = {"cpu": "15", "memory": "8Gi"}
    return [
        fixtures.node("g1", cpu="16", memory="64Gi", gpus=8, taints=[GPU_TAINT]),
        fixtures.node("n1", cpu="16", memory="64Gi"),
        fixtures.pod(
            "sandbox", "train-0", node="g1", priority=0, tolerations=[GPU_TOLERATION],
            containers=[{"requests": {**work, "nvidia.com/gpu": "8"}}],
            labels={"queue": "root.sandbox", "applicationId": "train"},
        ),
        fixtures.pod(
            "sandbox", "batch-0", node="n1", priority=50, containers=[{"requests": work}],
            labels={"queue": "root.sandbox", "applicationId": "batch"},
        ),
        fixtures.pod(
            "prod", "web-0", priority=100, containers=[{"requests": {"cpu": "8", "memory": "1Gi"}}],
            labels={"queue": "root.prod.web", "applicationId": "web"},
        ),
    ]  # fmt: skip


def test_a_pod_that_does_not_tolerate_the_gpu_taint_never_evicts_on_a_gpu_node(
    stack: Stack,
) -> None:
    """Slow (about 30 s): the real agent, product, worker and beat; it waits several 5-second
    sweeps to show that nothing more is evicted."""
    partition = Partition.objects.get(name=PARTITION)
    config = partition.current_config()
    config_services.save_partition_config(
        replace(config, settings=replace(config.settings, ask_policy="priority")),
        actor=None,
        comment="plan asks with priority preemption",
    )
    stack.kube.load(cluster())
    stack.agent()
    stack.wait(lambda: converged(stack.kube), "the cluster never reached the product")
    assert Node.objects.get(partition=partition, name="g1").taints == [
        {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}
    ]

    stack.wait(lambda: stack.kube.evictions(), "nothing was evicted for the web pod", RUN_WAIT)
    stack.wait(
        lambda: not EvictionOrder.objects.exclude(status=EvictionStatus.ACKNOWLEDGED).exists(),
        "the eviction was never acknowledged",
        RUN_WAIT,
    )
    time.sleep(3 * 5)  # three more sweeps: the web pod fits n1 now, nothing more is evicted
    assert stack.kube.evictions() == [("sandbox", "batch-0")]
    [order] = EvictionOrder.objects.all()
    assert order.allocation_id.startswith("sandbox/batch-0@")
