"""Parsing a pushed cluster-state body into plain data: ``parse_cluster_state``.

The body speaks the scenario files' vocabulary (``scheduler_admin.cluster.ingest``). Every
problem is reported with its path (``allocations[3].resources.memory``) in one
``IngestErrors``; a clean body comes back as a ``ClusterStateBody``, defaults filled in and
quantities canonical, ready for ``writing`` (or, for the console's simulator, to apply in memory).
This module reads the partition's queues and node names; it writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from preemption.eligibility_fields import (
    FieldError,
    affinity_json,
    read_affinity,
    read_labels,
    read_taints,
    read_tolerations,
    taints_json,
    tolerations_json,
)
from preemption.model import DEFAULT_CREATED_AT, PreemptionPolicy, QoS
from scheduler_admin.base.errors import Invalid
from scheduler_admin.base.limits import (
    CLUSTER_ID_MAX_LENGTH,
    CLUSTER_USER_MAX_LENGTH,
    INT32_MAX,
    INT32_MIN,
    POSITIVE_INT_MAX,
    QUEUE_PATH_MAX_LENGTH,
)
from scheduler_admin.cluster.dynamic import stored_dynamic_queues
from scheduler_admin.cluster.ingest.checker import Checker, is_plain, quote
from scheduler_admin.cluster.ingest.dynamic_queues import read_dynamic_queues
from scheduler_admin.cluster.models import AllocationState, AskState
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_config

TOP_KEYS = {"nodes", "allocations", "asks", "budgets", "dynamic_queues", "remove", "replace"}
REMOVE_KEYS = {"nodes", "allocations", "asks", "budgets"}


class IngestErrors(Invalid):
    """The body was refused; ``errors`` maps each field path to its messages."""

    detail = "The cluster state is not valid."


@dataclass(frozen=True)
class ClusterStateBody:
    """A checked cluster-state body: items with defaults filled in, quantities canonical."""

    nodes: list[dict[str, Any]]
    allocations: list[dict[str, Any]]
    asks: list[dict[str, Any]]
    budgets: list[dict[str, Any]]
    removed_nodes: set[str]
    removed_allocations: list[str]
    removed_asks: list[str]
    removed_budgets: list[str] = field(default_factory=list)
    #: The body is the partition's whole state: what it does not list is removed.
    replace: bool = False
    #: Queues YuniKorn created (SPEC 3.4): ``path`` (configured ancestors in the config's
    #: spelling), ``leaf``, ``template`` and its ``guaranteed``, ``max``, ``properties``.
    dynamic_queues: list[dict[str, Any]] = field(default_factory=list)

    def is_empty(self) -> bool:
        """Nothing to upsert or remove, and not a replace push (an empty replace push is a
        cluster with nothing in it, and empties the partition's state)."""
        return not self.replace and not any(
            (self.nodes, self.allocations, self.asks, self.budgets, self.dynamic_queues,
             self.removed_nodes, self.removed_allocations, self.removed_asks,
             self.removed_budgets)
        )  # fmt: skip


#: Why an empty push is refused: ``{}`` (or lists with nothing in them) is almost always a
#: client that built its body wrong, and answering 200 told it all was well.
EMPTY_PUSH = (
    "the body holds nothing to push: give nodes, allocations, asks or budgets to add or "
    'change, or remove; a push with "replace": true may list nothing (the partition\'s state '
    "is then emptied)"
)


def parse_cluster_state(partition: Partition, body: object) -> ClusterStateBody:
    """Check a cluster-state body against ``partition`` (its leaf queues and nodes) and return
    it with defaults filled in, or raise ``IngestErrors`` listing every problem by path.

    Shared by ingestion (which then writes it), ``manage.py ingest_state`` and the simulator's
    state overrides (which apply it in memory only): it does not rely on the API's parser for
    anything, so whatever reaches it (NUL, lone surrogates, huge integers, any type anywhere)
    is either refused here or fits its column.
    """
    # The leaves are the queues that are no queue's parent: one pass over the config (parsed
    # once per process and revision, ``queues.saved``), not a comparison of every pair.
    config = current_config(partition)
    queues = config.queues
    parents = {queue.parent for queue in queues}
    checker = Checker(
        leaves={queue.path for queue in queues if queue.path not in parents},
        nodes=set(partition.nodes.values_list("name", flat=True)),
    )
    data = checker.mapping(body, "", TOP_KEYS)
    replace = checker.boolean(data.get("replace"), "replace", False)
    dynamic_queues = read_dynamic_queues(
        checker,
        data.get("dynamic_queues"),
        config,
        stored=[] if replace else stored_dynamic_queues(partition),
    )
    nodes = [
        _node(checker, raw, f"nodes[{i}]")
        for i, raw in enumerate(checker.items(data.get("nodes"), "nodes"))
    ]
    if replace:  # the stored nodes the body does not list are removed by this very push
        checker.nodes = set()
    checker.nodes.update(node["name"] for node in nodes)
    remove = checker.mapping(
        {} if data.get("remove") is None else data["remove"], "remove", REMOVE_KEYS
    )
    removed_nodes = set(_ids(checker, remove.get("nodes"), "remove.nodes"))
    allocations = [
        _allocation(checker, raw, f"allocations[{i}]")
        for i, raw in enumerate(checker.items(data.get("allocations"), "allocations"))
    ]
    asks = [
        _ask(checker, raw, f"asks[{i}]")
        for i, raw in enumerate(checker.items(data.get("asks"), "asks"))
    ]
    budgets = [
        _budget(checker, raw, f"budgets[{i}]")
        for i, raw in enumerate(checker.items(data.get("budgets"), "budgets"))
    ]
    removed_allocations = _ids(checker, remove.get("allocations"), "remove.allocations")
    removed_asks = _ids(checker, remove.get("asks"), "remove.asks")
    removed_budgets = _ids(checker, remove.get("budgets"), "remove.budgets")
    for label, key, items in (
        ("nodes", "name", nodes),
        ("allocations", "id", allocations),
        ("asks", "id", asks),
        ("budgets", "name", budgets),
    ):
        seen: set[str] = set()
        for index, item in enumerate(items):
            item_id = item[key]
            if item_id and item_id in seen:
                checker.fail(f"{label}[{index}].{key}", f"duplicate {quote(item_id)} in this body")
            seen.add(item_id)
    _check_apps(checker, allocations, asks)
    if checker.errors:
        raise IngestErrors(checker.errors)
    return ClusterStateBody(
        nodes=nodes,
        allocations=allocations,
        asks=asks,
        budgets=budgets,
        removed_nodes=removed_nodes,
        removed_allocations=removed_allocations,
        removed_asks=removed_asks,
        removed_budgets=removed_budgets,
        replace=replace,
        dynamic_queues=dynamic_queues,
    )


def _ids(checker: Checker, value: object, path: str) -> list[str]:
    return [checker.text(v, f"{path}[{i}]") for i, v in enumerate(checker.items(value, path))]


# Item fields: name -> (check, default). A check takes (checker, value, item path, field name)
# and returns the value to keep. Fields in an item's ``always`` set are checked even when
# absent (required ones say so; resource sets become new empty dicts); the others only when
# given and not null, so a typical task of six fields costs six checks, not fifteen. A value
# plainly good (the common case) is kept at once; the field's path (``allocations[3].node``) is
# built only to check the others, where a problem may need it: 150,000 tasks of six fields
# are 900,000 paths never shown.
_Check = Callable[[Checker, Any, str, str], Any]


def _id(checker: Checker, value: object, path: str, name: str) -> str:
    if is_plain(value, CLUSTER_ID_MAX_LENGTH):
        return value  # type: ignore[return-value]
    return checker.text(value, f"{path}.{name}")


def _optional_id(checker: Checker, value: object, path: str, name: str) -> str:
    if is_plain(value, CLUSTER_ID_MAX_LENGTH):
        return value  # type: ignore[return-value]
    return checker.text(value, f"{path}.{name}", required=False)


def _user(checker: Checker, value: object, path: str, name: str) -> str:
    if is_plain(value, CLUSTER_USER_MAX_LENGTH):
        return value  # type: ignore[return-value]
    return checker.text(value, f"{path}.{name}", required=False, limit=CLUSTER_USER_MAX_LENGTH)


def _leaf_queue(checker: Checker, value: object, path: str, name: str) -> str:
    """A leaf queue of the partition, matched case-insensitively as YuniKorn names queues, and
    returned in the spelling of the config."""
    if is_plain(value, QUEUE_PATH_MAX_LENGTH) and value in checker.leaves:
        return value  # type: ignore[return-value]
    path = f"{path}.{name}"
    queue = checker.text(value, path, limit=QUEUE_PATH_MAX_LENGTH)
    if queue and queue not in checker.leaves:
        configured = checker.leaf_spelling.get(queue.lower())
        if configured is not None:
            return configured
        checker.fail(path, f"{quote(queue)} is not a leaf queue of this partition")
    return queue


def _node_ref(checker: Checker, value: object, path: str, name: str) -> str:
    """A node that exists, or that this body creates (required where a field is ``always``)."""
    if is_plain(value, CLUSTER_ID_MAX_LENGTH) and value in checker.nodes:
        return value  # type: ignore[return-value]
    path = f"{path}.{name}"
    node = checker.text(value, path)
    if node and node not in checker.nodes:
        checker.fail(path, f"no node {quote(node)}")
    return node


def _optional_node_ref(checker: Checker, value: object, path: str, name: str) -> str:
    return _node_ref(checker, value, path, name) if value != "" else ""


def _resources(checker: Checker, value: object, path: str, name: str) -> dict[str, int]:
    known = checker.known_resources(value)
    return known if known is not None else checker.resources(value, f"{path}.{name}")


def _priority(checker: Checker, value: object, path: str, name: str) -> int:
    if type(value) is int and INT32_MIN <= value <= INT32_MAX:
        return value
    return checker.integer(value, f"{path}.{name}", 0, INT32_MIN, INT32_MAX)


def _disruptions(checker: Checker, value: object, path: str, name: str) -> int:
    return checker.integer(value, f"{path}.{name}", 0, 0, POSITIVE_INT_MAX)


def _time(checker: Checker, value: object, path: str, name: str) -> datetime:
    known = checker.known_time(value)
    return known if known is not None else checker.time(value, f"{path}.{name}")


def _flag(checker: Checker, value: object, path: str, name: str) -> bool:
    if value is True or value is False:
        return value  # type: ignore[return-value]
    return checker.boolean(value, f"{path}.{name}", False)


def _eligibility(read: Callable[[object, str], Any], dump: Callable[[Any], Any]) -> _Check:
    """An eligibility field (SPEC 3.3), read with the engine's own reader (the scenario runner
    uses the same) and kept in its canonical JSON form."""

    def check(checker: Checker, value: object, path: str, name: str) -> Any:
        path = f"{path}.{name}"
        try:
            return dump(read(value, path))
        except FieldError as exc:
            checker.fail(exc.field, exc.message)
            return dump(read(None, path))

    return check


def _same(value: Any) -> Any:
    return value


def _one_of(choices: list[str]) -> _Check:
    allowed = frozenset(choices)

    def check(checker: Checker, value: object, path: str, name: str) -> str:
        if type(value) is str and value in allowed:
            return value
        return checker.choice(value, f"{path}.{name}", choices, choices[0])

    return check


_NODE_FIELDS: dict[str, tuple[_Check, Any]] = {
    "name": (_id, ""),
    "capacity": (_resources, None),
    "schedulable": (_flag, True),
    "labels": (_eligibility(read_labels, _same), {}),
    "taints": (_eligibility(read_taints, taints_json), []),
}
_ALLOCATION_FIELDS: dict[str, tuple[_Check, Any]] = {
    "id": (_id, ""),
    "app": (_optional_id, ""),
    "user": (_user, ""),
    "queue": (_leaf_queue, ""),
    "node": (_node_ref, ""),
    "resources": (_resources, None),
    "priority": (_priority, 0),
    "allow_preemption": (_flag, True),
    "originator": (_flag, False),
    "required_node": (_optional_node_ref, ""),
    "job": (_optional_id, ""),
    "qos": (_one_of([q.value for q in QoS]), ""),
    "pdb": (_optional_id, ""),
    "created_at": (_time, DEFAULT_CREATED_AT),
    # None: a new allocation starts running, a stored one keeps its state.
    "state": (_one_of([s.value for s in AllocationState]), None),
}
_ASK_FIELDS: dict[str, tuple[_Check, Any]] = {
    "id": (_id, ""),
    "app": (_optional_id, ""),
    "user": (_user, ""),
    "queue": (_leaf_queue, ""),
    "resources": (_resources, None),
    "priority": (_priority, 0),
    "allow_preemption": (_flag, True),
    "preemption_policy": (
        _one_of([p.value for p in PreemptionPolicy]),
        PreemptionPolicy.PREEMPT_LOWER_PRIORITY.value,
    ),
    "required_node": (_optional_node_ref, ""),
    "job": (_optional_id, ""),
    "created_at": (_time, DEFAULT_CREATED_AT),
    "state": (_one_of([s.value for s in AskState]), AskState.PENDING.value),
    # "": keep the node the product reserved or nominated.
    "node": (_optional_node_ref, ""),
    "node_selector": (_eligibility(read_labels, _same), {}),
    "node_affinity": (_eligibility(read_affinity, affinity_json), []),
    "tolerations": (_eligibility(read_tolerations, tolerations_json), []),
}
_BUDGET_FIELDS: dict[str, tuple[_Check, Any]] = {
    "name": (_id, ""),
    "allowed_disruptions": (_disruptions, 0),
}
NODE_KEYS = set(_NODE_FIELDS)
ALLOCATION_KEYS = set(_ALLOCATION_FIELDS)
ASK_KEYS = set(_ASK_FIELDS)
BUDGET_KEYS = set(_BUDGET_FIELDS)


class _Plan:
    """How to read one kind of item: its defaults and keys, the checks of its ``always``
    fields (in order) and of the others, looked up once rather than per field of every item."""

    def __init__(self, fields: dict[str, tuple[_Check, Any]], always: tuple[str, ...]) -> None:
        self.defaults = {name: default for name, (_, default) in fields.items()}
        self.keys = set(fields)
        self.always = tuple((name, fields[name][0]) for name in always)
        self.optional = {name: check for name, (check, _) in fields.items() if name not in always}


def _item(checker: Checker, raw: object, path: str, plan: _Plan) -> dict[str, Any]:
    """One item of a list: every field of the plan, checked or defaulted."""
    item = checker.mapping(raw, path, plan.keys)
    result = dict(plan.defaults)
    for name, check in plan.always:
        result[name] = check(checker, item.get(name), path, name)
    optional = plan.optional
    for name, value in item.items():
        if value is not None:
            check = optional.get(name)
            if check is not None:
                result[name] = check(checker, value, path, name)
    return result


_NODE_PLAN = _Plan(_NODE_FIELDS, ("name", "capacity"))
_ALLOCATION_PLAN = _Plan(_ALLOCATION_FIELDS, ("id", "queue", "node", "resources"))
_ASK_PLAN = _Plan(_ASK_FIELDS, ("id", "queue", "resources"))
_BUDGET_PLAN = _Plan(_BUDGET_FIELDS, ("name",))


def _node(checker: Checker, raw: object, path: str) -> dict[str, Any]:
    return _item(checker, raw, path, _NODE_PLAN)


def _allocation(checker: Checker, raw: object, path: str) -> dict[str, Any]:
    item = _item(checker, raw, path, _ALLOCATION_PLAN)
    item["app"] = item["app"] or item["id"]
    return item


def _ask(checker: Checker, raw: object, path: str) -> dict[str, Any]:
    item = _item(checker, raw, path, _ASK_PLAN)
    item["app"] = item["app"] or item["id"]
    return item


def _budget(checker: Checker, raw: object, path: str) -> dict[str, Any]:
    return _item(checker, raw, path, _BUDGET_PLAN)


def _check_apps(
    checker: Checker, allocations: list[dict[str, Any]], asks: list[dict[str, Any]]
) -> None:
    """An application lives in one queue: every item of the body naming it must agree."""
    queues: dict[str, tuple[str, str]] = {}
    for label, items in (("allocations", allocations), ("asks", asks)):
        for index, item in enumerate(items):
            app, queue = item["app"], item["queue"]
            if not app or not queue:
                continue
            first = queues.setdefault(app, (queue, f"{label}[{index}]"))
            if first[0] != queue:
                checker.fail(
                    f"{label}[{index}].queue",
                    f"application {quote(app)} is in {first[0]} at {first[1]}; one app, one queue",
                )
