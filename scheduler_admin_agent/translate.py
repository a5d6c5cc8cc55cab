"""Kubernetes objects -> the product's cluster-state vocabulary (SPEC 3.3). Pure functions.

Input: the typed models of the official client (``V1Node``, ``V1Pod``,
``V1PodDisruptionBudget``). Output: the items of a ``cluster-state`` body, as plain dicts.
How each field is read, and where it follows YuniKorn's k8shim:

- **Nodes**: ``capacity`` is the node's allocatable (``cpu`` -> ``vcore`` millicores, memory in
  bytes, ``pods``, extended resources such as ``nvidia.com/gpu`` by name) minus what pods of
  other schedulers bound to it request (YuniKorn counts those as "occupied"); ``schedulable`` is
  not cordoned and ``Ready``.
- **Which pods**: ``spec.schedulerName`` is ours (``yunikorn`` by default); finished pods
  (``Succeeded``/``Failed``) and terminating ones (``deletionTimestamp`` set) are gone already.
  A pod bound to a node is an allocation, an unbound one an ask.
- **Ids**: ``<namespace>/<name>@<uid>``: readable in the console, and unique even when a pod is
  recreated under the same name (a StatefulSet's ``web-0``); the name part is shortened when
  the whole would pass 253 characters. The agent finds the pod again by its uid.
- **Queue**: label ``yunikorn.apache.org/queue``, annotation ``yunikorn.apache.org/queue``,
  label ``queue`` (k8shim's order); otherwise the default queue (``--default-queue``) or, with
  ``--namespace-queues``, ``root.<namespace>``. Names follow YuniKorn: lower-cased, and a path
  that does not start with ``root.`` is put under it. An application's queue is the queue of
  its first pod (YuniKorn places the application once, when its first pod arrives).
- **Application**: label ``yunikorn.apache.org/app-id``, annotation ``yunikorn.apache.org/app-id``,
  label ``applicationId``, label ``spark-app-selector``; otherwise k8shim's generated id
  ``yunikorn-<namespace>-autogen`` (one application per namespace, its default).
- **User**: ``user`` of the JSON annotation ``yunikorn.apache.org/user.info`` that YuniKorn's
  admission controller writes; empty without it.
- **Resources**: the Kubernetes effective request: the sum of the containers (restartable init
  containers, i.e. sidecars, included), at least each init container's request (plus the
  sidecars started before it), plus the pod overhead; a container's limit stands in for a
  request it does not state (as the API server's defaulting does); plus ``pods: 1``, as
  YuniKorn counts every pod against the node's pod capacity.
- **Priority, preemption policy**: ``spec.priority`` (0 when unset) and
  ``spec.preemptionPolicy``.
- **created_at**: an allocation's ``status.startTime`` (its creation when not started yet), an
  ask's creation time.
- **allow_preemption**: false only with the annotation ``yunikorn.apache.org/allow-preemption:
  "false"``.
- **Originator**: the pod the application started from, which quota preemption takes last:
  a Spark driver (label ``spark-role: driver``); else a pod of the application that owns
  other pods of it (Spark executors are owned by their driver pod); else the application's
  oldest pod (YuniKorn marks the pod that created the application).
- **required_node** (DaemonSet pods, owner kind ``DaemonSet``): the node named by the pod's
  required node affinity on ``metadata.name`` (what the DaemonSet controller writes), else
  ``spec.nodeName``.
- **Job** (gang): pods with YuniKorn's ``yunikorn.apache.org/task-group-name`` annotation form
  one job per application: the job id is the application id.
- **QoS**: ``status.qosClass``.
- **Budgets**: every PodDisruptionBudget as ``<namespace>/<name>`` with
  ``status.disruptionsAllowed``; a pod's ``pdb`` is the first budget (by name) of its namespace
  whose selector matches its labels (an empty selector matches every pod, a missing one none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from scheduler_admin_agent.quantities import QuantityError, parse_quantity, product_resources

#: Longest id the product stores (``scheduler_admin.base.limits.CLUSTER_ID_MAX_LENGTH``).
ID_MAX_LENGTH = 253
UID_SEPARATOR = "@"

QUEUE_LABEL = "queue"
CANONICAL_QUEUE_LABEL = "yunikorn.apache.org/queue"
QUEUE_ANNOTATION = "yunikorn.apache.org/queue"
CANONICAL_APP_LABEL = "yunikorn.apache.org/app-id"
APP_ANNOTATION = "yunikorn.apache.org/app-id"
APP_LABEL = "applicationId"
SPARK_APP_LABEL = "spark-app-selector"
SPARK_ROLE_LABEL = "spark-role"
USER_INFO_ANNOTATION = "yunikorn.apache.org/user.info"
ALLOW_PREEMPTION_ANNOTATION = "yunikorn.apache.org/allow-preemption"
TASK_GROUP_ANNOTATION = "yunikorn.apache.org/task-group-name"

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class QueueRule:
    """Where a pod that names no queue goes (YuniKorn's placement, simplified to its default:
    the ``provided`` rule with a fallback)."""

    default_queue: str = "root.default"
    namespace_queues: bool = False

    def fallback(self, namespace: str) -> str:
        return f"root.{namespace}" if self.namespace_queues else self.default_queue


@dataclass
class ClusterState:
    """A full cluster-state body (the items the product should hold) and the pods left out."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    asks: dict[str, dict[str, Any]] = field(default_factory=dict)
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: pod id -> why it is not in the body (unknown queue, unknown node, bad quantity).
    skipped: dict[str, str] = field(default_factory=dict)

    KINDS = ("nodes", "allocations", "asks", "budgets")

    def counts(self) -> dict[str, int]:
        return {
            "nodes": len(self.nodes),
            "allocations": len(self.allocations),
            "asks": len(self.asks),
            "budgets": len(self.budgets),
            "skipped": len(self.skipped),
        }


