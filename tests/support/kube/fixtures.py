"""Kubernetes objects shaped like ``kubectl get <kind> <name> -o json`` output, as plain dicts.

The builders write what a real API server (Kubernetes 1.33, containerd nodes) stores after its
defaulting and admission, so the agent under test reads the same shapes it will read in a real
cluster:

- quantities in canonical form (``"0.5"`` becomes ``"500m"``, ``"1024Mi"`` becomes ``"1Gi"``), as
  the API server re-serialises every ``resource.Quantity``;
- a container's missing requests defaulted from its limits (API defaulting), and the pod's
  ``status.qosClass`` computed from requests and limits the way Kubernetes does
  (``ComputePodQOS``: cpu and memory of every container and init container);
- the defaults admission adds: ``DefaultTolerationSeconds`` tolerations, the projected service
  account token volume, ``enableServiceLinks``, ``dnsPolicy``, ``terminationGracePeriodSeconds``,
  ``preemptionPolicy`` and ``priority``;
- what controllers write: ``generateName`` and the controller ``ownerReferences`` (with
  ``blockOwnerDeletion`` for apps/batch owners, without it for Spark's executor -> driver pod
  reference), the labels ReplicaSets, DaemonSets and Jobs add, the node affinity the DaemonSet
  controller writes (``matchFields`` on ``metadata.name``) and its extra tolerations, the taint
  ``kubectl cordon`` adds, and the taints the node lifecycle controller adds to a NotReady node;
- the status a kubelet reports: pod conditions with their timestamps and reasons, container
  statuses, host and pod IPs; node capacity, allocatable (capacity minus reservations),
  conditions, addresses, nodeInfo, daemonEndpoints, images.

Not reproduced: ``managedFields`` (kubectl hides them by default), feature-gated status fields
(container ``resources``/``user``/``volumeMounts`` statuses, pod ``generation``), events, and any
object kinds other than Node, Pod, PodDisruptionBudget and ConfigMap. Timestamps default to a
fixed clock (``NOW``) so the output is deterministic; every builder takes explicit times.

Every builder's output deserialises into the client's typed models and serialises back to the
same JSON (``tests/agent/test_kube_fixtures.py`` checks it with ``typed.round_trip_differences``).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

NOW = datetime(2025, 6, 2, 12, 0, 0, tzinfo=UTC)
KUBELET_VERSION = "v1.33.1"
DEFAULT_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.52"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

Obj = dict[str, Any]

_UID_NAMESPACE = uuid.UUID("7f1c6a52-2f1e-4c55-9b1a-5d3a0e4f9c11")
# Kubernetes' rand.String alphabet (k8s.io/apimachinery/pkg/util/rand): no vowels, no 0/1/3.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# --- quantities ---------------------------------------------------------------------------------

_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {
    -3: "n",
    -2: "u",
    -1: "m",
    0: "",
    1: "k",
    2: "M",
    3: "G",
    4: "T",
    5: "P",
    6: "E",
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?\d+))?$"
)


def _parse_quantity(value: str | int | float | Decimal) -> tuple[Decimal, str]:
    """(amount, format): format is "binary", "decimal" or "exponent", as in resource.Quantity."""
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)), "decimal"
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(
            f"quantities must match the regular expression of resource.Quantity: {value!r}"
        )
    number = Decimal(match["number"])
    if match["exponent"] is not None:
        return number * Decimal(10) ** int(match["exponent"]), "exponent"
    suffix = match["suffix"] or ""
    if suffix.endswith("i"):
        return number * Decimal(1024) ** _BINARY_SUFFIXES.index(suffix), "binary"
    power = next(p for p, s in _DECIMAL_SUFFIXES.items() if s == suffix)
    return number * Decimal(10) ** (3 * power), "decimal"


def quantity_value(value: str | int | float | Decimal) -> Decimal:
    """The exact amount a quantity string stands for ("500m" -> 0.5, "1Gi" -> 1073741824)."""
    return _parse_quantity(value)[0]


def canonical_quantity(value: str | int | float | Decimal) -> str:
    """The quantity as the API server serialises it (resource.Quantity.String()).

    The format of the input is kept (binary suffixes stay binary unless the amount is below 1024
    or fractional, where Kubernetes switches to decimal), and the largest suffix that keeps the
    mantissa an integer is chosen: "1024Mi" -> "1Gi", "0.5" -> "500m", "1500" -> "1500",
    "2000" -> "2k", "1e3" -> "1e3". Amounts finer than a nano unit are rounded up, as Kubernetes
    does.
    """
    amount, fmt = _parse_quantity(value)
    if amount == 0:
        return "0"
    if fmt == "binary" and (amount != amount.to_integral_value() or abs(amount) < 1024):
        fmt = "decimal"
    if fmt == "binary":
        for power in range(len(_BINARY_SUFFIXES) - 1, 0, -1):
            unit = Decimal(1024) ** power
            if amount % unit == 0:
                return f"{int(amount / unit)}{_BINARY_SUFFIXES[power]}"
        return str(int(amount))
    nanos = (amount * Decimal(10) ** 9).to_integral_value(rounding="ROUND_CEILING")
    for power in range(6, -4, -1):
        unit = Decimal(10) ** (3 * power + 9)
        if nanos % unit == 0:
            mantissa = int(nanos / unit)
            if fmt == "exponent":
                return f"{mantissa}e{3 * power}" if power else str(mantissa)
            return f"{mantissa}{_DECIMAL_SUFFIXES[power]}"
    raise AssertionError("unreachable: every amount is a whole number of nano units")


def _canonical_list(resources: Mapping[str, Any] | None) -> dict[str, str]:
    return {name: canonical_quantity(amount) for name, amount in (resources or {}).items()}


# --- small helpers ------------------------------------------------------------------------------


def timestamp(moment: datetime | str) -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time serialises."""
    if isinstance(moment, str):
        return moment
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stable_uid(*parts: str) -> str:
    """A deterministic UID for an object identity (kind, namespace, name)."""
    return str(uuid.uuid5(_UID_NAMESPACE, "/".join(parts)))


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("/".join(parts).encode()).digest()


def _hex(length: int, *parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def random_suffix(length: int, *parts: str) -> str:
    """A suffix in the alphabet Kubernetes uses for generateName, derived from ``parts``."""
    digest = _digest(*parts)
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:length])


def _ip(prefix: str, *parts: str) -> str:
    digest = _digest(*parts)
    return f"{prefix}.{digest[0]}.{digest[1] % 253 + 2}"


