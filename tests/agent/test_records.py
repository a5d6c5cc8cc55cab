"""The agent's own form of pods and nodes (``records``, built from the API server's JSON) reads
as the client's typed models do: the whole translation of a realistic cluster is the same from
either, and a record keeps only what the agent reads."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import yaml

from preemption.yunikorn import load_scheduler_config
from scheduler_admin_agent.kube import BUDGETS, NODES, PODS, ClusterCache, decode
from scheduler_admin_agent.lean import Lean, lean
from scheduler_admin_agent.records import NodeRecord, PodRecord, pod_record
from scheduler_admin_agent.translate import Reading, pod_requests, translate
from tests.support.kube import fixtures
from tests.support.kube.typed import deserialize

QUEUES_YAML = """
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: batch
            queues: [{name: nightly}, {name: adhoc}]
          - name: prod
            queues: [{name: web}, {name: api}]
          - name: research
            queues: [{name: vision}, {name: nlp}]
          - name: sandbox
"""


def product_config() -> dict[str, Any]:
    [config] = load_scheduler_config(yaml.safe_load(QUEUES_YAML))
    return {
        "partition": {"extra": json.loads(json.dumps(dict(config.settings.extra)))},
        "queues": [
            {"path": queue.path, "parent": queue.parent, "extra": dict(queue.extra)}
            for queue in config.queues
        ],
    }


def with_server_extras(raw: dict[str, Any]) -> dict[str, Any]:
    """What a real server adds that the fixtures leave out: managedFields, and kubectl's
    last-applied annotation."""
    out = copy.deepcopy(raw)
    meta = out["metadata"]
    meta["managedFields"] = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {}}]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = (
        json.dumps(raw)
    )
    return out


def test_a_cluster_translates_the_same_from_records_and_typed_objects() -> None:
    cluster = fixtures.cluster(nodes=12, pods=300)
    kinds = (
        ("nodes", "V1Node", NODES),
        ("pods", "V1Pod", PODS),
        ("pdbs", "V1PodDisruptionBudget", BUDGETS),
    )
    typed = {key: [deserialize(raw, model) for raw in cluster[key]] for key, model, _ in kinds}
    kept = {
        key: [decode(kind, with_server_extras(raw)) for raw in cluster[key]]
        for key, _, kind in kinds
    }
    assert all(isinstance(pod, PodRecord) for pod in kept["pods"])
    assert all(isinstance(node, NodeRecord) for node in kept["nodes"])
    states = [
        translate(
            objects["nodes"],
            objects["pods"],
            objects["pdbs"],
            scheduler_name="yunikorn",
            reading=Reading(product_config()),
        )
        for objects in (typed, kept)
    ]
    assert states[0].allocations and states[0].asks and states[0].budgets  # not trivially equal
    assert states[1] == states[0]


def test_a_record_keeps_only_what_the_agent_reads() -> None:
    raw = with_server_extras(fixtures.cluster(nodes=6, pods=80)["pods"][-1])
    raw["spec"]["containers"][0]["env"] = [{"name": "SECRET", "value": "x" * 1000}]
    raw["metadata"]["annotations"]["yunikorn.apache.org/allow-preemption"] = "false"
    pod = decode(PODS, raw)
    assert not hasattr(pod, "__dict__")  # slots: no dict per pod
    assert pod.notes == {"yunikorn.apache.org/allow-preemption": "false"}  # only what is read
    assert pod.labels == raw["metadata"]["labels"]
    assert pod.uid == raw["metadata"]["uid"] and pod.name == raw["metadata"]["name"]
    assert pod.created is not None and pod.created.endswith("Z")
    assert pod.created < datetime.now(UTC).isoformat()
    node = decode(NODES, copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["nodes"][0]))
    assert not hasattr(node, "__dict__") and node.ready and isinstance(node.allocatable, dict)
    budget = decode(BUDGETS, with_server_extras(fixtures.cluster(nodes=6, pods=80)["pdbs"][0]))
    assert isinstance(budget, Lean) and budget.metadata.managed_fields is None


def test_lean_objects_drop_what_the_agent_never_reads() -> None:
    raw = with_server_extras(fixtures.cluster(nodes=6, pods=80)["pdbs"][0])
    budget = lean(raw)
    assert budget.metadata.managed_fields is None
    assert "kubectl.kubernetes.io/last-applied-configuration" not in (
        budget.metadata.annotations or {}
    )
    assert budget.spec.no_such_field is None


def test_a_pods_resources_are_read_when_it_arrives_and_shared() -> None:
    """A record carries its pod's resources (read once, not at every push); pods asking for the
    same share them; a new version of a pod is a new record with its new requests."""
    raw = copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["pods"][-1])
    first, twin = pod_record(copy.deepcopy(raw)), pod_record(copy.deepcopy(raw))
    assert first.resources is twin.resources and first.resources["pods"] == 1
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "7", "memory": "1Gi"}}
    changed = pod_record(raw)
    assert changed.resources != first.resources and changed.resources["vcore"] == "7000m"
    assert pod_requests(changed)["cpu"] == 7


def test_an_unreadable_quantity_is_kept_as_the_reason() -> None:
    raw = copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["pods"][-1])
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    pod = pod_record(raw)
    assert pod.requests is None and pod.resources is None and "lots" in pod.bad_quantity


def test_a_relist_keeps_the_records_of_unchanged_objects_and_reports_only_changes() -> None:
    """A re-list (after a 410) of a large cluster holds no second copy of what did not change,
    and the next push reads only what did (same ``resourceVersion``: same object)."""
    raws = copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["pods"])
    for version, raw in enumerate(raws, 100):
        raw["metadata"]["resourceVersion"] = str(version)
    cache = ClusterCache()
    cache.replace(PODS, [cache.decoded(PODS, copy.deepcopy(raw)) for raw in raws])
    cache.take_changes()
    held = {pod.uid: pod for pod in cache.snapshot()[0][PODS]}
    changed, gone, same = raws[0], raws[1], raws[2]
    changed["metadata"]["resourceVersion"] = "999"
    changed["metadata"]["labels"]["relisted"] = "yes"
    relisted = [copy.deepcopy(raw) for raw in raws if raw is not gone]
    cache.replace(PODS, [cache.decoded(PODS, raw) for raw in relisted])
    changes, _ = cache.take_changes()
    uids = [raw["metadata"]["uid"] for raw in (changed, gone, same)]
    assert set(changes[PODS]) == {uids[0], uids[1]}
    assert changes[PODS][uids[1]] is None
    assert changes[PODS][uids[0]].labels["relisted"] == "yes"
    assert cache.pod(uids[2]) is held[uids[2]]