# --- Small readers -------------------------------------------------------------------------


def when(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with ``Z``, as the product writes times."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _labels(obj: Any) -> Mapping[str, str]:
    return obj.metadata.labels or {}


def _annotations(obj: Any) -> Mapping[str, str]:
    return obj.metadata.annotations or {}


def pod_id(pod: Any) -> str:
    """``<namespace>/<name>@<uid>``, the name part shortened to fit ``ID_MAX_LENGTH``."""
    meta = pod.metadata
    suffix = f"{UID_SEPARATOR}{meta.uid}"
    readable = f"{meta.namespace}/{meta.name}"
    room = ID_MAX_LENGTH - len(suffix)
    return f"{readable[:room]}{suffix}"


def uid_of(task_id: str) -> str:
    """The pod uid inside a task id made by ``pod_id`` ("" for an id the agent did not make)."""
    _, separator, uid = task_id.rpartition(UID_SEPARATOR)
    return uid if separator else ""


def budget_id(pdb: Any) -> str:
    return f"{pdb.metadata.namespace}/{pdb.metadata.name}"


def queue_path(name: str) -> str:
    """YuniKorn's spelling of a queue a pod names: lower-cased, under ``root``."""
    path = name.strip().lower()
    if path != "root" and not path.startswith("root."):
        path = f"root.{path}"
    return path


def pod_queue(pod: Any, rule: QueueRule) -> str:
    labels, annotations = _labels(pod), _annotations(pod)
    named = (
        labels.get(CANONICAL_QUEUE_LABEL)
        or annotations.get(QUEUE_ANNOTATION)
        or labels.get(QUEUE_LABEL)
        or rule.fallback(pod.metadata.namespace)
    )
    return queue_path(named)


def pod_application(pod: Any) -> str:
    labels, annotations = _labels(pod), _annotations(pod)
    return (
        labels.get(CANONICAL_APP_LABEL)
        or annotations.get(APP_ANNOTATION)
        or labels.get(APP_LABEL)
        or labels.get(SPARK_APP_LABEL)
        or f"yunikorn-{pod.metadata.namespace}-autogen"
    )


def pod_user(pod: Any) -> str:
    raw = _annotations(pod).get(USER_INFO_ANNOTATION)
    if not raw:
        return ""
    try:
        info = json.loads(raw)
    except ValueError:
        return ""
    user = info.get("user") if isinstance(info, dict) else None
    return user if isinstance(user, str) else ""


def is_ours(pod: Any, scheduler_name: str) -> bool:
    return (pod.spec.scheduler_name or "default-scheduler") == scheduler_name


def is_active(pod: Any) -> bool:
    """Not finished and not on its way out."""
    return pod.metadata.deletion_timestamp is None and (pod.status is None or (
        pod.status.phase not in FINISHED_PHASES
    ))  # fmt: skip


def _owner(obj: Any) -> Any | None:
    """The controller owner reference (else the first one)."""
    owners = obj.metadata.owner_references or []
    for owner in owners:
        if owner.controller:
            return owner
    return owners[0] if owners else None


# --- Resources -----------------------------------------------------------------------------


def _container_requests(container: Any) -> dict[str, Fraction]:
    resources = container.resources
    if resources is None:
        return {}
    stated = dict(resources.limits or {})
    stated.update(resources.requests or {})  # a limit stands in for a missing request
    return {name: parse_quantity(value) for name, value in stated.items()}


def _add(total: dict[str, Fraction], amount: Mapping[str, Fraction]) -> None:
    for name, value in amount.items():
        total[name] = total.get(name, Fraction(0)) + value


def pod_requests(pod: Any) -> dict[str, Fraction]:
    """The Kubernetes effective request of a pod (``resourcehelper.PodRequests``)."""
    spec = pod.spec
    total: dict[str, Fraction] = {}
    for container in spec.containers or []:
        _add(total, _container_requests(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.init_containers or []:
        amount = _container_requests(container)
        if container.restart_policy == "Always":  # a sidecar runs beside the app containers
            _add(total, amount)
            _add(sidecars, amount)
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            _add(during, amount)
        for name, value in during.items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), value)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), value)
    _add(total, {k: parse_quantity(v) for k, v in (spec.overhead or {}).items()})
    return total


