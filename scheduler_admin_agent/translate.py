"""Kubernetes objects -> the product's cluster-state vocabulary (SPEC 3.3). Pure functions.

Input: pods and nodes as the agent keeps them (``records.PodRecord``, ``records.NodeRecord``;
the client's typed ``V1Pod`` and ``V1Node`` are turned into records), disruption budgets as
decoded JSON (``lean``) or typed models. Output: the items of a ``cluster-state`` body, as
plain dicts.
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
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any, NamedTuple

from preemption.placement import Application, Placement, Placer, UserGroup
from scheduler_admin_agent.podresources import _add, parse
from scheduler_admin_agent.quantities import QuantityError, product_resources
from scheduler_admin_agent.records import (
    PodRecord,
    as_node,
    as_pod,
    written,
)

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
ALLOW_PREEMPTION_ANNOTATION = "yunikorn.apache.org/allow-preemption"
TASK_GROUP_ANNOTATION = "yunikorn.apache.org/task-group-name"
PARENT_QUEUE_ANNOTATION = "yunikorn.apache.org/parentqueue"
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
    return None if moment is None else written(moment)


def pod_id(pod: Any) -> str:
    """``<namespace>/<name>@<uid>``, the name part shortened to fit ``ID_MAX_LENGTH``."""
    pod = pod if type(pod) is PodRecord else as_pod(pod)  # (hot: no call for a record)
    suffix = f"{UID_SEPARATOR}{pod.uid}"
    readable = f"{pod.namespace}/{pod.name}"
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
    pod = pod if type(pod) is PodRecord else as_pod(pod)
    labels, annotations = pod.labels, pod.notes
    return (
        labels.get(CANONICAL_QUEUE_LABEL)
        or annotations.get(QUEUE_ANNOTATION)
        or labels.get(QUEUE_LABEL)
        or ""
    )


def pod_application(pod: Any, *, unique_app_ids: bool = False) -> str:
    """k8shim's ``GetApplicationIDFromPod`` (see the module docstring)."""
    pod = pod if type(pod) is PodRecord else as_pod(pod)
    labels, annotations = pod.labels, pod.notes
    named = (
        labels.get(CANONICAL_APP_LABEL)
        or annotations.get(APP_ANNOTATION)
        or labels.get(APP_LABEL)
        or labels.get(SPARK_APP_LABEL)
        or ""
    )
    if named.endswith(UNIQUE_AUTOGEN_SUFFIX):
        named = f"{named.removesuffix(UNIQUE_AUTOGEN_SUFFIX)}-{pod.uid or ''}"
    if named:
        return named
    namespace = pod.namespace or ""
    if unique_app_ids:
        generated = (
            f"{namespace[:26]}-{pod.uid}" if pod.uid else f"{namespace[:26]}{UNIQUE_AUTOGEN_SUFFIX}"
        )
    else:
        generated = f"yunikorn-{namespace}-autogen"
    return generated[:GENERATED_APP_ID_MAX]


def pod_user(pod: Any) -> UserGroup:
    """k8shim's ``GetUserFromPod``: the user.info annotation, else ``nobody`` (read when the
    pod arrives, ``records``)."""
    return as_pod(pod).user