def kubectl_list(items: Sequence[Obj]) -> Obj:
    """The ``kind: List`` wrapper ``kubectl get <kind> -o json`` prints around several objects."""
    return {
        "apiVersion": "v1",
        "items": list(items),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


# --- nodes --------------------------------------------------------------------------------------


def node(
    name: str,
    cpu: str = "16",
    memory: str = "64Gi",
    pods: str = "110",
    gpus: int = 0,
    ready: bool | None = True,
    unschedulable: bool = False,
    labels: Mapping[str, str] | None = None,
    *,
    reserved_cpu: str = "100m",
    reserved_memory: str = "512Mi",
    taints: Sequence[Mapping[str, Any]] = (),
    internal_ip: str | None = None,
    pod_cidr: str | None = None,
    zone: str = "eu-west-1a",
    instance_type: str = "m6i.4xlarge",
    gpu_product: str = "NVIDIA-A100-SXM4-80GB",
    created: datetime | str | None = None,
    uid: str | None = None,
    images: bool = True,
) -> Obj:
    """A v1 Node as ``kubectl get node <name> -o json`` prints it.

    ``cpu``, ``memory``, ``pods`` and ``gpus`` are the node's capacity; allocatable is capacity
    minus ``reserved_cpu`` and ``reserved_memory`` (kube-reserved + system-reserved + the hard
    eviction threshold, as the kubelet computes it; pods and GPUs are not reserved). Read the
    expected numbers from ``status.allocatable``.

    ``ready``: True -> Ready; False -> the kubelet reports NotReady (``KubeletNotReady``) and the
    node lifecycle controller taints the node ``node.kubernetes.io/not-ready``; None -> the
    kubelet stopped posting status (conditions ``Unknown``, taint
    ``node.kubernetes.io/unreachable``).
    ``unschedulable`` is ``kubectl cordon``: ``spec.unschedulable`` and the unschedulable taint.
    """
    created_at = created if created is not None else NOW - timedelta(days=30)
    node_uid = uid or stable_uid("Node", name)
    address = internal_ip or _ip("10.0", "node-ip", name)
    cidr = pod_cidr or f"10.244.{_digest('cidr', name)[0]}.0/24"
    capacity = {
        "cpu": canonical_quantity(cpu),
        "ephemeral-storage": "203056560Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": canonical_quantity(memory),
        "pods": canonical_quantity(pods),
    }
    allocatable = {
        "cpu": canonical_quantity(quantity_value(cpu) - quantity_value(reserved_cpu)),
        "ephemeral-storage": "187136925387",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": _binary(quantity_value(memory) - quantity_value(reserved_memory)),
        "pods": canonical_quantity(pods),
    }
    node_labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": instance_type,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": zone[:-1],
        "failure-domain.beta.kubernetes.io/zone": zone,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/region": zone[:-1],
        "topology.kubernetes.io/zone": zone,
    }
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        allocatable["nvidia.com/gpu"] = str(gpus)
        node_labels.update(
            {
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": gpu_product,
            }
        )
    node_labels.update(labels or {})

    since = timestamp(created_at + timedelta(minutes=1))
    heartbeat = timestamp(NOW - timedelta(seconds=20))
    spec_taints: list[Obj] = [dict(t) for t in taints]
    if ready is True:
        ready_condition = _node_condition(
            "Ready", "True", "KubeletReady", "kubelet is posting ready status", heartbeat, since
        )
        pressure_status, pressure_reasons = "False", None
    elif ready is False:
        ready_condition = _node_condition(
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
            "message:Network plugin returns error: cni plugin not initialized",
            heartbeat,
            timestamp(NOW - timedelta(minutes=7)),
        )
        pressure_status, pressure_reasons = "False", None
        for effect in ("NoSchedule", "NoExecute"):
            spec_taints.append(
                {
                    "effect": effect,
                    "key": "node.kubernetes.io/not-ready",
                    "timeAdded": timestamp(NOW - timedelta(minutes=7)),
                }
            )
    else:
        stale = timestamp(NOW - timedelta(minutes=9))
        message = "Kubelet stopped posting node status."
        ready_condition = _node_condition(
            "Ready",
            "Unknown",
            "NodeStatusUnknown",
            message,
            stale,
            timestamp(NOW - timedelta(minutes=8)),
        )
        pressure_status, pressure_reasons = "Unknown", ("NodeStatusUnknown", message)
        for effect in ("NoSchedule", "NoExecute"):
            spec_taints.append(
                {
                    "effect": effect,
                    "key": "node.kubernetes.io/unreachable",
                    "timeAdded": timestamp(NOW - timedelta(minutes=8)),
                }
            )
    if unschedulable:
        spec_taints.append(
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unschedulable",
                "timeAdded": timestamp(NOW - timedelta(hours=2)),
            }
        )

    def pressure(kind: str, reason: str, message: str) -> Obj:
        if pressure_reasons is not None:
            reason, message = pressure_reasons
            return _node_condition(
                kind,
                pressure_status,
                reason,
                message,
                timestamp(NOW - timedelta(minutes=9)),
                timestamp(NOW - timedelta(minutes=8)),
            )
        return _node_condition(kind, pressure_status, reason, message, heartbeat, since)

    spec: Obj = {
        "podCIDR": cidr,
        "podCIDRs": [cidr],
        "providerID": f"aws:///{zone}/i-0{_hex(16, 'instance', name)}",
    }
    if spec_taints:
        spec["taints"] = spec_taints
    if unschedulable:
        spec["unschedulable"] = True

    status: Obj = {
        "addresses": [
            {"address": address, "type": "InternalIP"},
            {"address": name, "type": "InternalDNS"},
            {"address": name, "type": "Hostname"},
        ],
        "allocatable": allocatable,
        "capacity": capacity,
        "conditions": [
            pressure(
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            pressure("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            pressure(
                "PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"
            ),
            ready_condition,
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "features": {"supplementalGroupsPolicy": True},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": stable_uid("boot", name),
            "containerRuntimeVersion": "containerd://1.7.27",
            "kernelVersion": "6.1.134-152.225.amzn2023.x86_64",
            "kubeProxyVersion": "",
            "kubeletVersion": KUBELET_VERSION,
            "machineID": _hex(32, "machine", name),
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023.7.20250512",
            "systemUUID": "ec2" + stable_uid("system", name)[3:],
        },
        "runtimeHandlers": [
            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": "runc"},
            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": ""},
        ],
    }
    if images:
        status["images"] = [
            {
                "names": [
                    f"{DEFAULT_IMAGE.split(':')[0]}@sha256:{_hex(64, 'image', DEFAULT_IMAGE)}",
                    DEFAULT_IMAGE,
                ],
                "sizeBytes": 56101428,
            },
            {
                "names": [
                    f"{PAUSE_IMAGE.split(':')[0]}@sha256:{_hex(64, 'image', PAUSE_IMAGE)}",
                    PAUSE_IMAGE,
                ],
                "sizeBytes": 320368,
            },
        ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": address,
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": timestamp(created_at),
            "labels": node_labels,
            "name": name,
            "resourceVersion": "1",
            "uid": node_uid,
        },
        "spec": spec,
        "status": status,
    }


def _binary(amount: Decimal) -> str:
    """Memory the kubelet reports: a byte count in the largest exact binary unit."""
    return (
        canonical_quantity(f"{int(amount) // 1024}Ki") if amount % 1024 == 0 else str(int(amount))
    )


def _node_condition(
    kind: str, status: str, reason: str, message: str, heartbeat: str, transition: str
) -> Obj:
    return {
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": transition,
        "message": message,
        "reason": reason,
        "status": status,
        "type": kind,
    }


# --- pods ---------------------------------------------------------------------------------------


class Owner(NamedTuple):
    """The controller (or other owner) of a pod, written into ``metadata.ownerReferences``.

    ``uid`` defaults to a stable UID of (kind, namespace, name); ``api_version`` to the kind's
    group (apps/v1 for ReplicaSet, DaemonSet, StatefulSet; batch/v1 for Job; v1 for Pod).
    """

    kind: str
    name: str
    uid: str | None = None
    controller: bool = True
    api_version: str | None = None


_OWNER_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Deployment": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Pod": "v1",
    "Node": "v1",
    "SparkApplication": "sparkoperator.k8s.io/v1beta2",
}
# Owners whose controllers set blockOwnerDeletion (the built-in workload controllers).
_BLOCKING_OWNERS = {"ReplicaSet", "DaemonSet", "StatefulSet", "Job"}
# Controllers that name their pods with generateName "<owner>-".
_GENERATE_NAME_OWNERS = {"ReplicaSet", "DaemonSet", "Job"}
_DEFAULT_TOLERATIONS = (
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
)
_DAEMONSET_TOLERATIONS = (
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
)
_QOS_RESOURCES = ("cpu", "memory")


def _owner(owner: Owner | Sequence[Any] | Mapping[str, Any], namespace: str) -> Owner:
    if isinstance(owner, Owner):
        result = owner
    elif isinstance(owner, Mapping):
        result = Owner(
            kind=owner["kind"],
            name=owner["name"],
            uid=owner.get("uid"),
            controller=owner.get("controller", True),
            api_version=owner.get("api_version") or owner.get("apiVersion"),
        )
    else:
        result = Owner(*owner)
    if result.uid is None:
        result = result._replace(uid=stable_uid(result.kind, namespace, result.name))
    return result


def owner_reference(owner: Owner | Sequence[Any] | Mapping[str, Any], namespace: str = "") -> Obj:
    """The ``ownerReferences`` entry the owner's controller writes."""
    resolved = _owner(owner, namespace)
    reference: Obj = {
        "apiVersion": resolved.api_version or _OWNER_API_VERSIONS.get(resolved.kind, "v1"),
        "kind": resolved.kind,
        "name": resolved.name,
        "uid": resolved.uid,
    }
    if resolved.controller:
        reference["controller"] = True
    if resolved.kind in _BLOCKING_OWNERS:
        reference["blockOwnerDeletion"] = True
    return reference


def _container(spec: Mapping[str, Any], index: int, prefix: str, volume: str) -> Obj:
    """A container as stored: requests defaulted from limits, quantities canonical."""
    resources = spec.get("resources") or {}
    limits = _canonical_list(spec.get("limits", resources.get("limits")))
    requests = _canonical_list(spec.get("requests", resources.get("requests")))
    for name, amount in limits.items():
        requests.setdefault(name, amount)  # API defaulting: a limit without a request sets both
    out_resources: Obj = {}
    if limits:
        out_resources["limits"] = limits
    if requests:
        out_resources["requests"] = requests
    container: Obj = {
        "image": spec.get("image", DEFAULT_IMAGE),
        "imagePullPolicy": spec.get("imagePullPolicy", "IfNotPresent"),
        "name": spec.get("name") or (prefix if index == 0 else f"{prefix}-{index}"),
        "resources": out_resources,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": volume,
                "readOnly": True,
            }
        ],
    }
    for key in ("command", "args", "env"):
        if key in spec:
            container[key] = list(spec[key])
    ports = spec.get("ports")
    if ports:
        container["ports"] = [
            {"containerPort": p, "protocol": "TCP"}
            if isinstance(p, int)
            else {"protocol": "TCP", **p}
            for p in ports
        ]
    restart = spec.get("restart_policy", spec.get("restartPolicy"))
    if restart is not None:
        container["restartPolicy"] = restart
    return container


