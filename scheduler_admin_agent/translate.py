"""Kubernetes objects -> the product's cluster-state vocabulary (SPEC 3.3). Pure functions.

Input: the typed models of the official client (``V1Node``, ``V1Pod``,
``V1PodDisruptionBudget``). Output: the items of a ``cluster-state`` body, as plain dicts.
How each field is read, and where it follows YuniKorn's k8shim:

- **Nodes**: ``capacity`` is the node's allocatable (``cpu`` -> ``vcore`` millicores, memory in
  bytes, ``pods``, extended resources such as ``nvidia.com/gpu`` by name) minus what pods of
  other schedulers bound to it request (YuniKorn counts those as "occupied"); ``schedulable`` is
  not cordoned and ``Ready``; ``labels`` and ``taints`` as the node has them.
- **Where a pending pod may run**: ``spec.nodeSelector``, the required node affinity's
  ``matchExpressions`` and ``spec.tolerations`` (``eligibility_fields``), so that preemption
  for it uses only nodes it may use (SPEC 3.3).
- **Which pods**: ``spec.schedulerName`` is ours (``yunikorn`` by default); finished pods
  (``Succeeded``/``Failed``) are gone. A terminating pod (``deletionTimestamp`` set) still
  holds its node until it is gone, as YuniKorn and the scheduler count it: it stays an
  allocation that is never a victim again (``allow_preemption`` false); an unbound one is gone.
  An unbound pod behind ``schedulingGates`` is no demand (k8shim creates no task for it): left
  out with the reason. A pod bound to a node is an allocation, an unbound one an ask.
- **Ids**: ``<namespace>/<name>@<uid>``: readable in the console, and unique even when a pod is
  recreated under the same name (a StatefulSet's ``web-0``); the name part is shortened when
  the whole would pass 253 characters. The agent finds the pod again by its uid.
- **Queue**: where YuniKorn's placement rules put the pod's application
  (``preemption.placement``, driven by the partition's stored ``placementrules`` and queue
  tree), evaluated once per application from its oldest pod (k8shim registers pods in creation
  order, and YuniKorn places an application when it first sees it). The rules read the queue
  the pod names — label ``yunikorn.apache.org/queue``, annotation ``yunikorn.apache.org/queue``,
  label ``queue`` (k8shim's order), as written —, the user and groups, and the tags k8shim
  attaches: ``namespace`` and ``namespace.parentqueue`` (the namespace's
  ``yunikorn.apache.org/parentqueue`` annotation). Applications are placed as YuniKorn placed
  them when their first pod was pending; one that no rule places now but that has a running
  pod is where YuniKorn keeps such pods, ``root.@recovery@``.
  A pod placed in a queue YuniKorn creates (a dynamic queue, the recovery queue included) is
  pushed with it: the queue goes in the body's ``dynamic_queues`` with the child template it
  takes. A pod whose application is rejected is left out with the reason.
- **Application**: label ``yunikorn.apache.org/app-id``, annotation ``yunikorn.apache.org/app-id``,
  label ``applicationId``, label ``spark-app-selector`` (an id ending in ``-uniqueautogen`` gets
  the pod's uid instead of that suffix); otherwise k8shim's generated id
  ``yunikorn-<namespace>-autogen``, or with ``--unique-app-ids`` (k8shim's
  ``service.generateUniqueAppId``) ``<namespace, 26 characters at most>-<pod uid>``; a generated
  id is cut to 63 characters.
- **User**: ``user`` and ``groups`` of the JSON annotation ``yunikorn.apache.org/user.info``
  that YuniKorn's admission controller writes; ``nobody`` without it (or with an empty user).
- **Resources**: k8shim's ``GetPodResource``: the sum of the containers (restartable init
  containers, i.e. sidecars, included), at least each init container's request (plus the
  sidecars started before it), each container as the larger of its spec, its allocated and its
  actual resources (an in-place resize; only the actual ones when the resize is infeasible);
  pod-level requests (``spec.resources``, cpu, memory, hugepages) replace that sum for the types
  they set; plus the pod overhead; a container's limit stands in for a request it does not
  state (as the API server's defaulting does); plus ``pods: 1``, as YuniKorn counts every pod
  against the node's pod capacity.
- **Priority, preemption policy**: ``spec.priority`` (0 when unset) and
  ``spec.preemptionPolicy``.
- **created_at**: an allocation's ``status.startTime`` (its creation when not started yet), an
  ask's creation time.
- **allow_preemption**: the pod's annotation ``yunikorn.apache.org/allow-preemption`` when it
  is exactly ``true`` or ``false``; otherwise false only when the pod's PriorityClass carries
  that annotation with exactly ``false`` (k8shim's reading); always false for a terminating pod.
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
  ``status.disruptionsAllowed``; a pod's ``pdb`` is the budget of its namespace whose selector
  matches its labels, as the Eviction API finds it (an empty or missing selector matches no pod
  there). A pod under several budgets cannot be evicted at all (the Eviction API answers 500):
  its ``pdb`` is a budget ``<namespace>/<name1>+<name2>`` that allows no disruption, so the
  engine does not choose it while that holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from preemption.placement import Application, Placer, UserGroup
from scheduler_admin_agent.podresources import (  # noqa: F401 (re-exported)
    _MEMO,
    _add,
    pod_requests,
    task_resources,
)
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
PARENT_QUEUE_ANNOTATION = "yunikorn.apache.org/parentqueue"
DEFAULT_USER = "nobody"
UNIQUE_AUTOGEN_SUFFIX = "-uniqueautogen"
#: k8shim cuts a generated application id to this many characters.
GENERATED_APP_ID_MAX = 63

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Reading:
    """What the agent knows besides the pods that decides how they read: the partition's
    placement (rules and queue tree, from the product's config), the namespaces' annotations
    (the ``tag`` rule's ``namespace.parentqueue``), and k8shim's unique-id mode."""

    config: Mapping[str, Any]
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unique_app_ids: bool = False
    #: PriorityClass name -> its annotations (the ``allow-preemption`` fallback).
    priority_classes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass
class ClusterState:
    """A full cluster-state body (the items the product should hold) and the pods left out."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    asks: dict[str, dict[str, Any]] = field(default_factory=dict)
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: pod id -> why it is not in the body (not placed, unknown node, bad quantity).
    skipped: dict[str, str] = field(default_factory=dict)
    #: Queues YuniKorn would create for the applications (path -> leaf, child template),
    #: pushed as the body's ``dynamic_queues`` (``dynamic_items``).
    dynamic_queues: dict[str, dict[str, Any]] = field(default_factory=dict)

    KINDS = ("nodes", "allocations", "asks", "budgets")

    def counts(self) -> dict[str, int]:
        return {
            "nodes": len(self.nodes),
            "allocations": len(self.allocations),
            "asks": len(self.asks),
            "budgets": len(self.budgets),
            "skipped": len(self.skipped),
        }

    def dynamic_items(self) -> dict[str, dict[str, Any]]:
        """The dynamic queues as items of a cluster-state body, by path."""
        return {
            path: {"path": path, "leaf": queue["leaf"], "template": queue["template"]}
            for path, queue in self.dynamic_queues.items()
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


def pod_queue(pod: Any) -> str:
    """The queue a pod names, as written (k8shim's ``GetQueueNameFromPod``); "" for none."""
    labels, annotations = _labels(pod), _annotations(pod)
    return (
        labels.get(CANONICAL_QUEUE_LABEL)
        or annotations.get(QUEUE_ANNOTATION)
        or labels.get(QUEUE_LABEL)
        or ""
    )


def pod_application(pod: Any, *, unique_app_ids: bool = False) -> str:
    """k8shim's ``GetApplicationIDFromPod`` (see the module docstring)."""
    labels, annotations = _labels(pod), _annotations(pod)
    meta = pod.metadata
    named = (
        labels.get(CANONICAL_APP_LABEL)
        or annotations.get(APP_ANNOTATION)
        or labels.get(APP_LABEL)
        or labels.get(SPARK_APP_LABEL)
        or ""
    )
    if named.endswith(UNIQUE_AUTOGEN_SUFFIX):
        named = f"{named.removesuffix(UNIQUE_AUTOGEN_SUFFIX)}-{meta.uid or ''}"
    if named:
        return named
    namespace = meta.namespace or ""
    if unique_app_ids:
        generated = (
            f"{namespace[:26]}-{meta.uid}"
            if meta.uid
            else f"{namespace[:26]}{UNIQUE_AUTOGEN_SUFFIX}"
        )
    else:
        generated = f"yunikorn-{namespace}-autogen"
    return generated[:GENERATED_APP_ID_MAX]


def pod_user(pod: Any) -> UserGroup:
    """k8shim's ``GetUserFromPod``: the user.info annotation, else ``nobody``."""
    raw = _annotations(pod).get(USER_INFO_ANNOTATION)
    if not raw:
        return UserGroup(DEFAULT_USER)
    try:
        info = json.loads(raw)
    except ValueError:
        return UserGroup(DEFAULT_USER)
    if not isinstance(info, dict):
        return UserGroup(DEFAULT_USER)
    user = info.get("user")
    groups = info.get("groups")
    return UserGroup(
        user if isinstance(user, str) and user else DEFAULT_USER,
        tuple(str(group) for group in groups) if isinstance(groups, list) else (),
    )


def application_tags(pod: Any, namespaces: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The tags k8shim gives an application that placement rules can read."""
    namespace = pod.metadata.namespace or "default"
    tags = {"namespace": namespace}
    parent = (namespaces.get(namespace) or {}).get(PARENT_QUEUE_ANNOTATION)
    if parent:
        tags["namespace.parentqueue"] = parent
    return tags


def is_ours(pod: Any, scheduler_name: str) -> bool:
    return (pod.spec.scheduler_name or "default-scheduler") == scheduler_name


def is_active(pod: Any) -> bool:
    """Not finished; a bound pod on its way out (``deletionTimestamp``) still holds its node
    until it is gone, for YuniKorn and the scheduler alike; an unbound one is no demand."""
    if pod.status is not None and pod.status.phase in FINISHED_PHASES:
        return False
    return pod.metadata.deletion_timestamp is None or bool(pod.spec.node_name)


def is_terminating(pod: Any) -> bool:
    return pod.metadata.deletion_timestamp is not None


def scheduling_gates(pod: Any) -> list[str]:
    """The gates an unbound pod waits behind (k8shim creates no task for it until they go)."""
    if pod.spec.node_name:
        return []
    return [gate.name for gate in pod.spec.scheduling_gates or []]


def allow_preemption(pod: Any, priority_classes: Mapping[str, Mapping[str, str]]) -> bool:
    """k8shim's ``isPreemptSelfAllowed``: the pod's annotation when it is exactly ``true`` or
    ``false``; otherwise false only when its PriorityClass's annotation is exactly ``false``."""
    value = _annotations(pod).get(ALLOW_PREEMPTION_ANNOTATION)
    if value in ("true", "false"):
        return value == "true"
    priority_class = priority_classes.get(pod.spec.priority_class_name or "") or {}
    return priority_class.get(ALLOW_PREEMPTION_ANNOTATION) != "false"


def _owner(obj: Any) -> Any | None:
    """The controller owner reference (else the first one)."""
    owners = obj.metadata.owner_references or []
    for owner in owners:
        if owner.controller:
            return owner
    return owners[0] if owners else None


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
    item: dict[str, Any] = {
        "name": node.metadata.name,
        "capacity": product_resources(allocatable),
        "schedulable": not (node.spec and node.spec.unschedulable) and node_ready(node),
    }
    labels = _labels(node)
    if labels:
        item["labels"] = dict(labels)
    taints = [
        {"key": taint.key, "value": taint.value or "", "effect": taint.effect}
        for taint in ((node.spec.taints if node.spec else None) or [])
    ]
    if taints:
        item["taints"] = taints
    return item


# --- Where a pod may run -------------------------------------------------------------------


def eligibility_fields(pod: Any) -> dict[str, Any]:
    """A pending pod's ``nodeSelector``, required node affinity and tolerations, as the product
    reads them (SPEC 3.3); only the fields the pod sets.

    ``matchFields`` (on ``metadata.name``) is not modelled: a term that has some is read from
    its ``matchExpressions`` alone, and when such a term has none, the affinity is left out
    (the pod may then be planned for a node its affinity rules out; kube-scheduler then does
    not bind it there and the ask is planned again after its delay)."""
    fields: dict[str, Any] = {}
    if pod.spec.node_selector:
        fields["node_selector"] = dict(pod.spec.node_selector)
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity else None
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    )
    terms = []
    for term in (required.node_selector_terms if required else None) or []:
        expressions = [
            {"key": r.key, "operator": r.operator, "values": list(r.values or [])}
            for r in term.match_expressions or []
        ]
        if not expressions and term.match_fields:
            terms = []
            break
        terms.append(expressions)
    if terms:
        fields["node_affinity"] = terms
    tolerations = [
        {
            "key": toleration.key or "",
            "operator": toleration.operator or "Equal",
            "value": toleration.value or "",
            "effect": toleration.effect or "",
        }
        for toleration in pod.spec.tolerations or []
    ]
    if tolerations:
        fields["tolerations"] = tolerations
    return fields


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


def _budgets_of(pod: Any, budgets_by_namespace: Mapping[str, list[Any]]) -> list[str]:
    """The budgets the Eviction API applies to the pod (``getPodDisruptionBudgets``: same
    namespace, a selector that matches; an empty or missing selector matches nothing there)."""
    labels = _labels(pod)
    found = []
    for pdb in budgets_by_namespace.get(pod.metadata.namespace, []):
        selector = pdb.spec.selector if pdb.spec else None
        empty = selector is None or not (selector.match_labels or selector.match_expressions)
        if not empty and selector_matches(selector, labels):
            found.append(budget_id(pdb))
    return found


def several_budgets_id(namespace: str, names: list[str]) -> str:
    """The budget the agent pushes for a pod under several: the Eviction API refuses to evict
    such a pod (a 500), so it is a budget that allows no disruption."""
    joined = f"{namespace}/" + "+".join(name.split("/", 1)[1] for name in names)
    if len(joined) <= ID_MAX_LENGTH:
        return joined
    digest = hashlib.sha256(joined.encode()).hexdigest()[:16]
    return f"{namespace}/several-budgets-{digest}"


def pod_kind(pod: Any, scheduler_name: str) -> str:
    """How a pod counts: ``ours`` (a task), ``gated`` (ours, behind scheduling gates: left out
    with the reason), ``occupies`` (another scheduler's pod bound to a node: it takes part of
    that node) or ``""`` (nothing: finished, or another scheduler's unbound pod)."""
    if not is_active(pod):
        return ""
    if is_ours(pod, scheduler_name):
        return "gated" if scheduling_gates(pod) else "ours"
    return "occupies" if pod.spec.node_name else ""


def gated_reason(pod: Any) -> str:
    return f"waits for scheduling gates ({', '.join(scheduling_gates(pod))}): not demand yet"


def occupied_by(pod: Any) -> dict[str, Fraction] | None:
    """What another scheduler's bound pod takes of its node (None: unreadable, not counted)."""
    try:
        used = pod_requests(pod)
    except QuantityError:
        return None
    used["pods"] = used.get("pods", Fraction(0)) + 1  # one of the node's pod slots
    return used


def translate(
    nodes: Iterable[Any],
    pods: Iterable[Any],
    pdbs: Iterable[Any],
    *,
    scheduler_name: str,
    reading: Reading,
) -> ClusterState:
    """The whole cluster as the product should see it.

    A pod whose application YuniKorn would not place (in a configured leaf queue or one it
    creates), that sits on a node the cluster does not list, or whose resources cannot be read is
    left out with the reason (``ClusterState.skipped``): the product refuses a push with such a
    task as a whole.
    """
    state = ClusterState()
    nodes = list(nodes)
    node_names = {node.metadata.name for node in nodes}
    ours: list[Any] = []
    occupied: dict[str, dict[str, Fraction]] = {}
    for pod in pods:
        kind = pod_kind(pod, scheduler_name)
        if kind == "gated":
            state.skipped[pod_id(pod)] = gated_reason(pod)
        elif kind == "ours":
            ours.append(pod)
        elif kind == "occupies":
            used = occupied_by(pod)
            if used is not None:
                _add(occupied.setdefault(pod.spec.node_name, {}), used)
    for node in sorted(nodes, key=lambda node: node.metadata.name):
        state.nodes[node.metadata.name] = node_item(node, occupied.get(node.metadata.name))

    budgets_by_namespace: dict[str, list[Any]] = {}
    for pdb in sorted(pdbs, key=budget_id):
        state.budgets[budget_id(pdb)] = budget_item(pdb)
        budgets_by_namespace.setdefault(pdb.metadata.namespace, []).append(pdb)

    by_app: dict[str, list[Any]] = {}
    for pod in ours:
        by_app.setdefault(pod_application(pod, unique_app_ids=reading.unique_app_ids), []).append(
            pod
        )
    first_pods = originators(by_app)
    app_queue = place_applications(by_app, reading, state)
    for app, pods in sorted(by_app.items()):
        queue, not_placed = app_queue[app]
        gang = is_gang(pods)
        for pod in pods:
            kind, item = task_item(
                pod,
                AppFacts(app, queue, not_placed, gang, pod.metadata.uid in first_pods),
                node_names,
                budgets_by_namespace,
                reading,
            )
            task_id = pod_id(pod)
            if kind == "skipped":
                state.skipped[task_id] = item
            else:
                if "pdb" in item and item["pdb"] not in state.budgets:
                    state.budgets[item["pdb"]] = several_budgets_item(item["pdb"])
                getattr(state, kind)[task_id] = item
    return state


def is_gang(pods: Iterable[Any]) -> bool:
    """A gang (one job per application): any pod carries a task-group annotation."""
    return any(TASK_GROUP_ANNOTATION in _annotations(pod) for pod in pods)


def several_budgets_item(name: str) -> dict[str, Any]:
    return {"name": name, "allowed_disruptions": 0}


@dataclass(frozen=True)
class AppFacts:
    """What a task reads of its application (the same for all its pods but ``originator``)."""

    app: str
    queue: str
    not_placed: str
    gang: bool
    originator: bool


def task_item(
    pod: Any,
    facts: AppFacts,
    node_names: set[str] | Mapping[str, Any],
    budgets_by_namespace: Mapping[str, list[Any]],
    reading: Reading,
) -> tuple[str, Any]:
    """One of our pods: ``("allocations"|"asks", item)`` or ``("skipped", reason)``. A pod under
    several budgets names the synthetic budget (``several_budgets_id``) the caller must push."""
    app = facts.app
    reason = facts.not_placed or _unplaceable(pod, app, node_names)
    if reason:
        return "skipped", reason
    try:
        resources = task_resources(pod)
    except QuantityError as error:
        return "skipped", f"resources: {error}"
    item: dict[str, Any] = {
        "id": pod_id(pod),
        "app": app,
        "queue": facts.queue,
        "user": pod_user(pod).user[:ID_MAX_LENGTH],
        "resources": resources,
        "priority": pod.spec.priority or 0,
        # A terminating pod is on its way out: never a victim again.
        "allow_preemption": allow_preemption(pod, reading.priority_classes)
        and not is_terminating(pod),
    }
    if facts.gang:
        item["job"] = app
    daemon_node = required_node(pod)
    if daemon_node and daemon_node in node_names:
        item["required_node"] = daemon_node
    if pod.spec.node_name:
        status = pod.status
        item["node"] = pod.spec.node_name
        item["originator"] = facts.originator
        item["created_at"] = when((status.start_time if status else None) or _created(pod))
        if status and status.qos_class:
            item["qos"] = status.qos_class
        budgets = _budgets_of(pod, budgets_by_namespace)
        if len(budgets) == 1:
            item["pdb"] = budgets[0]
        elif budgets:
            item["pdb"] = several_budgets_id(pod.metadata.namespace, budgets)
        return "allocations", item
    item["created_at"] = when(_created(pod))
    item["preemption_policy"] = pod.spec.preemption_policy or "PreemptLowerPriority"
    nominated = pod.status.nominated_node_name if pod.status else None
    if nominated and nominated in node_names:
        item["node"] = nominated
    item.update(eligibility_fields(pod))
    return "asks", item


def place_applications(
    by_app: Mapping[str, list[Any]], reading: Reading, state: ClusterState
) -> dict[str, tuple[str, str]]:
    """Each application's queue, or "" and why its pods are left out. Applications are placed
    in the order YuniKorn saw them (oldest pod first), so one placed later finds the dynamic
    queues earlier ones created."""
    placer = Placer.from_config(reading.config)
    oldest = {app: min(pods, key=_age_key) for app, pods in by_app.items()}
    result: dict[str, tuple[str, str]] = {}
    for app in sorted(by_app, key=lambda app: (_age_key(oldest[app]), app)):
        pod = oldest[app]
        application = Application(
            id=app, queue=pod_queue(pod), user=pod_user(pod),
            tags=application_tags(pod, reading.namespaces),
        )  # fmt: skip
        placement = placer.place(application)
        if not placement.placed and any(member.spec.node_name for member in by_app[app]):
            # Running, yet no rule places it now: YuniKorn holds it in its recovery queue.
            placement = placer.place(replace(application, forced=True))
        for created in placement.created:
            state.dynamic_queues[created.path] = {
                "leaf": created.leaf,
                "template": dict(created.template or {}),
            }
        if placement.queue is None:
            result[app] = ("", f"YuniKorn does not place application {app}: {placement.reason}")
            continue
        result[app] = (placement.queue, "")
    return result


def _unplaceable(pod: Any, app: str, node_names: set[str]) -> str:
    if len(app) > ID_MAX_LENGTH:
        return f"application id longer than {ID_MAX_LENGTH} characters"
    if pod.spec.node_name and pod.spec.node_name not in node_names:
        return f"node {pod.spec.node_name} is not in the cluster's node list"
    daemon_node = required_node(pod)
    if daemon_node and daemon_node not in node_names and not pod.spec.node_name:
        return f"required node {daemon_node} is not in the cluster's node list"
    return ""
