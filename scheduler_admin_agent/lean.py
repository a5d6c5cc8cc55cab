"""Objects decoded from the API server's JSON, keeping only what the agent reads.

The official client's typed models (``V1Pod`` and the rest) build a Python object per field
of every object, timestamps parsed, before the agent looks at any of it; on a cluster of
Kubernetes' documented size (5,000 nodes, 150,000 pods) most of that work and memory goes to
fields the agent never reads: ``managedFields``, volumes, environment, probes, container
images, a node's image list. The reflectors therefore ask for the raw body
(``_preload_content=False``), decode it with ``json`` and keep each object as a ``Lean``: the
JSON dict with those fields dropped, read through the same attribute names as the typed models
(``pod.spec.node_name``, ``node.status.allocatable``), so ``translate`` works on either.

What a ``Lean`` gives, as the typed models do: a nested object for a struct, a plain ``dict``
for a map (labels, annotations, resource lists, selectors' ``matchLabels``), a list for a
list, a ``datetime`` for ``creationTimestamp``, ``deletionTimestamp`` and ``startTime``, and
None for a field that is absent.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Any

#: JSON keys whose value is a map (``map[string]...``): kept as a dict, not a struct.
MAPS = frozenset(
    {
        "labels",
        "annotations",
        "nodeSelector",
        "allocatable",
        "capacity",
        "requests",
        "limits",
        "matchLabels",
        "allocatedResources",
        "overhead",
        "disruptedPods",
        "data",
        "binaryData",
    }
)
TIMESTAMPS = frozenset({"creationTimestamp", "deletionTimestamp", "startTime"})
#: Annotations nothing the agent reads and that can be as large as the object itself.
DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
#: Fields of a container the agent reads (its requests; restartPolicy marks a sidecar).
CONTAINER_FIELDS = ("name", "resources", "restartPolicy")
#: Fields of a container status the agent reads (in-place resize).
CONTAINER_STATUS_FIELDS = ("name", "resources", "allocatedResources")
#: Pod spec fields never read.
POD_SPEC_DROPPED = (
    "volumes",
    "securityContext",
    "dnsConfig",
    "hostAliases",
    "imagePullSecrets",
    "readinessGates",
    "ephemeralContainers",
    "resourceClaims",
    "os",
)
#: Node status fields never read.
NODE_STATUS_DROPPED = (
    "images",
    "nodeInfo",
    "volumesAttached",
    "volumesInUse",
    "addresses",
    "daemonEndpoints",
    "config",
    "features",
    "runtimeHandlers",
)


_UPPER = re.compile(r"(?<!^)(?=[A-Z])")


@cache
def _attribute(key: str) -> str:
    """``schedulerName`` -> ``scheduler_name``; ``continue`` -> ``_continue`` (as the typed
    models spell a Python keyword)."""
    name = _UPPER.sub("_", key).lower()
    return f"_{name}" if name in ("continue", "from", "not", "exec") else name


def _value(key: str, value: Any) -> Any:
    if isinstance(value, dict):
        return value if key in MAPS else Lean(value)
    if isinstance(value, list):
        return [Lean(item) if isinstance(item, dict) else item for item in value]
    if key in TIMESTAMPS and isinstance(value, str):
        return _timestamp(value)
    return value


_FRACTION = re.compile(r"\.\d+")


def _timestamp(text: str) -> datetime | None:
    for candidate in (text, _FRACTION.sub("", text)):
        try:
            return datetime.fromisoformat(candidate.replace("Z", "+00:00"))
        except ValueError:
            continue
    return None


class Lean:
    """One decoded JSON object with attribute access (see the module docstring). Converted
    once, when it arrives; a field that is absent reads as None."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(
            (_attribute(key), _value(key, value))
            for key, value in data.items()
            if value is not None
        )

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lean) and other.__dict__ == self.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Lean({self.__dict__!r})"


def prune(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop, in place, what the agent never reads (see the module docstring)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            for name in DROPPED_ANNOTATIONS:
                annotations.pop(name, None)
    spec, status = obj.get("spec"), obj.get("status")
    if isinstance(spec, dict) and "containers" in spec:  # a pod
        for name in POD_SPEC_DROPPED:
            spec.pop(name, None)
        for key in ("containers", "initContainers"):
            if isinstance(spec.get(key), list):
                spec[key] = [_only(c, CONTAINER_FIELDS) for c in spec[key]]
        if isinstance(status, dict):
            for key in ("containerStatuses", "initContainerStatuses"):
                if isinstance(status.get(key), list):
                    status[key] = [_only(c, CONTAINER_STATUS_FIELDS) for c in status[key]]
            status.pop("ephemeralContainerStatuses", None)
            status.pop("podIPs", None)
            status.pop("hostIPs", None)
    elif isinstance(status, dict) and "allocatable" in status:  # a node
        for name in NODE_STATUS_DROPPED:
            status.pop(name, None)
    return obj


def _only(item: Any, fields: tuple[str, ...]) -> Any:
    return {k: item[k] for k in fields if k in item} if isinstance(item, dict) else item


def lean(obj: dict[str, Any]) -> Lean:
    """One object of a list or watch body, pruned and wrapped."""
    return Lean(prune(obj))