def application_tags(pod: Any, namespaces: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The tags k8shim gives an application that placement rules can read."""
    namespace = pod.namespace or "default"
    tags = {"namespace": namespace}
    parent = (namespaces.get(namespace) or {}).get(PARENT_QUEUE_ANNOTATION)
    if parent:
        tags["namespace.parentqueue"] = parent
    return tags


def is_ours(pod: PodRecord, scheduler_name: str) -> bool:
    return (pod.scheduler or "default-scheduler") == scheduler_name


def is_active(pod: PodRecord) -> bool:
    """Not finished; a bound pod on its way out (``deletionTimestamp``) still holds its node
    until it is gone, for YuniKorn and the scheduler alike; an unbound one is no demand."""
    if pod.phase in FINISHED_PHASES:
        return False
    return not pod.deleting or bool(pod.node)


def is_terminating(pod: PodRecord) -> bool:
    return pod.deleting


def scheduling_gates(pod: PodRecord) -> tuple[str, ...]:
    """The gates an unbound pod waits behind (k8shim creates no task for it until they go)."""
    return () if pod.node else pod.gates


def allow_preemption(pod: Any, priority_classes: Mapping[str, Mapping[str, str]]) -> bool:
    """k8shim's ``isPreemptSelfAllowed``: the pod's annotation when it is exactly ``true`` or
    ``false``; otherwise false only when its PriorityClass's annotation is exactly ``false``."""
    pod = pod if type(pod) is PodRecord else as_pod(pod)
    value = pod.notes.get(ALLOW_PREEMPTION_ANNOTATION)
    if value in ("true", "false"):
        return value == "true"
    priority_class = priority_classes.get(pod.priority_class) or {}
    return priority_class.get(ALLOW_PREEMPTION_ANNOTATION) != "false"


# --- Nodes ---------------------------------------------------------------------------------


def node_item(node: Any, occupied: Mapping[str, Fraction] | None = None) -> dict[str, Any]:
    """One node: allocatable minus what other schedulers' pods take, and whether new pods may
    land there."""
    node = as_node(node)
    # ``parse``: each distinct quantity once (5,000 nodes mostly share a few).
    allocatable = {name: parse(value) for name, value in node.allocatable.items()}
    for name, value in (occupied or {}).items():
        if name in allocatable:
            allocatable[name] = max(Fraction(0), allocatable[name] - value)
    item: dict[str, Any] = {
        "name": node.name,
        "capacity": product_resources(allocatable),
        "schedulable": not node.unschedulable and node.ready,
    }
    if node.labels:
        item["labels"] = dict(node.labels)
    if node.taints:
        item["taints"] = [dict(taint) for taint in node.taints]
    return item


# --- Where a pod may run -------------------------------------------------------------------


def eligibility_fields(pod: Any) -> dict[str, Any]:
    """A pending pod's ``nodeSelector``, required node affinity and tolerations, as the product
    reads them (SPEC 3.3; ``records.eligibility``); only the fields the pod sets."""
    pod = as_pod(pod)
    return pod.eligibility


# --- Budgets -------------------------------------------------------------------------------


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A ``V1LabelSelector`` against labels (``None`` matches nothing, empty everything)."""
    if selector is None:
        return False
    return _selects(_read_selector("", selector), labels)


def budget_item(pdb: Any) -> dict[str, Any]:
    allowed = pdb.status.disruptions_allowed if pdb.status else 0
    return {"name": budget_id(pdb), "allowed_disruptions": max(0, allowed or 0)}


# --- Pods ----------------------------------------------------------------------------------


def required_node(pod: Any) -> str:
    """The node a DaemonSet pod must run on ("" for other pods; read when the pod arrives,
    ``records``)."""
    return as_pod(pod).daemon_node


def originators(pods_by_app: Mapping[str, list[PodRecord]]) -> set[str]:
    """Uids of each application's originator pod (see the module docstring)."""
    return {originator(pods) for pods in pods_by_app.values()}


def originator(pods: list[PodRecord]) -> str:
    """The uid of the originator among one application's pods (see the module docstring);
    an application of one pod (the usual case) needs no looking."""
    if len(pods) == 1:
        return pods[0].uid
    driver = [pod for pod in pods if pod.labels.get(SPARK_ROLE_LABEL) == "driver"]
    if driver:
        return min(driver, key=_age_key).uid
    owners = {owner for pod in pods for owner in pod.owner_pods}
    if owners:
        owners &= {pod.uid for pod in pods}
    if owners:
        owning = [pod for pod in pods if pod.uid in owners]
        return min(owning, key=_age_key).uid
    return min(pods, key=_age_key).uid


def _age_key(pod: PodRecord) -> tuple[str, str]:
    return (pod.created or "", pod.name)


class BudgetSelector(NamedTuple):
    """A budget's id and its selector, read once (not once per pod of its namespace): the
    ``matchLabels`` pairs and the ``matchExpressions`` as (key, operator, values)."""

    id: str
    labels: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...]


