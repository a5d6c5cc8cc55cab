"""Kubernetes objects -> cluster-state items (``scheduler_admin_agent.translate``), on the
client's typed models built from JSON the way the client builds them from an API answer."""

from __future__ import annotations

import json
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client import ApiClient

from scheduler_admin_agent.quantities import QuantityError, parse_quantity, product_resources
from scheduler_admin_agent.translate import (
    ID_MAX_LENGTH,
    Reading,
    pod_application,
    pod_id,
    pod_queue,
    pod_requests,
    required_node,
    selector_matches,
    translate,
    uid_of,
)

_API = ApiClient()
_counter = iter(range(1, 10**6))


def typed(kind: str, data: dict[str, Any]) -> Any:
    return _API.deserialize(SimpleNamespace(data=json.dumps(data)), kind)


def node(name: str, *, cpu: str = "8", memory: str = "32Gi", ready: bool = True, **spec: Any):
    return typed(
        "V1Node",
        {
            "metadata": {"name": name, "uid": f"node-{name}"},
            "spec": spec,
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        },
    )


def container(requests: dict | None = None, limits: dict | None = None, **extra: Any) -> dict:
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": f"c{next(_counter)}", "image": "busybox", "resources": resources, **extra}


def pod(
    name: str,
    *,
    namespace: str = "batch",
    node_name: str | None = "n1",
    containers: list | None = None,
    labels: dict | None = None,
    annotations: dict | None = None,
    owners: list | None = None,
    created: str = "2026-01-01T10:00:00Z",
    started: str | None = None,
    scheduler: str = "yunikorn",
    uid: str | None = None,
    **spec: Any,
):
    data = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "labels": labels or {},
            "annotations": annotations or {},
            "creationTimestamp": created,
            "ownerReferences": owners or [],
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": containers or [container({"cpu": "1", "memory": "1Gi"})],
            **({"nodeName": node_name} if node_name else {}),
            **spec,
        },
        "status": {"phase": "Running" if node_name else "Pending", "qosClass": "Burstable"},
    }
    if started or node_name:
        data["status"]["startTime"] = started or created
    return typed("V1Pod", data)


# --- Quantities -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("1.5Gi", Fraction(3, 2) * 2**30),
        ("250m", Fraction(1, 4)),
        ("1e3", 1000),
        ("1E-2", Fraction(1, 100)),
        (".5", Fraction(1, 2)),
        ("2k", 2000),
        ("100Mi", 100 * 2**20),
        ("5n", Fraction(5, 10**9)),
        ("+3", 3),
    ],
)
def test_quantities_are_read_exactly(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.5.5", "Gi", "1ki", "1 Gi x", "--1", "1e", "abc"])
def test_malformed_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_cpu_becomes_vcore_millicores_written_with_m_and_amounts_round_up() -> None:
    assert product_resources(
        {"cpu": Fraction(1, 4), "memory": Fraction(1, 2), "nvidia.com/gpu": Fraction(2)}
    ) == {"vcore": "250m", "memory": 1, "nvidia.com/gpu": 2}
    assert product_resources({"cpu": parse_quantity("1.0001")}) == {"vcore": "1001m"}
    assert product_resources({"memory": Fraction(0)}) == {}


# --- Effective requests ---------------------------------------------------------------------


def test_requests_sum_containers_and_take_the_larger_init_container() -> None:
    p = pod(
        "p",
        containers=[container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "500m"})],
        initContainers=[container({"cpu": "3", "memory": "512Mi"})],
    )
    assert pod_requests(p) == {"cpu": 3, "memory": 2**30}


def test_sidecars_add_to_the_app_and_to_later_init_containers() -> None:
    """Kubernetes 1.29+: a restartable init container runs beside everything after it."""
    p = pod(
        "p",
        containers=[container({"cpu": "1"})],
        initContainers=[
            container({"cpu": "500m"}, restartPolicy="Always"),
            container({"cpu": "1200m"}),
        ],
    )
    # app: 1 + 0.5 sidecar = 1.5; init peak: 0.5 sidecar + 1.2 = 1.7
    assert pod_requests(p) == {"cpu": Fraction(17, 10)}


def test_overhead_is_added_and_a_limit_stands_in_for_a_missing_request() -> None:
    p = pod(
        "p",
        containers=[container(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "1"})],
        overhead={"cpu": "100m", "memory": "64Mi"},
    )
    assert pod_requests(p) == {"cpu": Fraction(11, 10), "memory": 2**30 + 64 * 2**20}


# --- Names ----------------------------------------------------------------------------------


