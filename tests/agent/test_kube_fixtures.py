"""The kubectl-shaped fixtures deserialise into the official client's typed models, keep every
key through a round trip (so a misspelled key cannot hide), and say what they contain.

No database: these tests build dicts and run them through ``kubernetes.client``.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from kubernetes.client import (
    V1ConfigMap,
    V1ConfigMapList,
    V1Node,
    V1NodeList,
    V1Pod,
    V1PodDisruptionBudgetList,
    V1PodList,
)

from tests.support.kube import fixtures as f
from tests.support.kube.typed import deserialize, round_trip_differences

GI = 1024**3
MI = 1024**2


def the_list(kind: str, api_version: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A list as the API server serves it: items without kind/apiVersion."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"resourceVersion": "12345"},
        "items": [
            {k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in items
        ],
    }


def assert_round_trips(raw: dict[str, Any], type_name: str) -> None:
    assert round_trip_differences(raw, type_name) == []


@pytest.fixture(scope="module")
def big_cluster() -> dict[str, Any]:
    return f.cluster()


# --- the round-trip check itself -----------------------------------------------------------------


def test_round_trip_check_reports_a_misspelled_key_the_typed_model_drops() -> None:
    item = f.pod("batch", "etl-1", node="worker-001")
    item["spec"]["schedulerNme"] = item["spec"].pop("schedulerName")
    item["metadata"]["annotation"] = {"yunikorn.apache.org/queue": "root.batch"}

    model = deserialize(item, "V1Pod")

    assert model.spec.scheduler_name is None  # the model silently lost it...
    assert sorted(round_trip_differences(item, "V1Pod")) == [  # ...and the check says so
        ".metadata.annotation: dropped by the typed model (unknown or misspelled key?)",
        ".spec.schedulerNme: dropped by the typed model (unknown or misspelled key?)",
    ]


def test_round_trip_check_reports_a_value_of_the_wrong_shape() -> None:
    item = f.node("worker-001")
    item["status"]["daemonEndpoints"]["kubeletEndpoint"]["port"] = 10250  # the real key is "Port"

    assert round_trip_differences(item, "V1Node") == [
        ".status.daemonEndpoints.kubeletEndpoint.port: dropped by the typed model "
        "(unknown or misspelled key?)"
    ]


def test_round_trip_check_reports_a_value_of_the_wrong_type() -> None:
    item = f.pod("batch", "etl-1")
    item["spec"]["priority"] = "1000"  # an int32 in the API; the client coerces it silently

    assert round_trip_differences(item, "V1Pod") == [".spec.priority: expected '1000', got 1000"]


def test_a_missing_required_field_fails_deserialisation() -> None:
    item = f.pod("batch", "etl-1")
    del item["spec"]["containers"][0]["name"]

    with pytest.raises(ValueError, match="name"):
        deserialize(item, "V1Pod")


# --- quantities and QoS ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("2", "2"),
        ("2000", "2k"),
        ("1500", "1500"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("1e3", "1e3"),
        ("128974848", "128974848"),
        ("0", "0"),
        (3, "3"),
    ],
)
def test_quantities_are_written_in_canonical_form(given: str | int, canonical: str) -> None:
    assert f.canonical_quantity(given) == canonical
    assert f.quantity_value(canonical) == f.quantity_value(given)


@pytest.mark.parametrize(
    ("containers", "init_containers", "qos"),
    [
        ([{"name": "a"}], [], "BestEffort"),
        ([{"name": "a", "limits": {"cpu": "1", "memory": "1Gi"}}], [], "Guaranteed"),
        (
            [
                {
                    "name": "a",
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                }
            ],
            [{"name": "i", "requests": {"cpu": "100m"}}],
            "Burstable",  # an init container without limits spoils Guaranteed
        ),
        (
            [{"name": "a", "requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}],
            [],
            "Burstable",
        ),
        (
            [{"name": "a", "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}],
            [],
            "BestEffort",
        ),
    ],
)
def test_pod_qos_class_is_computed_as_kubernetes_does(
    containers: list[dict[str, Any]], init_containers: list[dict[str, Any]], qos: str
) -> None:
    item = f.pod("ns", "p", containers=containers, init_containers=init_containers)

    assert item["status"]["qosClass"] == qos
    assert deserialize(item, "V1Pod").status.qos_class == qos


def test_a_limit_without_a_request_defaults_the_request_as_the_api_server_does() -> None:
    item = f.pod(
        "ns", "p", containers=[{"name": "a", "limits": {"cpu": "0.5", "memory": "1024Mi"}}]
    )

    resources = deserialize(item, "V1Pod").spec.containers[0].resources
    assert resources.requests == {"cpu": "500m", "memory": "1Gi"}
    assert resources.limits == {"cpu": "500m", "memory": "1Gi"}


def test_effective_pod_request_counts_init_containers_sidecars_and_overhead() -> None:
    item = f.pod(
        "ns",
        "p",
        containers=[{"name": "app", "requests": {"cpu": "1", "memory": "1Gi"}}],
        init_containers=[
            {"name": "migrate", "requests": {"cpu": "3", "memory": "512Mi"}},
            {
                "name": "proxy",
                "requests": {"cpu": "200m", "memory": "256Mi"},
                "restart_policy": "Always",
            },
        ],
        overhead={"cpu": "250m", "memory": "160Mi"},
    )

    # cpu: max(1 + 0.2 sidecar, 3 init) + 0.25 overhead; memory: max(1Gi + 256Mi, 512Mi) + 160Mi
    assert f.pod_request(item) == {
        "cpu": Decimal("3.25"),
        "memory": Decimal(GI + 256 * MI + 160 * MI),
        "pods": Decimal(1),
    }


# --- each builder ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"ready": False},
        {"ready": None},
        {"unschedulable": True},
        {"gpus": 8, "taints": [f.GPU_TAINT]},
        {"images": False, "labels": {"team": "ml"}},
    ],
)
def test_node_deserialises_and_round_trips(kwargs: dict[str, Any]) -> None:
    raw = f.node("worker-007", **kwargs)

    assert_round_trips(raw, "V1Node")
    model = deserialize(raw, "V1Node")
    assert isinstance(model, V1Node)
    assert model.metadata.labels["kubernetes.io/hostname"] == "worker-007"


def test_node_allocatable_is_capacity_minus_reservations() -> None:
    model = deserialize(f.node("n", cpu="16", memory="64Gi", pods="110", gpus=4), "V1Node")

    assert model.status.capacity["cpu"] == "16"
    assert model.status.allocatable["cpu"] == "15900m"
    assert model.status.capacity["memory"] == "64Gi"
    assert model.status.allocatable["memory"] == "65024Mi"
    assert model.status.allocatable["pods"] == "110"
    assert model.status.allocatable["nvidia.com/gpu"] == "4"


def test_cordoned_and_not_ready_nodes_carry_what_kubectl_and_the_node_controller_write() -> None:
    cordoned = deserialize(f.node("a", unschedulable=True), "V1Node")
    not_ready = deserialize(f.node("b", ready=False), "V1Node")
    unknown = deserialize(f.node("c", ready=None), "V1Node")
    ready = deserialize(f.node("d"), "V1Node")

    def ready_status(node: V1Node) -> str:
        return next(c.status for c in node.status.conditions if c.type == "Ready")

    assert cordoned.spec.unschedulable is True
    assert [(t.key, t.effect) for t in cordoned.spec.taints] == [
        ("node.kubernetes.io/unschedulable", "NoSchedule")
    ]
    assert ready_status(not_ready) == "False"
    assert {t.key for t in not_ready.spec.taints} == {"node.kubernetes.io/not-ready"}
    assert ready_status(unknown) == "Unknown"
    assert {t.key for t in unknown.spec.taints} == {"node.kubernetes.io/unreachable"}
    assert ready_status(ready) == "True"
    assert ready.spec.unschedulable is None and ready.spec.taints is None


POD_SHAPES: dict[str, dict[str, Any]] = {
    "running": {"node": "worker-001"},
    "pending": {},
    "bound but starting": {"node": "worker-001", "phase": "Pending"},
    "succeeded": {"node": "worker-001", "phase": "Succeeded"},
    "failed": {"node": "worker-001", "phase": "Failed"},
    "terminating": {"node": "worker-001", "terminating": True},
    "replicaset": {"node": "worker-001", "owner": ("ReplicaSet", "web-6d4cf56db6")},
    "job": {"owner": f.Owner("Job", "etl-001"), "restart_policy": "Never"},
    "daemonset": {
        "node": "worker-002",
        "owner": ("DaemonSet", "node-exporter"),
        "daemonset_node": "worker-002",
        "host_network": True,
    },
    "other scheduler": {"node": "worker-001", "scheduler_name": "default-scheduler"},
    "priority": {"priority": 1000, "priority_class": "prod-high", "preemption_policy": "Never"},
    "no preemption": {"annotations": {f.ALLOW_PREEMPTION_ANNOTATION: "false"}},
    "queue annotation and app id": {
        "annotations": {f.QUEUE_ANNOTATION: "root.prod.web", f.APP_ID_ANNOTATION: "web"}
    },
    "queue label and app id label": {
        "labels": {f.QUEUE_LABEL: "ROOT.Batch.Adhoc", f.APP_ID_LABEL: "etl"}
    },
    "gang": {
        "annotations": f.gang_annotations("workers", f.task_groups(("workers", 4, {"cpu": "1"})))
    },
    "overhead": {"node": "worker-001", "overhead": {"cpu": "250m", "memory": "160Mi"}},
    "sidecar": {
        "node": "worker-001",
        "init_containers": [
            {"name": "init", "requests": {"cpu": "100m"}},
            {"name": "proxy", "requests": {"cpu": "100m"}, "restart_policy": "Always"},
        ],
    },
    "gpu": {
        "containers": [
            {
                "name": "train",
                "requests": {"nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"},
            }
        ],
        "tolerations": [f.GPU_TOLERATION],
    },
    "best effort": {
        "containers": [{"name": "shell", "image": "busybox:1.36", "command": ["sleep", "1d"]}]
    },
}


@pytest.mark.parametrize("shape", sorted(POD_SHAPES))
def test_pod_deserialises_and_round_trips(shape: str) -> None:
    raw = f.pod("ns", "pod-1", **POD_SHAPES[shape])

    assert_round_trips(raw, "V1Pod")
    assert isinstance(deserialize(raw, "V1Pod"), V1Pod)


def test_pod_fields_the_agent_reads_survive_deserialisation() -> None:
    daemon = deserialize(f.pod("mon", "exporter-x7k2p", **POD_SHAPES["daemonset"]), "V1Pod")
    replica = deserialize(f.pod("web", "web-6d4cf56db6-abcde", **POD_SHAPES["replicaset"]), "V1Pod")
    sidecar = deserialize(f.pod("web", "web-1", **POD_SHAPES["sidecar"]), "V1Pod")
    overhead = deserialize(f.pod("sb", "kata-1", **POD_SHAPES["overhead"]), "V1Pod")
    pending = deserialize(f.pod("b", "p", **POD_SHAPES["pending"]), "V1Pod")
    terminating = deserialize(f.pod("b", "t", **POD_SHAPES["terminating"]), "V1Pod")
    annotated = deserialize(f.pod("b", "a", **POD_SHAPES["no preemption"]), "V1Pod")

    term = daemon.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    field = term.node_selector_terms[0].match_fields[0]
    assert (field.key, field.operator, field.values) == ("metadata.name", "In", ["worker-002"])
    assert daemon.metadata.owner_references[0].kind == "DaemonSet"
    assert daemon.metadata.generate_name == "node-exporter-"
    owner = replica.metadata.owner_references[0]
    assert (
        owner.api_version,
        owner.kind,
        owner.name,
        owner.controller,
        owner.block_owner_deletion,
    ) == (
        "apps/v1",
        "ReplicaSet",
        "web-6d4cf56db6",
        True,
        True,
    )
    assert replica.metadata.labels["pod-template-hash"] == "6d4cf56db6"
    assert [c.restart_policy for c in sidecar.spec.init_containers] == [None, "Always"]
    assert overhead.spec.overhead == {"cpu": "250m", "memory": "160Mi"}
    assert overhead.spec.runtime_class_name == "kata-qemu"
    assert pending.spec.node_name is None and pending.status.phase == "Pending"
    scheduled = pending.status.conditions[0]
    assert (scheduled.type, scheduled.status, scheduled.reason) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert pending.status.start_time is None
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30
    assert annotated.metadata.annotations == {f.ALLOW_PREEMPTION_ANNOTATION: "false"}


def test_spark_executors_are_owned_by_their_driver_pod() -> None:
    pods = f.spark_application(
        "spark", "sessionize", executors=3, queue="root.batch.nightly", gang=True
    )
    models = [deserialize(p, "V1Pod") for p in pods]
    driver, executors = models[0], models[1:]

    assert driver.metadata.labels["spark-role"] == "driver"
    assert driver.metadata.owner_references is None
    for executor in executors:
        reference = executor.metadata.owner_references[0]
        assert (reference.kind, reference.name, reference.uid) == (
            "Pod",
            driver.metadata.name,
            driver.metadata.uid,
        )
        assert reference.controller is True and reference.block_owner_deletion is None
        assert (
            executor.metadata.labels["spark-app-selector"]
            == driver.metadata.labels["spark-app-selector"]
        )
        assert executor.metadata.labels["queue"] == "root.batch.nightly"
    groups = json.loads(driver.metadata.annotations[f.TASK_GROUPS_ANNOTATION])
    assert [(g["name"], g["minMember"]) for g in groups] == [
        ("spark-driver", 1),
        ("spark-executor", 3),
    ]
    assert {e.metadata.annotations[f.TASK_GROUP_NAME_ANNOTATION] for e in executors} == {
        "spark-executor"
    }
    for raw in pods:
        assert_round_trips(raw, "V1Pod")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"match_labels": {"app": "web"}, "disruptions_allowed": 2, "min_available": 4},
        {
            "match_expressions": [{"key": "app", "operator": "In", "values": ["api"]}],
            "disruptions_allowed": 0,
            "max_unavailable": 0,
        },
        {"match_labels": {"app": "web"}, "min_available": "50%", "expected_pods": 6},
        {},
    ],
)
def test_pdb_deserialises_and_round_trips(kwargs: dict[str, Any]) -> None:
    raw = f.pdb("prod", "web", **kwargs)

    assert_round_trips(raw, "V1PodDisruptionBudget")
    model = deserialize(raw, "V1PodDisruptionBudget")
    allowed = kwargs.get("disruptions_allowed", 1)
    assert model.status.disruptions_allowed == allowed
    assert model.status.current_healthy - model.status.desired_healthy == allowed
    condition = model.status.conditions[0]
    assert (condition.type, condition.status) == (
        "DisruptionAllowed",
        "True" if allowed else "False",
    )


def test_pdb_selectors_survive_deserialisation() -> None:
    by_labels = deserialize(
        f.pdb("prod", "a", match_labels={"app": "web"}), "V1PodDisruptionBudget"
    )
    by_expression = deserialize(
        f.pdb(
            "prod", "b", match_expressions=[{"key": "app", "operator": "NotIn", "values": ["x"]}]
        ),
        "V1PodDisruptionBudget",
    )
    without = deserialize(f.pdb("prod", "c"), "V1PodDisruptionBudget")

    assert by_labels.spec.selector.match_labels == {"app": "web"}
    expression = by_expression.spec.selector.match_expressions[0]
    assert (expression.key, expression.operator, expression.values) == ("app", "NotIn", ["x"])
    assert without.spec.selector is None


def test_configmap_deserialises_and_round_trips() -> None:
    raw = f.configmap("yunikorn", "yunikorn-configs", {"queues.yaml": "partitions: []\n"})

    assert_round_trips(raw, "V1ConfigMap")
    model = deserialize(raw, "V1ConfigMap")
    assert isinstance(model, V1ConfigMap)
    assert model.data == {"queues.yaml": "partitions: []\n"}


# --- the whole cluster ----------------------------------------------------------------------------


def test_cluster_deserialises_as_the_list_kinds(big_cluster: dict[str, Any]) -> None:
    nodes = deserialize(the_list("NodeList", "v1", big_cluster["nodes"]), "V1NodeList")
    pods = deserialize(the_list("PodList", "v1", big_cluster["pods"]), "V1PodList")
    pdbs = deserialize(
        the_list("PodDisruptionBudgetList", "policy/v1", big_cluster["pdbs"]),
        "V1PodDisruptionBudgetList",
    )
    configmaps = deserialize(
        the_list("ConfigMapList", "v1", big_cluster["configmaps"]), "V1ConfigMapList"
    )

    assert isinstance(nodes, V1NodeList) and len(nodes.items) == 50
    assert isinstance(pods, V1PodList) and len(pods.items) == 2000
    assert isinstance(pdbs, V1PodDisruptionBudgetList) and len(pdbs.items) == 4
    assert isinstance(configmaps, V1ConfigMapList) and len(configmaps.items) == 1
    assert pods.metadata.resource_version == "12345"
    raw_requests = [
        c["resources"].get("requests") for p in big_cluster["pods"] for c in p["spec"]["containers"]
    ]
    typed_requests = [c.resources.requests for p in pods.items for c in p.spec.containers]
    assert typed_requests == raw_requests


def test_every_cluster_object_round_trips(big_cluster: dict[str, Any]) -> None:
    problems = Counter()
    for key, type_name in (
        ("nodes", "V1Node"),
        ("pods", "V1Pod"),
        ("pdbs", "V1PodDisruptionBudget"),
        ("configmaps", "V1ConfigMap"),
    ):
        for raw in big_cluster[key]:
            problems.update(round_trip_differences(raw, type_name))
    assert problems == Counter()


def test_cluster_is_deterministic_per_seed() -> None:
    first, again, other = (
        f.cluster(nodes=6, pods=80),
        f.cluster(nodes=6, pods=80),
        f.cluster(nodes=6, pods=80, seed=8),
    )

    assert first == again
    assert [p["metadata"]["name"] for p in first["pods"]] != [
        p["metadata"]["name"] for p in other["pods"]
    ]


@pytest.mark.parametrize(("nodes", "pods"), [(50, 2000), (5, 60), (12, 400)])
def test_cluster_contains_the_documented_shapes(nodes: int, pods: int) -> None:
    built = f.cluster(nodes=nodes, pods=pods)
    summary = built["summary"]
    every = built["pods"]
    gpu_nodes = max(1, nodes // 12)

    assert summary == f.summarize(built["nodes"], every, built["pdbs"], built["configmaps"])
    assert len(built["nodes"]) == nodes and len(every) == pods
    assert (summary["gpu_nodes"], summary["cordoned_nodes"], summary["not_ready_nodes"]) == (
        gpu_nodes,
        1,
        1,
    )
    assert summary["schedulable_nodes"] == nodes - 2
    assert summary["daemonset_pods"] == nodes  # node-exporter on every node, scheduled by YuniKorn
    assert summary["other_scheduler_pods"] == nodes + 2 + 3  # kube-proxy, coredns, external-report
    assert summary["terminating"] == 3
    assert summary["best_effort"] == 5
    assert summary["no_queue"] == nodes + 6  # node-exporter and analytics/dashboards
    assert summary["pdbs"] == 4 and summary["configmaps"] == 1
    assert summary["spark_drivers"] == summary["spark_apps"] >= 1
    assert (
        summary["allocations"] + summary["terminating"] + summary["asks"]
        == summary["yunikorn_pods"]
    )
    assert summary["asks"] >= 1 + 4  # debug-5 and the last ML gang
    assert sum(summary["queues"].values()) + summary["no_queue"] == summary["yunikorn_pods"]
    assert {"ROOT.Batch.Adhoc", "root.batch.nightly", "root.prod.api", "root.sandbox"} <= set(
        summary["queues"]
    )


def test_cluster_binds_pods_only_where_they_fit(big_cluster: dict[str, Any]) -> None:
    nodes = {n["metadata"]["name"]: n for n in big_cluster["nodes"]}
    used: dict[str, Counter[str]] = {name: Counter() for name in nodes}
    for item in big_cluster["pods"]:
        node_name = item["spec"].get("nodeName")
        if node_name is None:
            continue
        for resource, amount in f.pod_request(item).items():
            used[node_name][resource] += amount
        owners = {o["kind"] for o in item["metadata"].get("ownerReferences", [])}
        tolerates_gpu = any(t.get("key") == "nvidia.com/gpu" for t in item["spec"]["tolerations"])
        if "DaemonSet" not in owners:
            node = nodes[node_name]
            assert not node["spec"].get("unschedulable"), item["metadata"]["name"]
            assert "nvidia.com/gpu" not in node["status"]["allocatable"] or tolerates_gpu
    for name, node in nodes.items():
        allocatable = {k: f.quantity_value(v) for k, v in node["status"]["allocatable"].items()}
        for resource, amount in used[name].items():
            assert amount <= allocatable.get(resource, Decimal(0)), (name, resource)


def test_cluster_daemonset_pods_are_pinned_to_the_node_they_run_on(
    big_cluster: dict[str, Any],
) -> None:
    pinned = [
        p
        for p in big_cluster["pods"]
        if any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences", []))
    ]

    assert len(pinned) == 2 * 50
    for item in pinned:
        terms = item["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
            item["spec"]["nodeName"]
        ]


def test_cluster_uids_and_names_are_unique(big_cluster: dict[str, Any]) -> None:
    objects = [
        *big_cluster["nodes"],
        *big_cluster["pods"],
        *big_cluster["pdbs"],
        *big_cluster["configmaps"],
    ]

    uids = Counter(o["metadata"]["uid"] for o in objects)
    names = Counter(
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects
    )
    assert max(uids.values()) == 1
    assert max(names.values()) == 1