def budget_selectors(pdbs: Iterable[Any]) -> list[BudgetSelector]:
    """The budgets of one namespace that can match a pod, by id (an empty or missing selector
    matches no pod for the Eviction API: such a budget is left out)."""
    found = []
    for pdb in sorted(pdbs, key=budget_id):
        selector = pdb.spec.selector if pdb.spec else None
        if selector is None or not (selector.match_labels or selector.match_expressions):
            continue
        found.append(_read_selector(sys.intern(budget_id(pdb)), selector))
    return found


def _read_selector(budget: str, selector: Any) -> BudgetSelector:
    """A ``V1LabelSelector`` as ``_selects`` reads it."""
    expressions = tuple(
        (r.key, r.operator, tuple(r.values or ())) for r in selector.match_expressions or ()
    )
    return BudgetSelector(budget, tuple((selector.match_labels or {}).items()), expressions)


def _selects(budget: BudgetSelector, labels: Mapping[str, str]) -> bool:
    """Whether the selector (read once, ``_read_selector``) matches the labels: every
    ``matchLabels`` pair and every ``matchExpressions`` requirement."""
    for key, value in budget.labels:
        if labels.get(key) != value:
            return False
    for key, operator, values in budget.expressions:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _budgets_of(
    pod: PodRecord, budgets_by_namespace: Mapping[str, list[BudgetSelector]]
) -> list[str]:
    """The budgets the Eviction API applies to the pod (``getPodDisruptionBudgets``: same
    namespace, a selector that matches; ``budget_selectors``)."""
    labels = pod.labels
    return [
        budget.id
        for budget in budgets_by_namespace.get(pod.namespace, ())
        if _selects(budget, labels)
    ]


def several_budgets_id(namespace: str, names: list[str]) -> str:
    """The budget the agent pushes for a pod under several: the Eviction API refuses to evict
    such a pod (a 500), so it is a budget that allows no disruption."""
    joined = f"{namespace}/" + "+".join(name.split("/", 1)[1] for name in names)
    if len(joined) <= ID_MAX_LENGTH:
        return joined
    digest = hashlib.sha256(joined.encode()).hexdigest()[:16]
    return f"{namespace}/several-budgets-{digest}"


def pod_kind(pod: PodRecord, scheduler_name: str) -> str:
    """How a pod counts: ``ours`` (a task), ``gated`` (ours, behind scheduling gates: left out
    with the reason), ``occupies`` (another scheduler's pod bound to a node: it takes part of
    that node) or ``""`` (nothing: finished, or another scheduler's unbound pod). Read for
    every pod at every full translation: ``is_active``, ``is_ours`` and ``scheduling_gates``
    written out."""
    node = pod.node
    if pod.phase in FINISHED_PHASES or (pod.deleting and not node):
        return ""
    if (pod.scheduler or "default-scheduler") == scheduler_name:
        return "gated" if pod.gates and not node else "ours"
    return "occupies" if node else ""


def gated_reason(pod: PodRecord) -> str:
    return f"waits for scheduling gates ({', '.join(scheduling_gates(pod))}): not demand yet"


def pod_requests(pod: Any) -> dict[str, Fraction]:
    """What YuniKorn charges for a pod (``podresources``); ``QuantityError`` when a quantity
    cannot be read."""
    pod = as_pod(pod)
    if pod.requests is None:
        raise QuantityError(pod.bad_quantity)
    return dict(pod.requests)


def task_resources(pod: PodRecord) -> dict[str, int | str]:
    """The pod's request in the product's units, with ``pods: 1`` (shared between pods that
    ask for the same: never changed by its readers); ``QuantityError`` when unreadable."""
    if pod.resources is None:
        raise QuantityError(pod.bad_quantity)
    return pod.resources


