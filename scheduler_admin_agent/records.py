"""The agent's form of a pod and a node: one flat object each, built straight from the API
server's JSON, holding only what the agent reads.

On a cluster of Kubernetes' documented size (5,000 nodes, 150,000 pods) the agent holds every
pod for as long as it runs. Kept as decoded JSON (a dict per struct, a string per field, its
``managedFields``, conditions and container statuses) a 5.9 KB pod costs about 14 KiB of memory;
a ``PodRecord`` (one object with ``__slots__``: no dict of its own) holds only the fields that
the translation (``translate``, ``delta``), placement, the budgets' selectors and the evictions
read, and what can be worked out once per version of the pod is worked out when it arrives:

- its **resources** (k8shim's ``GetPodResource``, ``podresources``), exact and in the product's
  units, shared between pods that ask for the same (a Deployment's pods do);
- its **user** (the ``user.info`` annotation), the **node a DaemonSet pod must run on**, the
  uids of the pods that own it, and, for a pod not bound yet, where it may run
  (``eligibility``);
- timestamps as the product writes them (``2026-11-01T08:00:00Z``).

Strings that repeat across pods (namespaces, node names, label keys and values, timestamps,
phases) are interned, so 150,000 pods share them. A watch event brings a new record; a record
is never changed once built, and what it shares (labels, resources, eligibility) must not be
changed by its readers either.

The client's typed models (``V1Pod``, ``V1Node``) still read: ``as_pod`` and ``as_node`` turn
one into a record through its JSON form (the unit tests build pods that way).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from preemption.placement import UserGroup
from scheduler_admin_agent.podresources import raw_pod_requests
from scheduler_admin_agent.quantities import QuantityError, product_resources

USER_INFO_ANNOTATION = "yunikorn.apache.org/user.info"
DEFAULT_USER = "nobody"
#: The annotations the agent reads (the rest are dropped).
NOTES = frozenset(
    {
        "yunikorn.apache.org/queue",
        "yunikorn.apache.org/app-id",
        "yunikorn.apache.org/allow-preemption",
        "yunikorn.apache.org/task-group-name",
    }
)
NOBODY = UserGroup(DEFAULT_USER)
_EMPTY: dict[str, Any] = {}
_intern = sys.intern


class PodRecord:
    """One pod as the agent keeps it (see the module docstring)."""

    __slots__ = (
        "bad_quantity",  # why ``requests`` is None
        "created",  # creationTimestamp as the product writes it, or None
        "daemon_node",  # the node a DaemonSet pod must run on ("" for other pods)
        "deleting",  # deletionTimestamp is set
        "eligibility",  # an unbound pod's node selector, node affinity, tolerations
        "gates",  # names of spec.schedulingGates
        "labels",  # dict, shared by nobody else; never changed
        "name",
        "namespace",
        "node",  # spec.nodeName ("" when unbound)
        "nominated",  # status.nominatedNodeName ("")
        "notes",  # the annotations of ``NOTES`` the pod has
        "owner_kind",  # the controller owner's kind (else the first owner's; "" for none)
        "owner_pods",  # uids of owners that are pods (a Spark driver owns its executors)
        "phase",
        "preemption_policy",
        "priority",
        "priority_class",
        "qos",
        "requests",  # exact resources (shared, never changed), None when unreadable
        "resources",  # the product's form with ``pods: 1`` (shared, never changed)
        "scheduler",  # spec.schedulerName ("" when unset)
        "started",  # status.startTime likewise, or None
        "uid",
        "user",  # UserGroup from user.info, else ``nobody``
        "version",  # metadata.resourceVersion
    )

    uid: str
    name: str
    namespace: str
    labels: dict[str, str]
    notes: dict[str, str]
    user: UserGroup
    created: str | None
    started: str | None
    deleting: bool
    scheduler: str
    phase: str
    node: str
    nominated: str
    gates: tuple[str, ...]
    priority: int
    priority_class: str
    preemption_policy: str
    qos: str
    owner_kind: str
    owner_pods: tuple[str, ...]
    daemon_node: str
    requests: dict[str, Fraction] | None
    resources: dict[str, int | str] | None
    bad_quantity: str
    eligibility: dict[str, Any]
    version: str

    def __repr__(self) -> str:
        return f"PodRecord({self.namespace}/{self.name}@{self.uid})"


class NodeRecord:
    """One node as the agent keeps it: what its cluster-state item is made of."""

    __slots__ = ("allocatable", "labels", "name", "ready", "taints", "unschedulable", "version")

    name: str
    labels: dict[str, str]
    allocatable: dict[str, Any]  # as written (quantities are read when the item is made)
    unschedulable: bool
    ready: bool
    taints: tuple[dict[str, str], ...]
    version: str

    def __repr__(self) -> str:
        return f"NodeRecord({self.name})"


# --- Building records ------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A string many objects share (interned), "" for none."""
    return _intern(value) if isinstance(value, str) else ""


