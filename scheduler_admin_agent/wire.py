"""Reading pods and nodes off the wire: only the fields the agent reads are decoded.

A pod as the API server sends it is about 5.9 KB of JSON, most of it ``managedFields``, the
containers' images, environment, ports, probes and mounts, and the status's conditions and
container states: nothing the agent reads. ``orjson.loads`` still builds a Python object for
every one of those values, and the record (``records.pod_record``) then throws them away; on a
150,000-pod list that was most of the agent's CPU. Here the list and watch bodies of pods and
nodes are decoded with ``msgspec`` against schemas (``TypedDict``) that name only what
``records`` and ``podresources`` read: fields not named are skipped by the parser without being
built, and what comes out is the same plain JSON (dicts and lists) with the rest left out, so
the records are built exactly as from a full decode.

A body whose named fields do not have the shape the schema says (a ``null`` where a list
belongs, say) is decoded whole, with ``orjson``, as before: slower, never refused. The other
kinds (namespaces, budgets, PriorityClasses) are few and read whole.

``tests/agent/test_wire.py`` holds the schemas to what the records read: every field the
builders read from a pod or a node must be named here.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec
import orjson

#: The kinds with a schema (the cache's names for them, as in ``kube``).
PODS, NODES = "pods", "nodes"


class _Metadata(TypedDict, total=False):
    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    labels: Any
    annotations: Any
    ownerReferences: Any


class _Requirements(TypedDict, total=False):
    limits: Any
    requests: Any


class _Container(TypedDict, total=False):
    name: Any
    resources: _Requirements
    restartPolicy: Any


class _PodSpec(TypedDict, total=False):
    schedulerName: Any
    nodeName: Any
    schedulingGates: Any
    priority: Any
    priorityClassName: Any
    preemptionPolicy: Any
    nodeSelector: Any
    affinity: Any
    tolerations: Any
    containers: list[_Container]
    initContainers: list[_Container]
    resources: _Requirements
    overhead: Any


class _PodCondition(TypedDict, total=False):
    type: Any
    reason: Any


class _ContainerStatus(TypedDict, total=False):
    name: Any
    allocatedResources: Any
    resources: _Requirements


class _PodStatus(TypedDict, total=False):
    phase: Any
    startTime: Any
    nominatedNodeName: Any
    qosClass: Any
    resize: Any
    conditions: list[_PodCondition]
    containerStatuses: list[_ContainerStatus]
    initContainerStatuses: list[_ContainerStatus]


class Pod(TypedDict, total=False):
    """A pod, as far as the agent reads it."""

    metadata: _Metadata
    spec: _PodSpec
    status: _PodStatus


class _NodeSpec(TypedDict, total=False):
    unschedulable: Any
    taints: Any


class _NodeCondition(TypedDict, total=False):
    type: Any
    status: Any


class _NodeStatus(TypedDict, total=False):
    allocatable: Any
    conditions: list[_NodeCondition]


class Node(TypedDict, total=False):
    """A node, as far as the agent reads it."""

    metadata: _Metadata
    spec: _NodeSpec
    status: _NodeStatus


class _PodList(TypedDict, total=False):
    metadata: Any
    items: list[Pod]


class _NodeList(TypedDict, total=False):
    metadata: Any
    items: list[Node]


class _Event(TypedDict, total=False):
    type: Any
    object: msgspec.Raw


_LISTS = {PODS: msgspec.json.Decoder(_PodList), NODES: msgspec.json.Decoder(_NodeList)}
_OBJECTS = {PODS: msgspec.json.Decoder(Pod), NODES: msgspec.json.Decoder(Node)}
_EVENT = msgspec.json.Decoder(_Event)


def read_list(kind: str, body: bytes) -> dict[str, Any]:
    """A list body of ``kind`` (its ``metadata`` and ``items``), pods and nodes with only the
    fields the agent reads."""
    decoder = _LISTS.get(kind)
    if decoder is not None:
        try:
            return decoder.decode(body)
        except msgspec.DecodeError:
            pass  # not the shape the schema names (or not JSON): read whole, as any body
    return orjson.loads(body)


def read_event(kind: str, line: bytes) -> tuple[Any, dict[str, Any]]:
    """A watch stream's line: its event type and object (an object of ``kind`` read as in
    ``read_list``; an ``ERROR`` event's ``Status`` whole)."""
    try:
        event = _EVENT.decode(line)
    except msgspec.DecodeError:
        event = None
    if event is None or not isinstance(event, dict) or "object" not in event:
        whole = orjson.loads(line)
        return whole.get("type"), whole.get("object") or {}
    kind_of_event, raw = event.get("type"), event["object"]
    decoder = _OBJECTS.get(kind)
    if decoder is not None and kind_of_event != "ERROR":
        try:
            return kind_of_event, decoder.decode(raw)
        except msgspec.DecodeError:
            pass
    return kind_of_event, orjson.loads(bytes(raw)) or {}