def qos_class(containers: Sequence[Obj], init_containers: Sequence[Obj] = ()) -> str:
    """The pod QoS class as Kubernetes computes it (pkg/apis/core/helper/qos ComputePodQOS).

    Only cpu and memory count. BestEffort: no positive request or limit anywhere. Guaranteed:
    every container (init containers included) has cpu and memory limits, and the summed requests
    equal the summed limits for each resource. Burstable otherwise.
    """
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in [*containers, *init_containers]:
        resources = container.get("resources") or {}
        for name, amount in (resources.get("requests") or {}).items():
            if name in _QOS_RESOURCES and quantity_value(amount) > 0:
                requests[name] = requests.get(name, Decimal(0)) + quantity_value(amount)
        found = set()
        for name, amount in (resources.get("limits") or {}).items():
            if name in _QOS_RESOURCES and quantity_value(amount) > 0:
                found.add(name)
                limits[name] = limits.get(name, Decimal(0)) + quantity_value(amount)
        if not found >= set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    matching = all(limits.get(name) == amount for name, amount in requests.items())
    if guaranteed and matching and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _image_ref(image: str) -> tuple[str, str]:
    """(image, imageID) as containerd reports them: docker.io names expanded, digest pinned."""
    repository = image.split("@")[0].rsplit(":", 1)[0]
    if "/" not in repository:
        repository = f"docker.io/library/{repository}"
        image = f"docker.io/library/{image}"
    elif "." not in repository.split("/")[0]:
        repository = f"docker.io/{repository}"
        image = f"docker.io/{image}"
    return image, f"{repository}@sha256:{_hex(64, 'image', image)}"


def _pod_condition(
    kind: str, status: str, transition: str, reason: str | None = None, message: str | None = None
) -> Obj:
    condition: Obj = {
        "lastProbeTime": None,
        "lastTransitionTime": transition,
        "status": status,
        "type": kind,
    }
    if reason is not None:
        condition["reason"] = reason
    if message is not None:
        condition["message"] = message
    return condition


def pod(
    namespace: str,
    name: str,
    *,
    node: str | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, str] | None = None,
    runtime_class: str | None = None,
    scheduler_name: str = "yunikorn",
    priority: int = 0,
    priority_class: str | None = None,
    preemption_policy: str = "PreemptLowerPriority",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: Owner | Sequence[Any] | Mapping[str, Any] | None = None,
    phase: str | None = None,
    start_time: datetime | str | None = None,
    created: datetime | str | None = None,
    terminating: bool = False,
    daemonset_node: str | None = None,
    uid: str | None = None,
    host_ip: str | None = None,
    pod_ip: str | None = None,
    host_network: bool = False,
    service_account: str = "default",
    restart_policy: str = "Always",
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    generate_name: str | None = None,
    pending_message: str = "0/50 nodes are available: 50 Insufficient cpu. preemption: 0/50 nodes "
    "are available: 50 No preemption victims found for incoming pod.",
) -> Obj:
    """A v1 Pod as ``kubectl get pod <name> -n <namespace> -o json`` prints it.

    ``containers`` and ``init_containers`` are short specs: ``{"name", "image", "requests",
    "limits", "ports", "restart_policy" (``"Always"`` makes an init container a sidecar),
    "command", "args", "env"}`` (or a full ``"resources"``); the default is one container
    requesting 100m cpu and 128Mi memory. ``phase`` defaults to Running when ``node`` is set,
    Pending otherwise; a Pending pod without a node carries ``PodScheduled=False, Unschedulable``.
    ``owner`` is an ``Owner`` or a (kind, name[, uid[, controller]]) tuple. ``daemonset_node``
    writes the node affinity and tolerations the DaemonSet controller gives its pods.
    ``terminating`` sets ``deletionTimestamp`` (graceful deletion in progress).
    """
    pod_uid = uid or stable_uid("Pod", namespace, name)
    created_at = created if created is not None else NOW - timedelta(hours=1)
    created_dt = _as_datetime(created_at)
    volume = f"kube-api-access-{random_suffix(5, 'volume', pod_uid)}"
    specs = (
        containers
        if containers is not None
        else ({"requests": {"cpu": "100m", "memory": "128Mi"}},)
    )
    main = [_container(spec, i, "main", volume) for i, spec in enumerate(specs)]
    init = [_container(spec, i, "init", volume) for i, spec in enumerate(init_containers)]
    resolved_phase = phase or ("Running" if node else "Pending")

    metadata: Obj = {
        "creationTimestamp": timestamp(created_at),
        "labels": dict(labels or {}),
        "name": name,
        "namespace": namespace,
        "resourceVersion": "1",
        "uid": pod_uid,
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owner is not None:
        resolved_owner = _owner(owner, namespace)
        metadata["ownerReferences"] = [owner_reference(resolved_owner, namespace)]
        if generate_name is None and resolved_owner.kind in _GENERATE_NAME_OWNERS:
            generate_name = f"{resolved_owner.name}-"
        _controller_labels(metadata["labels"], resolved_owner)
    if generate_name:
        metadata["generateName"] = generate_name
    if terminating:
        metadata["deletionGracePeriodSeconds"] = 30
        metadata["deletionTimestamp"] = timestamp(NOW + timedelta(seconds=30))
    if not metadata["labels"]:
        del metadata["labels"]

    spec: Obj = {
        "containers": main,
        "dnsPolicy": "ClusterFirstWithHostNet" if host_network else "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": preemption_policy,
        "priority": priority,
        "restartPolicy": restart_policy,
        "schedulerName": scheduler_name,
        "securityContext": {},
        "serviceAccount": service_account,
        "serviceAccountName": service_account,
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            *(dict(t) for t in tolerations),
            *(
                dict(t)
                for t in (_DAEMONSET_TOLERATIONS if daemonset_node else _DEFAULT_TOLERATIONS)
            ),
        ],
        "volumes": [
            {
                "name": volume,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                "name": "kube-root-ca.crt",
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            }
        ],
    }
    if daemonset_node and host_network:
        spec["tolerations"].append(
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/network-unavailable",
                "operator": "Exists",
            }
        )
    if init:
        spec["initContainers"] = init
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    if overhead:
        spec["overhead"] = _canonical_list(overhead)
        spec["runtimeClassName"] = runtime_class or "kata-qemu"
    elif runtime_class:
        spec["runtimeClassName"] = runtime_class
    if host_network:
        spec["hostNetwork"] = True
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if daemonset_node:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [daemonset_node],
                                }
                            ]
                        }
                    ]
                }
            }
        }

    started = (
        _as_datetime(start_time) if start_time is not None else created_dt + timedelta(seconds=2)
    )
    node_ip = host_ip or (_ip("10.0", "node-ip", node) if node else None)
    if pod_ip is None:
        pod_ip = node_ip if host_network and node_ip else _ip("10.244", "pod-ip", pod_uid)
    status = _pod_status(
        resolved_phase,
        node=node,
        containers=main,
        init_containers=init,
        qos=qos_class(main, init),
        created=created_dt,
        started=started,
        host_ip=node_ip,
        pod_ip=pod_ip,
        uid=pod_uid,
        pending_message=pending_message,
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _as_datetime(moment: datetime | str) -> datetime:
    if isinstance(moment, datetime):
        return moment
    return datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _controller_labels(labels: dict[str, str], owner: Owner) -> None:
    """The labels a pod's controller writes into its pod template (kept if the caller set them)."""
    if owner.kind == "ReplicaSet":
        labels.setdefault("pod-template-hash", owner.name.rsplit("-", 1)[-1])
    elif owner.kind == "DaemonSet":
        labels.setdefault("controller-revision-hash", random_suffix(10, "revision", owner.name))
        labels.setdefault("pod-template-generation", "1")
    elif owner.kind == "Job":
        labels.setdefault("batch.kubernetes.io/controller-uid", str(owner.uid))
        labels.setdefault("batch.kubernetes.io/job-name", owner.name)
        labels.setdefault("controller-uid", str(owner.uid))
        labels.setdefault("job-name", owner.name)


def _pod_status(
    phase: str,
    *,
    node: str | None,
    containers: list[Obj],
    init_containers: list[Obj],
    qos: str,
    created: datetime,
    started: datetime,
    host_ip: str | None,
    pod_ip: str,
    uid: str,
    pending_message: str,
) -> Obj:
    scheduled = timestamp(created + timedelta(seconds=1))
    if node is None:
        return {
            "conditions": [
                _pod_condition("PodScheduled", "False", scheduled, "Unschedulable", pending_message)
            ],
            "phase": phase,
            "qosClass": qos,
        }
    ready_at = timestamp(started + timedelta(seconds=8))
    init_done = timestamp(started + timedelta(seconds=5)) if init_containers else timestamp(started)
    status: Obj = {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": phase,
        "qosClass": qos,
        "startTime": timestamp(started),
    }

    def container_status(container: Obj, state: Obj, *, ready: bool, began: bool) -> Obj:
        image, image_id = _image_ref(container["image"])
        entry: Obj = {
            "image": image,
            "imageID": image_id,
            "lastState": {},
            "name": container["name"],
            "ready": ready,
            "restartCount": 0,
            "started": began,
            "state": state,
        }
        if "waiting" not in state:
            entry["containerID"] = f"containerd://{_hex(64, 'container', uid, container['name'])}"
        return entry

    if phase == "Pending":
        waiting = {"waiting": {"reason": "ContainerCreating"}}
        names = ", ".join(c["name"] for c in containers)
        status["conditions"] = [
            _pod_condition("PodReadyToStartContainers", "False", scheduled),
            _pod_condition("Initialized", "True", scheduled),
            _pod_condition(
                "Ready",
                "False",
                scheduled,
                "ContainersNotReady",
                f"containers with unready status: [{names}]",
            ),
            _pod_condition(
                "ContainersReady",
                "False",
                scheduled,
                "ContainersNotReady",
                f"containers with unready status: [{names}]",
            ),
            _pod_condition("PodScheduled", "True", scheduled),
        ]
        status["containerStatuses"] = [
            {**container_status(c, waiting, ready=False, began=False), "imageID": ""}
            for c in containers
        ]
        return status

    status["podIP"] = pod_ip
    status["podIPs"] = [{"ip": pod_ip}]
    init_statuses = []
    for container in init_containers:
        if container.get("restartPolicy") == "Always":  # a sidecar keeps running
            state = {"running": {"startedAt": timestamp(started + timedelta(seconds=1))}}
            init_statuses.append(
                container_status(container, state, ready=phase == "Running", began=True)
            )
        else:
            state = {
                "terminated": {
                    "containerID": f"containerd://{_hex(64, 'container', uid, container['name'])}",
                    "exitCode": 0,
                    "finishedAt": init_done,
                    "reason": "Completed",
                    "startedAt": timestamp(started + timedelta(seconds=1)),
                }
            }
            init_statuses.append(container_status(container, state, ready=True, began=False))
    if init_statuses:
        status["initContainerStatuses"] = init_statuses

    if phase == "Running":
        state = {"running": {"startedAt": init_done}}
        status["containerStatuses"] = [
            container_status(c, state, ready=True, began=True) for c in containers
        ]
        status["conditions"] = [
            _pod_condition(
                "PodReadyToStartContainers", "True", timestamp(started + timedelta(seconds=1))
            ),
            _pod_condition("Initialized", "True", init_done),
            _pod_condition("Ready", "True", ready_at),
            _pod_condition("ContainersReady", "True", ready_at),
            _pod_condition("PodScheduled", "True", scheduled),
        ]
        return status

    failed = phase == "Failed"
    finished = timestamp(started + timedelta(minutes=5))
    reason = "PodFailed" if failed else "PodCompleted"
    status["containerStatuses"] = [
        container_status(
            c,
            {
                "terminated": {
                    "containerID": f"containerd://{_hex(64, 'container', uid, c['name'])}",
                    "exitCode": 1 if failed else 0,
                    "finishedAt": finished,
                    "reason": "Error" if failed else "Completed",
                    "startedAt": init_done,
                }
            },
            ready=False,
            began=False,
        )
        for c in containers
    ]
    status["conditions"] = [
        _pod_condition("PodReadyToStartContainers", "False", finished),
        _pod_condition("Initialized", "True", init_done, "PodCompleted" if not failed else None),
        _pod_condition("Ready", "False", finished, reason),
        _pod_condition("ContainersReady", "False", finished, reason),
        _pod_condition("PodScheduled", "True", scheduled),
    ]
    return status


# --- disruption budgets and config maps ---------------------------------------------------------


def pdb(
    namespace: str,
    name: str,
    match_labels: Mapping[str, str] | None = None,
    match_expressions: Sequence[Mapping[str, Any]] | None = None,
    disruptions_allowed: int = 1,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    *,
    expected_pods: int | None = None,
    created: datetime | str | None = None,
    uid: str | None = None,
) -> Obj:
    """A policy/v1 PodDisruptionBudget with the status the disruption controller writes.

    ``expectedPods`` and ``currentHealthy`` default to ``min_available + disruptions_allowed``
    (when ``min_available`` is an int) or ``disruptions_allowed + 1``; ``desiredHealthy`` is
    ``currentHealthy - disruptionsAllowed``. With neither ``min_available`` nor
    ``max_unavailable``, ``minAvailable`` is set to ``desiredHealthy``. Without a selector the
    budget has no ``spec.selector`` and, as in the real API, selects no pod.
    """
    if expected_pods is None:
        base = min_available if isinstance(min_available, int) else 1
        expected_pods = base + disruptions_allowed
    desired = max(expected_pods - disruptions_allowed, 0)
    spec: Obj = {}
    if min_available is None and max_unavailable is None:
        min_available = desired
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if match_labels is not None or match_expressions is not None:
        selector: Obj = {}
        if match_labels is not None:
            selector["matchLabels"] = dict(match_labels)
        if match_expressions is not None:
            selector["matchExpressions"] = [dict(e) for e in match_expressions]
        spec["selector"] = selector
    created_at = created if created is not None else NOW - timedelta(days=3)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "creationTimestamp": timestamp(created_at),
            "generation": 1,
            "name": name,
            "namespace": namespace,
            "resourceVersion": "1",
            "uid": uid or stable_uid("PodDisruptionBudget", namespace, name),
        },
        "spec": spec,
        "status": pdb_status(
            disruptions_allowed, current_healthy=expected_pods, expected_pods=expected_pods
        ),
    }