def task_resources(pod: Any) -> dict[str, int | str]:
    """The pod's request in the product's units, with ``pods: 1``."""
    resources = product_resources(pod_requests(pod))
    resources["pods"] = 1
    return resources


# --- Nodes ---------------------------------------------------------------------------------


def node_ready(node: Any) -> bool:
    for condition in (node.status.conditions if node.status else None) or []:
        if condition.type == "Ready":
            return condition.status == "True"
    return False


def node_item(node: Any, occupied: Mapping[str, Fraction] | None = None) -> dict[str, Any]:
    """One node: allocatable minus what other schedulers' pods take, and whether new pods may
    land there."""
    allocatable = {
        name: parse_quantity(value)
        for name, value in ((node.status.allocatable if node.status else None) or {}).items()
    }
    for name, value in (occupied or {}).items():
        if name in allocatable:
            allocatable[name] = max(Fraction(0), allocatable[name] - value)
    return {
        "name": node.metadata.name,
        "capacity": product_resources(allocatable),
        "schedulable": not (node.spec and node.spec.unschedulable) and node_ready(node),
    }


# --- Budgets -------------------------------------------------------------------------------


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A ``V1LabelSelector`` against labels (``None`` matches nothing, empty everything)."""
    if selector is None:
        return False
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions or []:
        present = requirement.key in labels
        values = requirement.values or []
        operator = requirement.operator
        if operator == "In" and not (present and labels[requirement.key] in values):
            return False
        if operator == "NotIn" and present and labels[requirement.key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def budget_item(pdb: Any) -> dict[str, Any]:
    allowed = pdb.status.disruptions_allowed if pdb.status else 0
    return {"name": budget_id(pdb), "allowed_disruptions": max(0, allowed or 0)}


# --- Pods ----------------------------------------------------------------------------------


def required_node(pod: Any) -> str:
    """The node a DaemonSet pod must run on ("" for other pods)."""
    owner = _owner(pod)
    if owner is None or owner.kind != "DaemonSet":
        return ""
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity else None
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    )
    for term in (required.node_selector_terms if required else None) or []:
        for requirement in term.match_fields or []:
            if (
                requirement.key == "metadata.name"
                and requirement.operator == "In"
                and requirement.values
            ):
                return str(requirement.values[0])
    return pod.spec.node_name or ""


def _created(pod: Any) -> datetime | None:
    return pod.metadata.creation_timestamp


def originators(pods_by_app: Mapping[str, list[Any]]) -> set[str]:
    """Uids of each application's originator pod (see the module docstring)."""
    chosen: set[str] = set()
    for pods in pods_by_app.values():
        driver = [pod for pod in pods if _labels(pod).get(SPARK_ROLE_LABEL) == "driver"]
        if driver:
            chosen.add(min(driver, key=_age_key).metadata.uid)
            continue
        uids = {pod.metadata.uid for pod in pods}
        owners = {
            owner.uid
            for pod in pods
            for owner in (pod.metadata.owner_references or [])
            if owner.kind == "Pod" and owner.uid in uids
        }
        if owners:
            owning = [pod for pod in pods if pod.metadata.uid in owners]
            chosen.add(min(owning, key=_age_key).metadata.uid)
        else:
            chosen.add(min(pods, key=_age_key).metadata.uid)
    return chosen


def _age_key(pod: Any) -> tuple[str, str]:
    return (when(_created(pod)) or "", pod.metadata.name or "")


def _budget_of(pod: Any, budgets_by_namespace: Mapping[str, list[Any]]) -> str:
    labels = _labels(pod)
    for pdb in budgets_by_namespace.get(pod.metadata.namespace, []):
        if selector_matches(pdb.spec.selector if pdb.spec else None, labels):
            return budget_id(pdb)
    return ""