def test_the_queue_a_pod_names_is_read_as_k8shim_reads_it() -> None:
    """Label, then annotation, then the plain label; as written (placement decides the rest)."""
    assert pod_queue(pod("p", labels={"queue": "ROOT.A"})) == "ROOT.A"
    both = pod(
        "p", labels={"queue": "root.label"}, annotations={"yunikorn.apache.org/queue": "root.ann"}
    )
    assert pod_queue(both) == "root.ann"
    canonical = pod(
        "p",
        labels={"queue": "root.label", "yunikorn.apache.org/queue": "root.canonical"},
        annotations={"yunikorn.apache.org/queue": "root.ann"},
    )
    assert pod_queue(canonical) == "root.canonical"
    assert pod_queue(pod("p")) == ""


def test_application_ids_follow_yunikorn() -> None:
    assert pod_application(pod("p", labels={"applicationId": "a1"})) == "a1"
    assert (
        pod_application(
            pod(
                "p",
                labels={"applicationId": "a1"},
                annotations={"yunikorn.apache.org/app-id": "a2"},
            )
        )
        == "a2"
    )
    assert pod_application(pod("p", labels={"spark-app-selector": "spark-1"})) == "spark-1"
    assert pod_application(pod("p", namespace="ns")) == "yunikorn-ns-autogen"


def test_ids_carry_the_uid_and_fit_the_product() -> None:
    short = pod("web-0", uid="1111")
    assert pod_id(short) == "batch/web-0@1111"
    assert uid_of(pod_id(short)) == "1111"
    uid = "3f6c2a9e-1b7d-4c1a-9e8f-0123456789ab"
    long = pod("x" * 253, namespace="n" * 63, uid=uid)
    assert len(pod_id(long)) == ID_MAX_LENGTH
    assert uid_of(pod_id(long)) == uid
    assert uid_of("plain-id") == ""


def test_daemonset_pods_require_the_node_of_their_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
                ]
            }
        }
    }
    owner = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "d", "controller": True}
    ]
    assert required_node(pod("ds-1", node_name=None, owners=owner, affinity=affinity)) == "n7"
    assert required_node(pod("ds-2", owners=owner)) == "n1"  # bound, no affinity
    assert required_node(pod("plain", affinity=affinity)) == ""


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
    ],
)
def test_budget_selectors_match_as_kubernetes_does(
    selector: dict, labels: dict, matches: bool
) -> None:
    pdb = typed(
        "V1PodDisruptionBudget", {"metadata": {"name": "b"}, "spec": {"selector": selector}}
    )
    assert selector_matches(pdb.spec.selector, labels) is matches
    assert selector_matches(None, labels) is False


# --- The whole cluster ----------------------------------------------------------------------


#: A partition with root (open to everyone), root.default and root.batch.
CONFIG = {
    "partition": {"extra": {}},
    "queues": [
        {"path": "root", "parent": None, "extra": {"submitacl": "*"}},
        {"path": "root.default", "parent": "root", "extra": {}},
        {"path": "root.batch", "parent": "root", "extra": {}},
    ],
}


def _translate(nodes: list, pods: list, pdbs: list | None = None, config: dict | None = None):
    return translate(
        nodes, pods, pdbs or [], scheduler_name="yunikorn", reading=Reading(config or CONFIG)
    )


def test_a_cluster_becomes_nodes_allocations_asks_and_budgets() -> None:
    nodes = [node("n1"), node("n2", unschedulable=True), node("n3", ready=False)]
    driver = pod(
        "driver",
        labels={"spark-role": "driver", "spark-app-selector": "spark-1", "queue": "root.Batch"},
        created="2026-01-01T10:00:00Z",
        started="2026-01-01T10:00:05Z",
        priorityClassName="high",
        priority=100,
    )
    executor = pod(
        "exec-1",
        labels={"spark-app-selector": "spark-1", "app": "web", "queue": "root.other"},
        owners=[{"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": "uid-driver"}],
        created="2026-01-01T10:01:00Z",
        annotations={"yunikorn.apache.org/allow-preemption": "false"},
    )
    pending = pod(
        "gang-0",
        node_name=None,
        labels={"applicationId": "g1", "queue": "root.batch"},
        annotations={"yunikorn.apache.org/task-group-name": "workers"},
        preemptionPolicy="Never",
    )
    foreign = pod(
        "other",
        scheduler="default-scheduler",
        containers=[container({"cpu": "2", "memory": "4Gi"})],
    )
    finished = pod("done", labels={"queue": "root.batch"})
    finished.status.phase = "Succeeded"
    pdb = typed(
        "V1PodDisruptionBudget",
        {
            "metadata": {"name": "web-pdb", "namespace": "batch"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                       "expectedPods": 1},
        },
    )  # fmt: skip
    state = _translate(nodes, [driver, executor, pending, foreign, finished], [pdb])

    assert state.nodes["n1"] == {
        "name": "n1",
        "capacity": {"vcore": "6000m", "memory": 28 * 2**30, "pods": 109},  # minus "other"
        "schedulable": True,
    }
    assert state.nodes["n2"]["schedulable"] is False  # cordoned
    assert state.nodes["n3"]["schedulable"] is False  # not ready
    assert set(state.allocations) == {"batch/driver@uid-driver", "batch/exec-1@uid-exec-1"}
    d = state.allocations["batch/driver@uid-driver"]
    assert d == {
        "id": "batch/driver@uid-driver",
        "app": "spark-1",
        "queue": "root.batch",
        "user": "nobody",
        "resources": {"vcore": "1000m", "memory": 2**30, "pods": 1},
        "priority": 100,
        "allow_preemption": True,
        "node": "n1",
        "originator": True,
        "created_at": "2026-01-01T10:00:05Z",
        "qos": "Burstable",
    }
    e = state.allocations["batch/exec-1@uid-exec-1"]
    assert e["queue"] == "root.batch"  # the application's queue, not its own label's
    assert e["originator"] is False
    assert e["allow_preemption"] is False
    assert e["pdb"] == "batch/web-pdb"
    assert state.asks["batch/gang-0@uid-gang-0"] == {
        "id": "batch/gang-0@uid-gang-0",
        "app": "g1",
        "queue": "root.batch",
        "user": "nobody",
        "resources": {"vcore": "1000m", "memory": 2**30, "pods": 1},
        "priority": 0,
        "allow_preemption": True,
        "job": "g1",
        "created_at": "2026-01-01T10:00:00Z",
        "preemption_policy": "Never",
    }
    assert state.budgets == {"batch/web-pdb": {"name": "batch/web-pdb", "allowed_disruptions": 0}}