def pdb_status(
    disruptions_allowed: int,
    *,
    current_healthy: int,
    expected_pods: int,
    observed_generation: int = 1,
    since: datetime | str | None = None,
) -> Obj:
    """The status block of a PodDisruptionBudget, with its DisruptionAllowed condition."""
    allowed = disruptions_allowed > 0
    return {
        "conditions": [
            {
                "lastTransitionTime": timestamp(
                    since if since is not None else NOW - timedelta(days=3)
                ),
                "message": "",
                "observedGeneration": observed_generation,
                "reason": "SufficientPods" if allowed else "InsufficientPods",
                "status": "True" if allowed else "False",
                "type": "DisruptionAllowed",
            }
        ],
        "currentHealthy": current_healthy,
        "desiredHealthy": max(current_healthy - disruptions_allowed, 0),
        "disruptionsAllowed": disruptions_allowed,
        "expectedPods": expected_pods,
        "observedGeneration": observed_generation,
    }


def configmap(
    namespace: str,
    name: str,
    data: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    created: datetime | str | None = None,
    uid: str | None = None,
) -> Obj:
    """A v1 ConfigMap."""
    metadata: Obj = {
        "creationTimestamp": timestamp(created if created is not None else NOW - timedelta(days=7)),
        "name": name,
        "namespace": namespace,
        "resourceVersion": "1",
        "uid": uid or stable_uid("ConfigMap", namespace, name),
    }
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    out: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    if data is not None:
        out["data"] = dict(data)
    return out


# --- typical shapes -----------------------------------------------------------------------------

QUEUE_LABEL = "queue"
QUEUE_ANNOTATION = "yunikorn.apache.org/queue"
APP_ID_LABEL = "applicationId"
APP_ID_ANNOTATION = "yunikorn.apache.org/app-id"
ALLOW_PREEMPTION_ANNOTATION = "yunikorn.apache.org/allow-preemption"
TASK_GROUP_NAME_ANNOTATION = "yunikorn.apache.org/task-group-name"
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"
SCHEDULING_POLICY_ANNOTATION = "yunikorn.apache.org/schedulingPolicyParameters"
SPARK_IMAGE = "apache/spark:3.5.5"


def task_groups(*groups: tuple[str, int, Mapping[str, str]]) -> str:
    """The ``yunikorn.apache.org/task-groups`` annotation: a JSON list of task groups."""
    return json.dumps(
        [
            {"name": name, "minMember": members, "minResource": dict(resources)}
            for name, members, resources in groups
        ]
    )


