"""The agent's raw-JSON objects (``lean``) read as the client's typed models do: the whole
translation of a realistic cluster is the same from either, and what is dropped is what the
agent never reads."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import yaml

from preemption.yunikorn import load_scheduler_config
from scheduler_admin_agent import translate as translate_module
from scheduler_admin_agent.lean import Lean, lean
from scheduler_admin_agent.translate import Reading, translate
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


def test_a_cluster_translates_the_same_from_lean_and_typed_objects() -> None:
    cluster = fixtures.cluster(nodes=12, pods=300)
    kinds = (("nodes", "V1Node"), ("pods", "V1Pod"), ("pdbs", "V1PodDisruptionBudget"))
    typed = {key: [deserialize(raw, model) for raw in cluster[key]] for key, model in kinds}
    leaned = {key: [lean(with_server_extras(raw)) for raw in cluster[key]] for key, _ in kinds}
    states = [
        translate(
            objects["nodes"],
            objects["pods"],
            objects["pdbs"],
            scheduler_name="yunikorn",
            reading=Reading(product_config()),
        )
        for objects in (typed, leaned)
    ]
    assert states[0].allocations and states[0].asks and states[0].budgets  # not trivially equal
    assert states[1] == states[0]


def test_lean_objects_read_like_typed_ones_and_drop_what_the_agent_never_reads() -> None:
    raw = with_server_extras(fixtures.cluster(nodes=6, pods=80)["pods"][-1])
    raw["spec"]["containers"][0]["env"] = [{"name": "SECRET", "value": "x" * 1000}]
    pod = lean(raw)
    assert isinstance(pod.metadata, Lean) and pod.metadata.managed_fields is None
    assert "kubectl.kubernetes.io/last-applied-configuration" not in pod.metadata.annotations
    assert isinstance(pod.metadata.labels, dict)
    assert pod.metadata.creation_timestamp.tzinfo is not None
    assert pod.metadata.creation_timestamp < datetime.now(UTC)
    assert pod.spec.containers[0].env is None and pod.spec.volumes is None
    assert isinstance(pod.spec.containers[0].resources.requests, dict)
    assert pod.spec.no_such_field is None
    node = lean(copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["nodes"][0]))
    assert node.status.images is None and isinstance(node.status.allocatable, dict)


def test_a_pods_resources_are_read_once_per_version() -> None:
    """Unchanged pods (same uid and resourceVersion) reuse their parsed resources; a write to a
    pod gives it a new version, so its new requests are read."""
    raw = copy.deepcopy(fixtures.cluster(nodes=6, pods=80)["pods"][-1])
    raw["metadata"]["resourceVersion"] = "41"
    before = translate_module.task_resources(lean(copy.deepcopy(raw)))
    assert (raw["metadata"]["uid"], "41") in translate_module._MEMO
    assert translate_module.task_resources(lean(copy.deepcopy(raw))) == before
    raw["metadata"]["resourceVersion"] = "42"
    raw["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "7", "memory": "1Gi"}}
    after = translate_module.task_resources(lean(copy.deepcopy(raw)))
    assert after != before and after["vcore"] != before["vcore"]