def test_pods_outside_the_partition_queues_or_nodes_are_left_out_with_the_reason() -> None:
    state = _translate(
        [node("n1")],
        [
            pod("in", labels={"queue": "root.batch"}),
            pod("lost", labels={"queue": "root.no!where", "applicationId": "lost"}),
            pod("elsewhere", labels={"queue": "root.nowhere", "applicationId": "e"}),
            pod("orphan", labels={"queue": "root.batch", "applicationId": "x"}, node_name="gone"),
            pod(
                "long",
                labels={"queue": "root.batch"},
                annotations={"yunikorn.apache.org/app-id": "a" * 254},
            ),
        ],
    )
    # A queue that does not exist passes to the next rule, and then to root.default.
    assert set(state.allocations) == {"batch/in@uid-in", "batch/elsewhere@uid-elsewhere"}
    assert state.allocations["batch/elsewhere@uid-elsewhere"]["queue"] == "root.default"
    assert state.skipped == {
        "batch/lost@uid-lost": "YuniKorn does not place application lost: invalid queue name "
        "'no!where': 1 to 64 of letters, digits and _ : # / @ -",
        "batch/orphan@uid-orphan": "node gone is not in the cluster's node list",
        "batch/long@uid-long": "application id longer than 253 characters",
    }


def test_without_a_driver_the_oldest_pod_or_the_owning_pod_is_the_originator() -> None:
    a = pod("a", labels={"applicationId": "x"}, created="2026-01-01T10:00:02Z")
    b = pod("b", labels={"applicationId": "x"}, created="2026-01-01T10:00:01Z")
    state = _translate([node("n1")], [a, b])
    assert state.allocations["batch/b@uid-b"]["originator"] is True
    assert state.allocations["batch/a@uid-a"]["originator"] is False
    owned = pod(
        "c",
        labels={"applicationId": "y"},
        created="2026-01-01T09:00:00Z",
        owners=[{"apiVersion": "v1", "kind": "Pod", "name": "d", "uid": "uid-d"}],
    )
    owner = pod("d", labels={"applicationId": "y"}, created="2026-01-01T11:00:00Z")
    state = _translate([node("n1")], [owned, owner])
    assert state.allocations["batch/d@uid-d"]["originator"] is True
    assert state.allocations["batch/c@uid-c"]["originator"] is False


def test_terminating_pods_hold_their_node_until_gone_and_are_never_victims_again() -> None:
    """k8shim keeps a terminating pod's task until the pod is gone, and the scheduler counts it
    on its node: it stays an allocation, never a victim again. An unbound one is no demand."""
    going = pod("going", labels={"queue": "root.batch"})
    going.metadata.deletion_timestamp = going.metadata.creation_timestamp
    leaving = pod("leaving", labels={"queue": "root.batch"}, node_name=None)
    leaving.metadata.deletion_timestamp = leaving.metadata.creation_timestamp
    state = _translate([node("n1")], [going, leaving])
    assert state.allocations["batch/going@uid-going"]["allow_preemption"] is False
    assert state.allocations["batch/going@uid-going"]["node"] == "n1"
    assert state.asks == {}
    other = pod("other", scheduler="default-scheduler", containers=[container({"cpu": "2"})])
    other.metadata.deletion_timestamp = other.metadata.creation_timestamp
    assert _translate([node("n1")], [other]).nodes["n1"]["capacity"]["vcore"] == "6000m"