def gang_annotations(
    group: str, groups: str, timeout_seconds: int = 60, style: str = "Soft"
) -> dict[str, str]:
    """Annotations of a member of a YuniKorn gang (task group ``group`` of ``groups``)."""
    return {
        TASK_GROUP_NAME_ANNOTATION: group,
        TASK_GROUPS_ANNOTATION: groups,
        SCHEDULING_POLICY_ANNOTATION: (
            f"placeholderTimeoutInSeconds={timeout_seconds} gangSchedulingStyle={style}"
        ),
    }


def spark_application(
    namespace: str,
    app_name: str,
    *,
    executors: int,
    queue: str | None,
    app_selector: str | None = None,
    nodes: Sequence[str | None] = (),
    driver_node: str | None = None,
    driver_request: Mapping[str, str] | None = None,
    executor_request: Mapping[str, str] | None = None,
    gang: bool = False,
    created: datetime | None = None,
    scheduler_name: str = "yunikorn",
    priority: int = 0,
    priority_class: str | None = None,
) -> list[Obj]:
    """A Spark application as spark-submit creates it on Kubernetes: the driver pod and its
    executors, each executor owned by the driver pod (``ownerReferences`` kind Pod, controller,
    no ``blockOwnerDeletion``), all labelled ``spark-app-selector``, ``spark-role`` and ``queue``.

    ``nodes[i]`` is executor i's node (None: pending); ``gang`` adds YuniKorn task groups
    ``spark-driver`` (1) and ``spark-executor`` (executors).
    """
    created_at = created or NOW - timedelta(minutes=30)
    selector = app_selector or f"spark-{_hex(32, 'spark-app', namespace, app_name)}"
    prefix = f"{app_name}-{_hex(16, 'spark-prefix', selector)}"
    driver_req = dict(driver_request or {"cpu": "1", "memory": "1408Mi"})
    exec_req = dict(executor_request or {"cpu": "1", "memory": "2432Mi"})
    groups = task_groups(("spark-driver", 1, driver_req), ("spark-executor", executors, exec_req))
    common = {"spark-app-name": app_name, "spark-app-selector": selector, "spark-version": "3.5.5"}
    if queue is not None:
        common[QUEUE_LABEL] = queue
    driver_name = f"{prefix}-driver"
    driver_uid = stable_uid("Pod", namespace, driver_name, selector)
    driver_annotations = gang_annotations("spark-driver", groups) if gang else {}
    driver = pod(
        namespace,
        driver_name,
        uid=driver_uid,
        node=driver_node,
        containers=[
            {
                "name": "spark-kubernetes-driver",
                "image": SPARK_IMAGE,
                "requests": driver_req,
                "limits": {"memory": driver_req["memory"]},
                "ports": [
                    {"containerPort": 7078, "name": "driver-rpc-port"},
                    {"containerPort": 7079, "name": "blockmanager"},
                    {"containerPort": 4040, "name": "spark-ui"},
                ],
                "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties"],
            }
        ],
        labels={**common, "spark-role": "driver"},
        annotations=driver_annotations,
        restart_policy="Never",
        service_account="spark",
        scheduler_name=scheduler_name,
        priority=priority,
        priority_class=priority_class,
        created=created_at,
    )
    out = [driver]
    for index in range(1, executors + 1):
        executor_node = nodes[index - 1] if index - 1 < len(nodes) else None
        out.append(
            pod(
                namespace,
                f"{prefix}-exec-{index}",
                uid=stable_uid("Pod", namespace, f"{prefix}-exec-{index}", selector),
                node=executor_node,
                containers=[
                    {
                        "name": "spark-kubernetes-executor",
                        "image": SPARK_IMAGE,
                        "requests": exec_req,
                        "limits": {"memory": exec_req["memory"]},
                        "ports": [{"containerPort": 7079, "name": "blockmanager"}],
                        "args": ["executor"],
                    }
                ],
                labels={
                    **common,
                    "spark-exec-id": str(index),
                    "spark-exec-resourceprofile-id": "0",
                    "spark-role": "executor",
                },
                annotations=gang_annotations("spark-executor", groups) if gang else {},
                owner=Owner("Pod", driver_name, driver_uid),
                restart_policy="Never",
                service_account="spark",
                scheduler_name=scheduler_name,
                priority=priority,
                priority_class=priority_class,
                created=created_at + timedelta(seconds=20),
            )
        )
    return out


# --- a whole cluster ----------------------------------------------------------------------------

GPU_TAINT = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}
GPU_TOLERATION = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
YUNIKORN_NAMESPACE = "yunikorn"
YUNIKORN_CONFIGMAP = "yunikorn-configs"

_FIXED_SHAPES = {
    # name: pod count, in the order cluster() builds them; see cluster()'s docstring
    "web_frontend": 6,
    "payments_api": 4,
    "catalog_api": 4,
    "analytics": 6,
    "sandbox_debug": 5,
    "sandbox_kata": 3,
    "other_scheduler_batch": 3,
}


class _Placer:
    """First-fit placement of bound pods on nodes (requests + overhead against allocatable)."""

    def __init__(self, nodes: Sequence[Obj], rng: random.Random) -> None:
        self.free: dict[str, dict[str, Decimal]] = {
            item["metadata"]["name"]: {
                k: quantity_value(v) for k, v in item["status"]["allocatable"].items()
            }
            for item in nodes
        }
        self.rng = rng

    def take(self, request: Mapping[str, Decimal], candidates: Sequence[str]) -> str | None:
        if not candidates:
            return None
        start = self.rng.randrange(len(candidates))
        for offset in range(len(candidates)):
            name = candidates[(start + offset) % len(candidates)]
            free = self.free[name]
            if all(free.get(k, Decimal(0)) >= v for k, v in request.items()):
                for k, v in request.items():
                    free[k] -= v
                return name
        return None


def pod_request(item: Obj) -> dict[str, Decimal]:
    """The Kubernetes effective request of a pod: the sum over containers, the max with each
    init container (sidecars, init containers with restartPolicy Always, add to everything after
    them), plus ``spec.overhead``, plus one ``pods`` slot (what the scheduler counts)."""
    spec = item["spec"]

    def requests_of(container: Obj) -> dict[str, Decimal]:
        return {
            k: quantity_value(v)
            for k, v in (container.get("resources", {}).get("requests") or {}).items()
        }

    total: dict[str, Decimal] = {}
    for container in spec["containers"]:
        for k, v in requests_of(container).items():
            total[k] = total.get(k, Decimal(0)) + v
    sidecars: dict[str, Decimal] = {}
    init_max: dict[str, Decimal] = {}
    for container in spec.get("initContainers", []):
        request = requests_of(container)
        if container.get("restartPolicy") == "Always":
            for k, v in request.items():
                sidecars[k] = sidecars.get(k, Decimal(0)) + v
            for k in set(init_max) | set(sidecars):
                init_max[k] = max(init_max.get(k, Decimal(0)), sidecars.get(k, Decimal(0)))
        else:
            for k in set(request) | set(sidecars):
                init_max[k] = max(
                    init_max.get(k, Decimal(0)),
                    request.get(k, Decimal(0)) + sidecars.get(k, Decimal(0)),
                )
    for k, v in sidecars.items():
        total[k] = total.get(k, Decimal(0)) + v
    for k, v in init_max.items():
        total[k] = max(total.get(k, Decimal(0)), v)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, Decimal(0)) + quantity_value(v)
    total["pods"] = Decimal(1)
    return total