def _plain(value: Any) -> str:
    """A string of one object alone (a uid, a pod's name), "" for none."""
    return value if isinstance(value, str) else ""


_FRACTION = re.compile(r"\.\d+")
#: Timestamps seen, as the product writes them (pods of one rollout share a few seconds).
_MOMENTS: dict[str, str | None] = {}
_MOMENTS_LIMIT = 100_000


def moment(text: Any) -> str | None:
    """An RFC 3339 time of the API server as the product writes times (UTC, ``Z``), or None."""
    if not isinstance(text, str):
        return None
    found = _MOMENTS.get(text, _EMPTY)
    if found is not _EMPTY:
        return found  # type: ignore[return-value]
    parsed: datetime | None = None
    for candidate in (text, _FRACTION.sub("", text)):
        try:
            parsed = datetime.fromisoformat(candidate.replace("Z", "+00:00"))
            break
        except ValueError:
            continue
    result = None if parsed is None else _intern(written(parsed))
    if len(_MOMENTS) >= _MOMENTS_LIMIT:
        _MOMENTS.clear()
    _MOMENTS[text] = result
    return result


def written(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``, as the product writes times."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _strings(mapping: Any) -> dict[str, str]:
    if not mapping:
        return _EMPTY
    return {_intern(key): _text(value) for key, value in mapping.items()}


def _user(raw: str | None) -> UserGroup:
    """k8shim's ``GetUserFromPod``: the user.info annotation, else ``nobody``."""
    if not raw:
        return NOBODY
    try:
        info = json.loads(raw)
    except ValueError:
        return NOBODY
    if not isinstance(info, dict):
        return NOBODY
    user = info.get("user")
    groups = info.get("groups")
    return UserGroup(
        user if isinstance(user, str) and user else DEFAULT_USER,
        tuple(str(group) for group in groups) if isinstance(groups, list) else (),
    )


#: Resources by what a pod asks for: pods of one Deployment share one pair of dicts.
_SHAPES: dict[tuple[tuple[str, Fraction], ...], tuple[dict[str, Fraction], dict[str, Any]]] = {}
_SHAPES_LIMIT = 50_000


def _shared(requests: dict[str, Fraction]) -> tuple[dict[str, Fraction], dict[str, Any]]:
    key = tuple(requests.items())
    found = _SHAPES.get(key)
    if found is None:
        resources = product_resources(requests)
        resources["pods"] = 1
        found = (requests, resources)
        if len(_SHAPES) >= _SHAPES_LIMIT:
            _SHAPES.clear()
        _SHAPES[key] = found
    return found


def _required_terms(spec: Mapping[str, Any]) -> list[Any]:
    affinity = spec.get("affinity") or _EMPTY
    node_affinity = affinity.get("nodeAffinity") or _EMPTY
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or _EMPTY
    return required.get("nodeSelectorTerms") or []


def _owner(owners: list[Any]) -> Mapping[str, Any] | None:
    """The controller owner reference (else the first one)."""
    for owner in owners:
        if owner.get("controller"):
            return owner
    return owners[0] if owners else None


def _daemon_node(owners: list[Any], spec: Mapping[str, Any]) -> str:
    """The node a DaemonSet pod must run on: its required node affinity on ``metadata.name``
    (what the DaemonSet controller writes), else ``spec.nodeName``; "" for other pods."""
    owner = _owner(owners)
    if owner is None or owner.get("kind") != "DaemonSet":
        return ""
    for term in _required_terms(spec):
        for requirement in term.get("matchFields") or ():
            values = requirement.get("values")
            key, operator = requirement.get("key"), requirement.get("operator")
            if key == "metadata.name" and operator == "In" and values:
                return _intern(str(values[0]))
    return _text(spec.get("nodeName"))


def eligibility(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A pending pod's ``nodeSelector``, required node affinity and tolerations, as the product
    reads them (SPEC 3.3); only the fields the pod sets.

    ``matchFields`` (on ``metadata.name``) is not modelled: a term that has some is read from
    its ``matchExpressions`` alone, and when such a term has none, the affinity is left out
    (the pod may then be planned for a node its affinity rules out; kube-scheduler then does
    not bind it there and the ask is planned again after its delay)."""
    fields: dict[str, Any] = {}
    if spec.get("nodeSelector"):
        fields["node_selector"] = dict(spec["nodeSelector"])
    terms = []
    for term in _required_terms(spec):
        expressions = [
            {
                "key": r.get("key"),
                "operator": r.get("operator"),
                "values": list(r.get("values") or []),
            }
            for r in term.get("matchExpressions") or ()
        ]
        if not expressions and term.get("matchFields"):
            terms = []
            break
        terms.append(expressions)
    if terms:
        fields["node_affinity"] = terms
    tolerations = [
        {
            "key": toleration.get("key") or "",
            "operator": toleration.get("operator") or "Equal",
            "value": toleration.get("value") or "",
            "effect": toleration.get("effect") or "",
        }
        for toleration in spec.get("tolerations") or ()
    ]
    if tolerations:
        fields["tolerations"] = tolerations
    return fields or _EMPTY


def pod_record(raw: Mapping[str, Any]) -> PodRecord:
    """A pod of a list or watch body (its JSON, decoded) as the agent keeps it."""
    meta = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    owners = meta.get("ownerReferences") or []
    pod = PodRecord()
    pod.uid = _plain(meta.get("uid"))
    pod.name = _plain(meta.get("name"))
    pod.version = _plain(meta.get("resourceVersion"))
    pod.namespace = _text(meta.get("namespace"))
    pod.labels = _strings(meta.get("labels"))
    pod.notes = (
        _strings({k: v for k, v in annotations.items() if k in NOTES}) if annotations else _EMPTY
    )
    pod.user = _user(annotations.get(USER_INFO_ANNOTATION))
    pod.created = moment(meta.get("creationTimestamp"))
    pod.started = moment(status.get("startTime"))
    pod.deleting = meta.get("deletionTimestamp") is not None
    pod.scheduler = _text(spec.get("schedulerName"))
    pod.phase = _text(status.get("phase"))
    pod.node = _text(spec.get("nodeName"))
    pod.nominated = _text(status.get("nominatedNodeName"))
    pod.gates = tuple(_text(gate.get("name")) for gate in spec.get("schedulingGates") or ())
    pod.priority = spec.get("priority") or 0
    pod.priority_class = _text(spec.get("priorityClassName"))
    pod.preemption_policy = _text(spec.get("preemptionPolicy"))
    pod.qos = _text(status.get("qosClass"))
    owner = _owner(owners)
    pod.owner_kind = _text(owner.get("kind")) if owner is not None else ""
    pod.owner_pods = tuple(o.get("uid") for o in owners if o.get("kind") == "Pod" and o.get("uid"))
    pod.daemon_node = _daemon_node(owners, spec)
    try:
        pod.requests, pod.resources = _shared(raw_pod_requests(raw))
        pod.bad_quantity = ""
    except (QuantityError, TypeError, AttributeError) as error:  # not a quantity at all
        pod.requests, pod.resources, pod.bad_quantity = None, None, str(error)
    pod.eligibility = _EMPTY if pod.node else eligibility(spec)
    return pod


def node_record(raw: Mapping[str, Any]) -> NodeRecord:
    """A node of a list or watch body (its JSON, decoded) as the agent keeps it."""
    meta = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    node = NodeRecord()
    node.name = _text(meta.get("name"))
    node.version = _plain(meta.get("resourceVersion"))
    node.labels = _strings(meta.get("labels"))
    node.allocatable = dict(status.get("allocatable") or _EMPTY)
    node.unschedulable = bool(spec.get("unschedulable"))
    node.ready = False
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            node.ready = condition.get("status") == "True"
            break
    node.taints = tuple(
        {"key": t.get("key"), "value": t.get("value") or "", "effect": t.get("effect")}
        for t in spec.get("taints") or ()
    )
    return node


# --- Typed models ----------------------------------------------------------------------------


def json_form(obj: Any) -> Any:
    """A typed model of the Kubernetes client as the API server's JSON (what
    ``ApiClient.sanitize_for_serialization`` gives)."""
    if hasattr(type(obj), "openapi_types") and hasattr(type(obj), "attribute_map"):
        return {
            obj.attribute_map[attribute]: json_form(value)
            for attribute in obj.openapi_types
            if (value := getattr(obj, attribute)) is not None
        }
    if isinstance(obj, list | tuple):
        return [json_form(item) for item in obj]
    if isinstance(obj, dict):
        return {key: json_form(value) for key, value in obj.items()}
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


def as_pod(obj: Any) -> PodRecord:
    """A record of ``obj``: a record, a pod's JSON, or the client's ``V1Pod``."""
    if type(obj) is PodRecord:
        return obj
    return pod_record(obj if isinstance(obj, Mapping) else json_form(obj))


def as_node(obj: Any) -> NodeRecord:
    """A record of ``obj``: a record, a node's JSON, or the client's ``V1Node``."""
    if type(obj) is NodeRecord:
        return obj
    return node_record(obj if isinstance(obj, Mapping) else json_form(obj))