def occupied_by(pod: PodRecord) -> dict[str, Fraction] | None:
    """What another scheduler's bound pod takes of its node (None: unreadable, not counted)."""
    if pod.requests is None:
        return None
    used = dict(pod.requests)
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
    nodes = [as_node(node) for node in nodes]
    node_names = {node.name for node in nodes}
    ours: list[PodRecord] = []
    occupied: dict[str, dict[str, Fraction]] = {}
    for pod in map(as_pod, pods):
        kind = pod_kind(pod, scheduler_name)
        if kind == "gated":
            state.skipped[pod_id(pod)] = gated_reason(pod)
        elif kind == "ours":
            ours.append(pod)
        elif kind == "occupies":
            used = occupied_by(pod)
            if used is not None:
                _add(occupied.setdefault(pod.node, {}), used)
    for node in sorted(nodes, key=lambda node: node.name):
        state.nodes[node.name] = node_item(node, occupied.get(node.name))

    in_namespace: dict[str, list[Any]] = {}
    for pdb in sorted(pdbs, key=budget_id):
        state.budgets[budget_id(pdb)] = budget_item(pdb)
        in_namespace.setdefault(pdb.metadata.namespace, []).append(pdb)
    budgets_by_namespace = {
        namespace: budget_selectors(pdbs) for namespace, pdbs in in_namespace.items()
    }

    by_app: dict[str, list[PodRecord]] = {}
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
            task_id = pod_id(pod)
            kind, item = task_item(
                pod,
                AppFacts(app, queue, not_placed, gang, pod.uid in first_pods),
                node_names,
                budgets_by_namespace,
                reading,
                task_id,
            )
            if kind == "skipped":
                state.skipped[task_id] = item
            else:
                if "pdb" in item and item["pdb"] not in state.budgets:
                    state.budgets[item["pdb"]] = several_budgets_item(item["pdb"])
                getattr(state, kind)[task_id] = item
    return state


def is_gang(pods: Iterable[PodRecord]) -> bool:
    """A gang (one job per application): any pod carries a task-group annotation."""
    for pod in pods:  # noqa: SIM110 (a loop, not ``any`` over a generator: once per app)
        if TASK_GROUP_ANNOTATION in pod.notes:
            return True
    return False


def several_budgets_item(name: str) -> dict[str, Any]:
    return {"name": name, "allowed_disruptions": 0}


class AppFacts(NamedTuple):
    """What a task reads of its application (the same for all its pods but ``originator``).
    A named tuple: one is made per task, and a tuple is cheaper to make than a frozen
    dataclass."""

    app: str
    queue: str
    not_placed: str
    gang: bool
    originator: bool


def task_item(
    pod: PodRecord,
    facts: AppFacts,
    node_names: set[str] | Mapping[str, Any],
    budgets_by_namespace: Mapping[str, list[BudgetSelector]],
    reading: Reading,
    task_id: str = "",
) -> tuple[str, Any]:
    """One of our pods: ``("allocations"|"asks", item)`` or ``("skipped", reason)``. A pod under
    several budgets names the synthetic budget (``several_budgets_id``) the caller must push.
    ``task_id``: the pod's ``pod_id`` when the caller has it already."""
    app = facts.app
    reason = facts.not_placed or _unplaceable(pod, app, node_names)
    if reason:
        return "skipped", reason
    try:
        resources = task_resources(pod)
    except QuantityError as error:
        return "skipped", f"resources: {error}"
    item: dict[str, Any] = {
        "id": task_id or pod_id(pod),
        "app": app,
        "queue": facts.queue,
        "user": pod.user.user[:ID_MAX_LENGTH],
        "resources": resources,
        "priority": pod.priority,
        # A terminating pod is on its way out: never a victim again.
        "allow_preemption": not pod.deleting and allow_preemption(pod, reading.priority_classes),
    }
    if facts.gang:
        item["job"] = app
    daemon_node = pod.daemon_node
    if daemon_node and daemon_node in node_names:
        item["required_node"] = daemon_node
    if pod.node:
        item["node"] = pod.node
        item["originator"] = facts.originator
        item["created_at"] = pod.started or pod.created
        if pod.qos:
            item["qos"] = pod.qos
        budgets = _budgets_of(pod, budgets_by_namespace)
        if len(budgets) == 1:
            item["pdb"] = budgets[0]
        elif budgets:
            item["pdb"] = several_budgets_id(pod.namespace, budgets)
        return "allocations", item
    item["created_at"] = pod.created
    item["preemption_policy"] = pod.preemption_policy or "PreemptLowerPriority"
    nominated = pod.nominated
    if nominated and nominated in node_names:
        item["node"] = nominated
    item.update(pod.eligibility)
    return "asks", item


