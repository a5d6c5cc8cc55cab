"""Pods and nodes read off the wire with only the fields the agent reads (``wire``) give the same
records as the whole JSON, for every shape the agent reads; the schemas name every field the
record builders touch; and a body of an unexpected shape is still read (whole)."""

from __future__ import annotations

import copy
import threading
import typing
from typing import Any

import msgspec
import orjson
import pytest

from scheduler_admin_agent import clusterdata, wire
from scheduler_admin_agent.kube import NODES, PODS, ClusterCache, Reflector, decode
from scheduler_admin_agent.records import node_record, pod_record
from tests.agent.test_records import with_server_extras
from tests.support.kube import fixtures


def _list(kind: str, items: list[dict[str, Any]]) -> bytes:
    return clusterdata.list_page(items, kind, "42", False)


def _fields(record: object) -> dict[str, Any]:
    return {name: getattr(record, name) for name in type(record).__slots__}


def required_terms(*terms: dict[str, Any]) -> dict[str, Any]:
    """A pod's ``affinity`` with required node affinity ``terms``."""
    required = {"nodeSelectorTerms": list(terms)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def edge_pods() -> list[dict[str, Any]]:
    """Pods with every part the builders read: resizes, sidecars, pod-level requests, overhead,
    gates, a DaemonSet's node, affinity, selectors, tolerations, owners, deletion, a user."""
    base = fixtures.cluster(nodes=6, pods=62)["pods"][0]
    pods = []

    def variant(change: Any) -> None:
        pod = with_server_extras(base)
        pod["metadata"]["name"] = f"edge-{change.__name__}"
        pod["metadata"]["uid"] = f"uid-{change.__name__}"
        change(pod)
        pods.append(pod)

    def resized(pod: dict[str, Any]) -> None:
        name = pod["spec"]["containers"][0]["name"]
        pod["status"]["containerStatuses"] = [{
            "name": name, "allocatedResources": {"cpu": "3"},
            "resources": {"requests": {"cpu": "5"}, "limits": {"cpu": "6"}},
            "image": "x", "ready": True, "restartCount": 0,
        }]  # fmt: skip
        pod["status"]["resize"] = "InProgress"

    def infeasible(pod: dict[str, Any]) -> None:
        resized(pod)
        pod["status"].pop("resize")
        pod["status"].setdefault("conditions", []).append(
            {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
        )

    def sidecars(pod: dict[str, Any]) -> None:
        pod["spec"]["initContainers"] = [
            {"name": "mesh", "restartPolicy": "Always", "image": "envoy",
             "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "setup", "image": "busybox", "resources": {"limits": {"cpu": "4"}}},
        ]  # fmt: skip
        pod["status"]["initContainerStatuses"] = [
            {"name": "mesh", "allocatedResources": {"cpu": "300m"}, "ready": True}
        ]

    def pod_level(pod: dict[str, Any]) -> None:
        pod["spec"]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
        pod["spec"]["overhead"] = {"cpu": "250m"}

    def pending(pod: dict[str, Any]) -> None:
        pod["spec"].pop("nodeName", None)
        pod["status"] = {"phase": "Pending", "nominatedNodeName": "node-1", "qosClass": "Burstable"}
        pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
        pod["spec"]["nodeSelector"] = {"disk": "ssd"}
        pod["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
        pod["spec"]["affinity"] = required_terms(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
        )
        pod["spec"]["priority"] = 1000
        pod["spec"]["priorityClassName"] = "high"
        pod["spec"]["preemptionPolicy"] = "Never"

    def daemon(pod: dict[str, Any]) -> None:
        pod["metadata"]["ownerReferences"] = [
            {"kind": "DaemonSet", "name": "agent", "uid": "ds-1", "controller": True}
        ]
        pod["spec"]["affinity"] = required_terms(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}
        )

    def owned_and_leaving(pod: dict[str, Any]) -> None:
        pod["metadata"]["ownerReferences"] = [
            {"kind": "Pod", "name": "driver", "uid": "driver-uid"},
            {"kind": "SparkApplication", "name": "job", "uid": "app-uid", "controller": True},
        ]
        pod["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00.123456Z"
        pod["metadata"]["annotations"].update({
            "yunikorn.apache.org/user.info": '{"user": "ana", "groups": ["ml"]}',
            "yunikorn.apache.org/queue": "root.batch", "yunikorn.apache.org/app-id": "job-1",
            "yunikorn.apache.org/allow-preemption": "false",
            "yunikorn.apache.org/task-group-name": "workers",
        })  # fmt: skip

    for change in (resized, infeasible, sidecars, pod_level, pending, daemon, owned_and_leaving):
        variant(change)
    return pods


def all_pods() -> list[dict[str, Any]]:
    cluster = fixtures.cluster(nodes=12, pods=300)
    return (
        [with_server_extras(pod) for pod in cluster["pods"]]
        + [clusterdata.pod(i, 50) for i in range(0, 2000, 37)]
        + edge_pods()
    )


def all_nodes() -> list[dict[str, Any]]:
    nodes = [with_server_extras(node) for node in fixtures.cluster(nodes=12, pods=300)["nodes"]]
    tainted = copy.deepcopy(nodes[0])
    tainted["spec"] = {"unschedulable": True, "taints": [{"key": "gpu", "effect": "NoSchedule"}]}
    return [*nodes, tainted, *(clusterdata.node(i) for i in range(20))]


@pytest.mark.parametrize(
    ("kind", "objects", "build"),
    [(PODS, all_pods, pod_record), (NODES, all_nodes, node_record)],
    ids=[PODS, NODES],
)
def test_the_records_are_the_same_as_from_the_whole_json(kind, objects, build) -> None:
    items = objects()
    body = _list(kind, items)
    whole = orjson.loads(body)["items"]
    trimmed = wire.read_list(kind, body)
    assert len(trimmed["items"]) == len(items) and len(orjson.dumps(trimmed)) < 0.75 * len(body)
    assert [_fields(build(raw)) for raw in trimmed["items"]] == [
        _fields(build(raw)) for raw in whole
    ]
    for event in ("ADDED", "MODIFIED", "DELETED"):
        line = clusterdata.watch_line(event, items[-1])
        assert wire.read_event(kind, line) == (event, trimmed["items"][-1])


class _Reading(dict):
    """A JSON object that notes the path of every field read from it (and from what is in it)."""

    def __init__(self, value: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__(value)
        self.path, self.seen = path, seen

    def _noted(self, key: str, value: Any) -> Any:
        path = f"{self.path}.{key}"
        self.seen.add(path)
        return _watched(value, path, self.seen)

    def get(self, key: str, default: Any = None) -> Any:
        return self._noted(key, super().get(key, default))

    def __getitem__(self, key: str) -> Any:
        return self._noted(key, super().__getitem__(key))

    def items(self):  # reading every field: the whole object is read
        self.seen.add(f"{self.path}.*")
        return super().items()


def _watched(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return _Reading(value, path, seen)
    if isinstance(value, list):
        return [_watched(item, f"{path}[]", seen) for item in value]
    return value


def _schema_paths(schema: Any, path: str) -> set[str]:
    """Every path a schema decodes; a field of any type is decoded whole (``path.*``)."""
    if schema is Any or schema is msgspec.Raw:
        return {f"{path}.*"}
    if typing.get_origin(schema) is list:
        return _schema_paths(typing.get_args(schema)[0], f"{path}[]")
    paths = set()
    for name, field in typing.get_type_hints(schema).items():
        paths |= {f"{path}.{name}"} | _schema_paths(field, f"{path}.{name}")
    return paths


def _covered(read: str, decoded: set[str]) -> bool:
    """Whether the schema decodes the field at ``read`` (list levels aside)."""
    read, decoded = read.replace("[]", ""), {path.replace("[]", "") for path in decoded}
    parts = read.split(".")
    return read in decoded or any(
        ".".join(parts[:n]) + ".*" in decoded for n in range(1, len(parts))
    )


@pytest.mark.parametrize(
    ("schema", "objects", "build"),
    [(wire.Pod, all_pods, pod_record), (wire.Node, all_nodes, node_record)],
    ids=[PODS, NODES],
)
def test_the_schemas_name_every_field_the_records_read(schema, objects, build) -> None:
    seen: set[str] = set()
    for raw in objects():
        build(_Reading(raw, "", seen))
    decoded = _schema_paths(schema, "")
    missing = sorted(path for path in seen if not _covered(path, decoded))
    assert seen and not missing, f"read by the records, skipped by wire's schema: {missing}"


def test_a_body_of_another_shape_is_read_whole() -> None:
    pod = with_server_extras(fixtures.cluster(nodes=6, pods=62)["pods"][0])
    odd = copy.deepcopy(pod)
    odd["spec"]["containers"] = None  # not a list: the schema refuses it, the whole read does not
    body = _list(PODS, [odd, pod])
    assert wire.read_list(PODS, body) == orjson.loads(body)
    assert wire.read_list("namespaces", b'{"items": [{"metadata": {"name": "a"}}]}') == {
        "items": [{"metadata": {"name": "a"}}]
    }
    with pytest.raises(orjson.JSONDecodeError):
        wire.read_list(PODS, b'{"items": [')


def test_an_error_event_keeps_its_status_whole() -> None:
    line = orjson.dumps(
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                     "message": "too old resource version"}}
    )  # fmt: skip
    assert wire.read_event(PODS, line) == ("ERROR", orjson.loads(line)["object"])
    bookmark = {"metadata": {"resourceVersion": "7"}}
    line = orjson.dumps({"type": "BOOKMARK", "object": bookmark})
    assert wire.read_event(PODS, line) == ("BOOKMARK", bookmark)


def test_a_reflector_lists_pods_through_the_schema() -> None:
    """The list path: pages read by ``Reflector._list`` hold the records the whole JSON gives."""
    pods = edge_pods()
    pages = [clusterdata.list_page(pods[:3], PODS, "42", True), _list(PODS, pods[3:])]

    def list_call(**kwargs: Any) -> Any:
        body = pages[1] if kwargs.get("_continue") else pages[0]
        return _Response(body)

    cache = ClusterCache()
    Reflector(PODS, list_call, cache, threading.Event())._list()
    held = sorted((_fields(pod) for pod in cache.snapshot()[0][PODS]), key=lambda f: f["uid"])
    assert held == sorted((_fields(decode(PODS, pod)) for pod in pods), key=lambda f: f["uid"])


class _Response:
    def __init__(self, body: bytes) -> None:
        self.data = body

    def release_conn(self) -> None:
        pass