def translate(
    nodes: Iterable[Any],
    pods: Iterable[Any],
    pdbs: Iterable[Any],
    *,
    scheduler_name: str,
    rule: QueueRule,
    leaves: set[str] | None,
) -> ClusterState:
    """The whole cluster as the product should see it.

    ``leaves`` are the partition's leaf queue paths, lower-cased (``None``: not known yet, no
    pod is left out for its queue). A pod whose queue is not one of them, that sits on a node
    the cluster does not list, or whose resources cannot be read is left out with the reason
    (``ClusterState.skipped``): the product refuses a push with such a task as a whole.
    """
    state = ClusterState()
    nodes = list(nodes)
    node_names = {node.metadata.name for node in nodes}
    ours: list[Any] = []
    occupied: dict[str, dict[str, Fraction]] = {}
    for pod in pods:
        if not is_active(pod):
            continue
        if is_ours(pod, scheduler_name):
            ours.append(pod)
        elif pod.spec.node_name:
            try:
                used = pod_requests(pod)
                used["pods"] = used.get("pods", Fraction(0)) + 1  # one of the node's pod slots
                _add(occupied.setdefault(pod.spec.node_name, {}), used)
            except QuantityError:
                continue
    for node in sorted(nodes, key=lambda node: node.metadata.name):
        state.nodes[node.metadata.name] = node_item(node, occupied.get(node.metadata.name))

    budgets_by_namespace: dict[str, list[Any]] = {}
    for pdb in sorted(pdbs, key=budget_id):
        state.budgets[budget_id(pdb)] = budget_item(pdb)
        budgets_by_namespace.setdefault(pdb.metadata.namespace, []).append(pdb)

    by_app: dict[str, list[Any]] = {}
    for pod in ours:
        by_app.setdefault(pod_application(pod), []).append(pod)
    first_pods = originators(by_app)
    # An application's queue is its first pod's.
    app_queue = {app: pod_queue(min(pods, key=_age_key), rule) for app, pods in by_app.items()}
    for app, pods in sorted(by_app.items()):
        queue = app_queue[app]
        gang = any(TASK_GROUP_ANNOTATION in _annotations(pod) for pod in pods)
        for pod in pods:
            task_id = pod_id(pod)
            reason = _unplaceable(pod, app, queue, leaves, node_names)
            if reason:
                state.skipped[task_id] = reason
                continue
            try:
                resources = task_resources(pod)
            except QuantityError as error:
                state.skipped[task_id] = f"resources: {error}"
                continue
            item: dict[str, Any] = {
                "id": task_id,
                "app": app,
                "queue": queue,
                "user": pod_user(pod)[:ID_MAX_LENGTH],
                "resources": resources,
                "priority": pod.spec.priority or 0,
                "allow_preemption": _annotations(pod)
                .get(ALLOW_PREEMPTION_ANNOTATION, "")
                .strip()
                .lower()
                != "false",
            }
            if gang:
                item["job"] = app
            daemon_node = required_node(pod)
            if daemon_node and daemon_node in node_names:
                item["required_node"] = daemon_node
            if pod.spec.node_name:
                status = pod.status
                item["node"] = pod.spec.node_name
                item["originator"] = pod.metadata.uid in first_pods
                item["created_at"] = when((status.start_time if status else None) or _created(pod))
                if status and status.qos_class:
                    item["qos"] = status.qos_class
                budget = _budget_of(pod, budgets_by_namespace)
                if budget:
                    item["pdb"] = budget
                state.allocations[task_id] = item
            else:
                item["created_at"] = when(_created(pod))
                item["preemption_policy"] = pod.spec.preemption_policy or "PreemptLowerPriority"
                nominated = pod.status.nominated_node_name if pod.status else None
                if nominated and nominated in node_names:
                    item["node"] = nominated
                state.asks[task_id] = item
    return state


def _unplaceable(
    pod: Any, app: str, queue: str, leaves: set[str] | None, node_names: set[str]
) -> str:
    if len(app) > ID_MAX_LENGTH:
        return f"application id longer than {ID_MAX_LENGTH} characters"
    if leaves is not None and queue not in leaves:
        return f"queue {queue} is not a leaf queue of the partition"
    if pod.spec.node_name and pod.spec.node_name not in node_names:
        return f"node {pod.spec.node_name} is not in the cluster's node list"
    daemon_node = required_node(pod)
    if daemon_node and daemon_node not in node_names and not pod.spec.node_name:
        return f"required node {daemon_node} is not in the cluster's node list"
    return ""