def place_applications(
    by_app: Mapping[str, list[PodRecord]], reading: Reading, state: ClusterState
) -> dict[str, tuple[str, str]]:
    """Each application's queue, or "" and why its pods are left out. Applications are placed
    in the order YuniKorn saw them (oldest pod first), so one placed later finds the dynamic
    queues earlier ones created. While no placement creates a queue the order changes nothing
    (each placement reads the configured tree alone): they are placed unsorted first, and
    sorted only when one does."""
    oldest = {app: _oldest(pods) for app, pods in by_app.items()}
    result = _place_all(oldest, by_app, reading, state, stop_at_created=True)
    if result is None:
        order = sorted((pod.created or "", pod.name, app) for app, pod in oldest.items())
        result = _place_all(
            {app: oldest[app] for _, _, app in order}, by_app, reading, state,
            stop_at_created=False,
        )  # fmt: skip
    assert result is not None
    return result


def _place_all(
    oldest: Mapping[str, PodRecord],
    by_app: Mapping[str, list[PodRecord]],
    reading: Reading,
    state: ClusterState,
    *,
    stop_at_created: bool,
) -> dict[str, tuple[str, str]] | None:
    """``place_applications`` in the order of ``oldest`` (app -> its oldest pod); None when
    ``stop_at_created`` and a placement creates a queue (the order then matters)."""
    placer = Placer.from_config(reading.config)
    result: dict[str, tuple[str, str]] = {}
    # Placement reads an application's queue, user, tags (from its namespace) and ``forced``,
    # never its id, so applications that share those land alike: each is placed once, while
    # the queue tree stays as it is (a placement that creates queues empties the memo).
    memo: dict[_PlacementKey, Placement] = {}
    for app, pod in oldest.items():
        user = pod.user
        key = (pod_queue(pod), user.user, user.groups, pod.namespace, False)
        placement = memo.get(key) or _place_once(placer, memo, app, key, pod, reading)
        if not placement.placed and any(member.node for member in by_app[app]):
            # Running, yet no rule places it now: YuniKorn holds it in its recovery queue.
            key = (*key[:4], True)
            placement = memo.get(key) or _place_once(placer, memo, app, key, pod, reading)
        if placement.created and stop_at_created:
            return None
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


#: What placement reads of an application: the queue its pod names, its user and groups, its
#: namespace (its tags) and whether it is forced.
_PlacementKey = tuple[str, str, tuple[str, ...], str, bool]


def _place_once(
    placer: Placer,
    memo: dict[_PlacementKey, Placement],
    app: str,
    key: _PlacementKey,
    pod: PodRecord,
    reading: Reading,
) -> Placement:
    """Place one application (``place_applications``' memo missed) and remember the result
    while the tree is unchanged."""
    application = Application(
        id=app, queue=key[0], user=pod.user, tags=application_tags(pod, reading.namespaces),
        forced=key[4],
    )  # fmt: skip
    placement = placer.place(application)
    if placement.created:
        memo.clear()  # the tree grew: what was remembered may now place elsewhere
    else:
        memo[key] = placement
    return placement


def _oldest(pods: list[PodRecord]) -> PodRecord:
    """The application's oldest pod (``min`` by ``_age_key``; most applications have one)."""
    return pods[0] if len(pods) == 1 else min(pods, key=_age_key)


def _unplaceable(pod: PodRecord, app: str, node_names: set[str] | Mapping[str, Any]) -> str:
    if len(app) > ID_MAX_LENGTH:
        return f"application id longer than {ID_MAX_LENGTH} characters"
    if pod.node and pod.node not in node_names:
        return f"node {pod.node} is not in the cluster's node list"
    daemon_node = pod.daemon_node
    if daemon_node and daemon_node not in node_names and not pod.node:
        return f"required node {daemon_node} is not in the cluster's node list"
    return ""