def cluster(nodes: int = 50, pods: int = 2000, seed: int = 7) -> dict[str, Any]:
    """A deterministic, realistic YuniKorn cluster: ``{"nodes", "pods", "pdbs", "configmaps",
    "summary"}`` (lists of kubectl-shaped objects, and the counts below computed from them).

    The same (nodes, pods, seed) always gives the same objects. The fixed shapes below depend on
    ``nodes`` (N) and ``pods`` (P) only; ``seed`` changes names, sizes, placement and how the
    Spark and batch pods split into applications, so read those counts from ``summary``.
    Timestamps are before ``NOW``. Needs N >= 5 and P >= 2N + 50.

    Nodes (N):
    - ``gpu-worker-NNN``: max(1, N // 12) GPU nodes (64 cpu, 512Gi, 8 ``nvidia.com/gpu``),
      tainted ``nvidia.com/gpu=present:NoSchedule``; only the ML pods tolerate it.
    - ``worker-NNN``: the rest (48 cpu, 192Gi, 110 pods); ``worker-001`` is cordoned
      (``spec.unschedulable``), ``worker-002`` is NotReady. Pods other than DaemonSet pods are
      only placed on ready, uncordoned nodes, and every bound pod fits its node's allocatable.

    Pods (P), by shape; the queue is written as given (YuniKorn lower-cases it):
    - DaemonSet ``kube-system/kube-proxy``: N pods, one per node, scheduler
      ``default-scheduler``, hostNetwork, priority class system-node-critical.
    - Deployment ``kube-system/coredns``: 2 pods, ``default-scheduler``, system-cluster-critical.
      PDB ``kube-system/coredns`` (maxUnavailable 1, 1 allowed).
    - DaemonSet ``monitoring/node-exporter``: N pods, one per node (pinned by the DaemonSet node
      affinity), scheduler yunikorn, no queue and no app id.
    - Deployment ``prod/web-frontend``: 6 pods, queue annotation ``root.prod.web``, an init
      container and a sidecar (init container with restartPolicy Always), Burstable.
      PDB ``prod/web-frontend`` (matchLabels, minAvailable 4, 2 allowed).
    - Deployment ``prod/payments-api``: 4 pods, queue label ``root.prod.api``, Guaranteed,
      priority class ``prod-high`` (1000), ``yunikorn.apache.org/allow-preemption: "false"``.
      PDB ``prod/payments-api`` (matchExpressions, maxUnavailable 0, **0 allowed**: evictions 429).
    - Deployment ``prod/catalog-api``: 4 pods, queue label ``root.prod.api``, app id annotation
      ``catalog-api``. PDB ``prod/catalog-api`` (maxUnavailable 1, 1 allowed).
    - Deployment ``analytics/dashboards``: 6 pods, no queue, no app id (default queue rule).
    - ``sandbox/debug-N``: 5 bare pods (no owner), BestEffort, queue label ``root.sandbox``;
      ``debug-5`` is pending.
    - Job ``sandbox/secure-runner``: 3 pods with runtimeClassName kata-qemu and pod overhead
      (250m, 160Mi), queue label ``root.sandbox``, app id label ``secure-runner``.
    - Job ``batch/external-report``: 3 pods of another scheduler (``default-scheduler``).
    - ML gang jobs ``research/train-NN``: 6% of the rest (at most the GPU count + 4), 4 pods
      each (the last job may be smaller), each requesting 1 ``nvidia.com/gpu`` (Guaranteed,
      4 cpu, 16Gi), app id label ``train-NN``, queue annotation ``root.research.vision`` (even
      jobs) or label ``root.research.nlp`` (odd), gang annotations (task group ``workers``),
      priority class ``research-high`` (500). The last job's pods, and any beyond the GPU
      capacity, are pending.
    - Batch Jobs ``batch/etl-NNN``: about 20% of the rest, 1-5 pods each, app id label
      ``etl-NNN``, queue annotation ``root.batch.nightly``, Guaranteed (250m-1 cpu, 512Mi-2Gi);
      every 5th job's pods are pending; jobs 3 and 7 use priority class ``batch-nopreempt``
      (100, preemptionPolicy Never); the first 3 bound batch pods are terminating
      (``deletionTimestamp`` set).
    - Spark applications in ``spark``: the rest, a driver (1 cpu, 1408Mi) plus 2-10 executors
      (500m/1408Mi or 1/2432Mi) each (the last app may be cut short), queue label alternating
      ``ROOT.Batch.Adhoc`` (mixed case; the first app) and ``root.batch.nightly``; every 3rd
      app is a gang (task groups); every 4th app's last two executors are pending (when it has
      3 or more).

    ``summary`` counts: nodes, gpu_nodes, cordoned_nodes, not_ready_nodes, schedulable_nodes,
    pods, yunikorn_pods, other_scheduler_pods, bound, pending, terminating (and the yunikorn-only
    ``allocations`` = bound, not terminating; ``asks`` = pending), daemonset_pods (yunikorn),
    spark_apps, spark_drivers, spark_executors, gang_pods, gpu_pods, best_effort, guaranteed,
    burstable (yunikorn pods), no_queue (yunikorn pods with neither queue label nor annotation),
    queues (raw queue value -> yunikorn pod count), pdbs, configmaps.

    ConfigMaps: ``yunikorn/yunikorn-configs`` with a ``queues.yaml`` naming every queue used.
    """
    if nodes < 5:
        raise ValueError(
            "cluster() needs at least 5 nodes (a cordoned, a NotReady, GPU and workers)"
        )
    if pods < 2 * nodes + 50:
        raise ValueError(f"cluster() needs at least 2 * nodes + 50 pods ({2 * nodes + 50})")
    rng = random.Random(seed)
    clock = NOW

    def uid(*parts: str) -> str:
        return (
            str(uuid.UUID(int=rng.getrandbits(128), version=4))
            if not parts
            else stable_uid(str(seed), *parts)
        )

    def suffix(length: int) -> str:
        return "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(length))

    def ago(minutes_low: int, minutes_high: int) -> datetime:
        return clock - timedelta(
            minutes=rng.randint(minutes_low, minutes_high), seconds=rng.randint(0, 59)
        )

    # --- nodes
    gpu_count = max(1, nodes // 12)
    worker_count = nodes - gpu_count
    node_objs: list[Obj] = []
    for index in range(1, worker_count + 1):
        name = f"worker-{index:03d}"
        node_objs.append(
            node(
                name,
                cpu="48",
                memory="192Gi",
                pods="110",
                ready=index != 2,
                unschedulable=index == 1,
                internal_ip=f"10.0.{index // 200}.{index % 200 + 10}",
                pod_cidr=f"10.244.{index}.0/24",
                zone=("eu-west-1a", "eu-west-1b", "eu-west-1c")[index % 3],
                instance_type="m6i.12xlarge",
                created=clock - timedelta(days=40, minutes=index),
                uid=uid("Node", name),
            )
        )
    for index in range(1, gpu_count + 1):
        name = f"gpu-worker-{index:03d}"
        node_objs.append(
            node(
                name,
                cpu="64",
                memory="512Gi",
                pods="110",
                gpus=8,
                taints=[GPU_TAINT],
                internal_ip=f"10.0.100.{index + 10}",
                pod_cidr=f"10.244.{200 + index}.0/24",
                zone="eu-west-1a",
                instance_type="p4d.24xlarge",
                created=clock - timedelta(days=20, minutes=index),
                uid=uid("Node", name),
            )
        )
    all_nodes = [n["metadata"]["name"] for n in node_objs]
    workers = [
        n for n in all_nodes if n.startswith("worker-") and n not in ("worker-001", "worker-002")
    ]
    gpu_nodes = [n for n in all_nodes if n.startswith("gpu-")]
    placer = _Placer(node_objs, rng)
    node_ips = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in node_objs}
    pod_ip_counter: dict[str, int] = {}

    def pod_ip(node_name: str | None) -> str | None:
        if node_name is None:
            return None
        pod_ip_counter[node_name] = pod_ip_counter.get(node_name, 1) + 1
        cidr = next(n["spec"]["podCIDR"] for n in node_objs if n["metadata"]["name"] == node_name)
        return cidr.rsplit(".", 1)[0] + f".{pod_ip_counter[node_name]}"

    out_pods: list[Obj] = []

    def build(
        namespace: str, name: str, node_choice: Sequence[str] | str | None, **kwargs: Any
    ) -> Obj:
        """Build a pod, placing it first when ``node_choice`` lists candidate nodes."""
        probe = pod(namespace, name, **kwargs)
        chosen: str | None
        if isinstance(node_choice, str):
            chosen = node_choice
            placer.take(pod_request(probe), [chosen])
        elif node_choice is None:
            chosen = None
        else:
            chosen = placer.take(pod_request(probe), node_choice)
            if chosen is None:
                raise ValueError(
                    f"cluster(): pod {namespace}/{name} fits on no node; use more nodes"
                )
        created = kwargs.pop("created", None) or ago(60, 600)
        item = pod(
            namespace,
            name,
            node=chosen,
            host_ip=node_ips[chosen] if chosen else None,
            pod_ip=(node_ips[chosen] if kwargs.get("host_network") else pod_ip(chosen))
            if chosen
            else None,
            created=created,
            uid=kwargs.pop("uid", None) or uid(),
            **kwargs,
        )
        out_pods.append(item)
        return item

    # --- kube-system: kube-proxy (another scheduler) and coredns
    for name in all_nodes:
        build(
            "kube-system",
            f"kube-proxy-{suffix(5)}",
            name,
            containers=[
                {
                    "name": "kube-proxy",
                    "image": "registry.k8s.io/kube-proxy:v1.33.1",
                    "requests": {"cpu": "100m"},
                }
            ],
            owner=Owner("DaemonSet", "kube-proxy", uid("DaemonSet", "kube-system", "kube-proxy")),
            labels={"k8s-app": "kube-proxy"},
            daemonset_node=name,
            scheduler_name="default-scheduler",
            priority=2000001000,
            priority_class="system-node-critical",
            host_network=True,
            service_account="kube-proxy",
        )
    coredns_rs = f"coredns-{suffix(10)}"
    for _ in range(2):
        build(
            "kube-system",
            f"{coredns_rs}-{suffix(5)}",
            workers,
            containers=[
                {
                    "name": "coredns",
                    "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                    "requests": {"cpu": "100m", "memory": "70Mi"},
                    "limits": {"memory": "170Mi"},
                    "ports": [
                        {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                        {"containerPort": 53, "name": "dns-tcp"},
                    ],
                }
            ],
            owner=Owner("ReplicaSet", coredns_rs, uid("ReplicaSet", "kube-system", coredns_rs)),
            labels={"k8s-app": "kube-dns"},
            scheduler_name="default-scheduler",
            priority=2000000000,
            priority_class="system-cluster-critical",
            service_account="coredns",
        )

    # --- monitoring: node-exporter DaemonSet, scheduled by YuniKorn
    for name in all_nodes:
        build(
            "monitoring",
            f"node-exporter-{suffix(5)}",
            name,
            containers=[
                {
                    "name": "node-exporter",
                    "image": "quay.io/prometheus/node-exporter:v1.9.1",
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"memory": "128Mi"},
                    "ports": [{"containerPort": 9100, "name": "metrics"}],
                }
            ],
            owner=Owner(
                "DaemonSet", "node-exporter", uid("DaemonSet", "monitoring", "node-exporter")
            ),
            labels={"app.kubernetes.io/name": "node-exporter"},
            daemonset_node=name,
            tolerations=[{"operator": "Exists"}],
            service_account="node-exporter",
        )

    # --- prod: three Deployments behind PDBs
    def deployment(namespace: str, deploy: str, count: int, **kwargs: Any) -> None:
        rs = f"{deploy}-{suffix(10)}"
        labels = {"app": deploy, **kwargs.pop("labels", {})}
        for _ in range(count):
            build(
                namespace,
                f"{rs}-{suffix(5)}",
                workers,
                owner=Owner("ReplicaSet", rs, uid("ReplicaSet", namespace, rs)),
                labels=labels,
                **kwargs,
            )

    deployment(
        "prod",
        "web-frontend",
        _FIXED_SHAPES["web_frontend"],
        containers=[
            {
                "name": "web",
                "image": "nginx:1.27",
                "requests": {"cpu": "500m", "memory": "512Mi"},
                "limits": {"memory": "1Gi"},
                "ports": [8080],
            }
        ],
        init_containers=[
            {
                "name": "wait-for-db",
                "image": "busybox:1.36",
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "command": ["sh", "-c", "until nc -z db 5432; do sleep 1; done"],
            },
            {
                "name": "istio-proxy",
                "image": "docker.io/istio/proxyv2:1.25.2",
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"memory": "1Gi"},
                "restart_policy": "Always",
            },
        ],
        annotations={QUEUE_ANNOTATION: "root.prod.web"},
    )
    deployment(
        "prod",
        "payments-api",
        _FIXED_SHAPES["payments_api"],
        containers=[
            {
                "name": "api",
                "image": "ghcr.io/acme/payments:4.2.0",
                "requests": {"cpu": "1", "memory": "2Gi"},
                "limits": {"cpu": "1", "memory": "2Gi"},
                "ports": [8443],
            }
        ],
        labels={QUEUE_LABEL: "root.prod.api"},
        annotations={ALLOW_PREEMPTION_ANNOTATION: "false"},
        priority=1000,
        priority_class="prod-high",
    )
    deployment(
        "prod",
        "catalog-api",
        _FIXED_SHAPES["catalog_api"],
        containers=[
            {
                "name": "api",
                "image": "ghcr.io/acme/catalog:2.8.1",
                "requests": {"cpu": "750m", "memory": "1536Mi"},
                "limits": {"memory": "2Gi"},
            }
        ],
        labels={QUEUE_LABEL: "root.prod.api"},
        annotations={APP_ID_ANNOTATION: "catalog-api"},
    )
    deployment(
        "analytics",
        "dashboards",
        _FIXED_SHAPES["analytics"],
        containers=[
            {
                "name": "grafana",
                "image": "grafana/grafana:11.6.0",
                "requests": {"cpu": "250m", "memory": "256Mi"},
                "limits": {"cpu": "1", "memory": "512Mi"},
            }
        ],
    )

    # --- sandbox: BestEffort debug pods (one pending) and kata pods with overhead
    for index in range(1, _FIXED_SHAPES["sandbox_debug"] + 1):
        build(
            "sandbox",
            f"debug-{index}",
            None if index == _FIXED_SHAPES["sandbox_debug"] else workers,
            containers=[
                {"name": "shell", "image": "busybox:1.36", "command": ["sleep", "infinity"]}
            ],
            labels={QUEUE_LABEL: "root.sandbox", "run": f"debug-{index}"},
            pending_message="Unschedulable: queue root.sandbox has no remaining quota",
        )
    for _ in range(_FIXED_SHAPES["sandbox_kata"]):
        build(
            "sandbox",
            f"secure-runner-{suffix(5)}",
            workers,
            containers=[
                {
                    "name": "runner",
                    "image": "ghcr.io/acme/runner:1.0.3",
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"cpu": "500m", "memory": "1Gi"},
                }
            ],
            overhead={"cpu": "250m", "memory": "160Mi"},
            runtime_class="kata-qemu",
            owner=Owner("Job", "secure-runner", uid("Job", "sandbox", "secure-runner")),
            labels={QUEUE_LABEL: "root.sandbox", APP_ID_LABEL: "secure-runner"},
            restart_policy="Never",
        )
    for _ in range(_FIXED_SHAPES["other_scheduler_batch"]):
        build(
            "batch",
            f"external-report-{suffix(5)}",
            workers,
            containers=[
                {
                    "name": "report",
                    "image": "ghcr.io/acme/report:0.9.0",
                    "requests": {"cpu": "250m", "memory": "256Mi"},
                }
            ],
            owner=Owner("Job", "external-report", uid("Job", "batch", "external-report")),
            scheduler_name="default-scheduler",
            restart_policy="Never",
        )

    fixed = 2 * nodes + 2 + sum(_FIXED_SHAPES.values())
    rest = pods - fixed

    # --- research: GPU gang jobs
    ml_pods = max(4, min(round(rest * 0.06), 8 * len(gpu_nodes) + 4))
    gpu_free = 8 * len(gpu_nodes)
    ml_jobs = (ml_pods + 3) // 4
    remaining = ml_pods
    for job in range(1, ml_jobs + 1):
        members = min(4, remaining)
        remaining -= members
        job_name = f"train-{job:02d}"
        groups = task_groups(
            ("workers", members, {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"})
        )
        queue_meta = (
            {"annotations": {QUEUE_ANNOTATION: "root.research.vision"}, "labels": {}}
            if job % 2 == 0
            else {"annotations": {}, "labels": {QUEUE_LABEL: "root.research.nlp"}}
        )
        for _ in range(members):
            pending = job == ml_jobs or gpu_free == 0
            if not pending:
                gpu_free -= 1
            build(
                "research",
                f"{job_name}-{suffix(5)}",
                None if pending else gpu_nodes,
                containers=[
                    {
                        "name": "trainer",
                        "image": "nvcr.io/nvidia/pytorch:25.04-py3",
                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                        "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                    }
                ],
                owner=Owner("Job", job_name, uid("Job", "research", job_name)),
                labels={APP_ID_LABEL: job_name, **queue_meta["labels"]},
                annotations={
                    **gang_annotations("workers", groups, 300, "Hard"),
                    **queue_meta["annotations"],
                },
                tolerations=[GPU_TOLERATION],
                priority=500,
                priority_class="research-high",
                restart_policy="Never",
                pending_message="Unschedulable: waiting for the gang's placeholders",
            )

    # --- batch: ETL jobs
    batch_pods = max(5, round(rest * 0.20))
    remaining = batch_pods
    job = 0
    terminating_left = 3
    while remaining > 0:
        job += 1
        size = min(remaining, rng.randint(1, 5))
        remaining -= size
        job_name = f"etl-{job:03d}"
        pending = job % 5 == 0
        special = job in (3, 7)
        cpu = rng.choice(["250m", "500m", "1"])
        memory = rng.choice(["512Mi", "1Gi", "2Gi"])
        for _ in range(size):
            terminating = not pending and terminating_left > 0
            if terminating:
                terminating_left -= 1
            build(
                "batch",
                f"{job_name}-{suffix(5)}",
                None if pending else workers,
                containers=[
                    {
                        "name": "etl",
                        "image": "ghcr.io/acme/etl:7.1.0",
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"cpu": cpu, "memory": memory},
                    }
                ],
                owner=Owner("Job", job_name, uid("Job", "batch", job_name)),
                labels={APP_ID_LABEL: job_name},
                annotations={QUEUE_ANNOTATION: "root.batch.nightly"},
                priority=100 if special else 0,
                priority_class="batch-nopreempt" if special else None,
                preemption_policy="Never" if special else "PreemptLowerPriority",
                restart_policy="Never",
                terminating=terminating,
                pending_message="Unschedulable: queue root.batch.nightly is at its max",
            )

    # --- spark: the rest
    remaining = pods - len(out_pods)
    app = 0
    while remaining > 0:
        app += 1
        executors = min(remaining - 1, rng.randint(2, 10))
        remaining -= executors + 1
        queue = "ROOT.Batch.Adhoc" if app % 2 else "root.batch.nightly"
        pending_tail = 2 if app % 4 == 0 and executors >= 3 else 0
        cores = rng.choice(["500m", "1"])
        request = {"cpu": cores, "memory": "1408Mi" if cores == "500m" else "2432Mi"}
        created = ago(5, 240)
        driver_node = placer.take(
            {"cpu": Decimal(1), "memory": quantity_value("1408Mi"), "pods": Decimal(1)}, workers
        )
        executor_nodes: list[str | None] = []
        for index in range(executors):
            if index >= executors - pending_tail:
                executor_nodes.append(None)
                continue
            chosen = placer.take(
                {k: quantity_value(v) for k, v in request.items()} | {"pods": Decimal(1)}, workers
            )
            if chosen is None:
                raise ValueError("cluster(): a Spark executor fits on no node; use more nodes")
            executor_nodes.append(chosen)
        if driver_node is None:
            raise ValueError("cluster(): a Spark driver fits on no node; use more nodes")
        app_pods = spark_application(
            "spark",
            f"spark-{('etl', 'sessionize', 'features', 'rollup')[app % 4]}-{app:03d}",
            executors=executors,
            queue=queue,
            app_selector=f"spark-{rng.getrandbits(128):032x}",
            nodes=executor_nodes,
            driver_node=driver_node,
            executor_request=request,
            gang=app % 3 == 0,
            created=created,
        )
        for item in app_pods:
            bound = item["spec"].get("nodeName")
            if bound:
                item["status"]["hostIP"] = node_ips[bound]
                item["status"]["hostIPs"] = [{"ip": node_ips[bound]}]
                ip = pod_ip(bound)
                item["status"]["podIP"] = ip
                item["status"]["podIPs"] = [{"ip": ip}]
        out_pods.extend(app_pods)
    assert len(out_pods) == pods, (len(out_pods), pods)

    # --- budgets and the YuniKorn ConfigMap
    budgets = [
        pdb(
            "kube-system",
            "coredns",
            match_labels={"k8s-app": "kube-dns"},
            disruptions_allowed=1,
            max_unavailable=1,
            expected_pods=2,
            uid=uid("PodDisruptionBudget", "kube-system", "coredns"),
        ),
        pdb(
            "prod",
            "web-frontend",
            match_labels={"app": "web-frontend"},
            disruptions_allowed=2,
            min_available=4,
            expected_pods=6,
            uid=uid("PodDisruptionBudget", "prod", "web-frontend"),
        ),
        pdb(
            "prod",
            "payments-api",
            match_expressions=[{"key": "app", "operator": "In", "values": ["payments-api"]}],
            disruptions_allowed=0,
            max_unavailable=0,
            expected_pods=4,
            uid=uid("PodDisruptionBudget", "prod", "payments-api"),
        ),
        pdb(
            "prod",
            "catalog-api",
            match_labels={"app": "catalog-api"},
            disruptions_allowed=1,
            max_unavailable=1,
            expected_pods=4,
            uid=uid("PodDisruptionBudget", "prod", "catalog-api"),
        ),
    ]
    queues_yaml = (
        "partitions:\n"
        "  - name: default\n"
        "    placementrules:\n"
        "      - name: provided\n"
        "        create: true\n"
        "    queues:\n"
        "      - name: root\n"
        "        submitacl: '*'\n"
        "        queues:\n"
        "          - name: default\n"
        "          - name: sandbox\n"
        "          - name: prod\n"
        "            queues: [{name: web}, {name: api}]\n"
        "          - name: research\n"
        "            queues: [{name: vision}, {name: nlp}]\n"
        "          - name: batch\n"
        "            queues: [{name: nightly}, {name: adhoc}]\n"
    )
    configmaps = [
        configmap(
            YUNIKORN_NAMESPACE,
            YUNIKORN_CONFIGMAP,
            {"queues.yaml": queues_yaml},
            labels={"app.kubernetes.io/name": "yunikorn", "app.kubernetes.io/managed-by": "Helm"},
            annotations={
                "meta.helm.sh/release-name": "yunikorn",
                "meta.helm.sh/release-namespace": YUNIKORN_NAMESPACE,
            },
            uid=uid("ConfigMap", YUNIKORN_NAMESPACE, YUNIKORN_CONFIGMAP),
            created=clock - timedelta(days=40),
        )
    ]
    return {
        "nodes": node_objs,
        "pods": out_pods,
        "pdbs": budgets,
        "configmaps": configmaps,
        "summary": summarize(node_objs, out_pods, budgets, configmaps),
    }


def summarize(
    nodes: Sequence[Obj],
    pods: Sequence[Obj],
    pdbs: Sequence[Obj] = (),
    configmaps: Sequence[Obj] = (),
) -> dict[str, Any]:
    """Counts of the shapes in a set of objects (the ``summary`` of ``cluster()``)."""

    def ready(item: Obj) -> bool:
        return any(
            c["type"] == "Ready" and c["status"] == "True" for c in item["status"]["conditions"]
        )

    yunikorn = [p for p in pods if p["spec"]["schedulerName"] == "yunikorn"]
    queues: dict[str, int] = {}
    no_queue = 0
    for item in yunikorn:
        queue = item["metadata"].get("labels", {}).get(QUEUE_LABEL) or item["metadata"].get(
            "annotations", {}
        ).get(QUEUE_ANNOTATION)
        if queue is None:
            no_queue += 1
        else:
            queues[queue] = queues.get(queue, 0) + 1

    def terminating(item: Obj) -> bool:
        return "deletionTimestamp" in item["metadata"]

    def bound(item: Obj) -> bool:
        return "nodeName" in item["spec"]

    def role(item: Obj) -> str | None:
        return item["metadata"].get("labels", {}).get("spark-role")

    return {
        "nodes": len(nodes),
        "gpu_nodes": sum(1 for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]),
        "cordoned_nodes": sum(1 for n in nodes if n["spec"].get("unschedulable")),
        "not_ready_nodes": sum(1 for n in nodes if not ready(n)),
        "schedulable_nodes": sum(
            1 for n in nodes if ready(n) and not n["spec"].get("unschedulable")
        ),
        "pods": len(pods),
        "yunikorn_pods": len(yunikorn),
        "other_scheduler_pods": len(pods) - len(yunikorn),
        "bound": sum(1 for p in yunikorn if bound(p)),
        "pending": sum(1 for p in yunikorn if not bound(p)),
        "terminating": sum(1 for p in yunikorn if terminating(p)),
        "allocations": sum(1 for p in yunikorn if bound(p) and not terminating(p)),
        "asks": sum(1 for p in yunikorn if not bound(p)),
        "daemonset_pods": sum(
            1
            for p in yunikorn
            if any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences", []))
        ),
        "spark_apps": len(
            {p["metadata"]["labels"]["spark-app-selector"] for p in yunikorn if role(p)}
        ),
        "spark_drivers": sum(1 for p in yunikorn if role(p) == "driver"),
        "spark_executors": sum(1 for p in yunikorn if role(p) == "executor"),
        "gang_pods": sum(
            1
            for p in yunikorn
            if TASK_GROUP_NAME_ANNOTATION in p["metadata"].get("annotations", {})
        ),
        "gpu_pods": sum(
            1
            for p in yunikorn
            if any(
                "nvidia.com/gpu" in c["resources"].get("requests", {})
                for c in p["spec"]["containers"]
            )
        ),
        "best_effort": sum(1 for p in yunikorn if p["status"]["qosClass"] == "BestEffort"),
        "guaranteed": sum(1 for p in yunikorn if p["status"]["qosClass"] == "Guaranteed"),
        "burstable": sum(1 for p in yunikorn if p["status"]["qosClass"] == "Burstable"),
        "no_queue": no_queue,
        "queues": dict(sorted(queues.items())),
        "pdbs": len(pdbs),
        "configmaps": len(configmaps),
    }
