"""Bulk, idempotent ingestion of cluster state (SPEC 3.3 and 7 ``cluster-state``).

The body speaks the scenario files' vocabulary::

    {"nodes": [...], "allocations": [...], "asks": [...], "budgets": [...],
     "remove": {"nodes": [names], "allocations": [ids], "asks": [ids]}}

Everything is checked first and every problem is reported with its path
(``allocations[3].resources.memory``); only a clean body is written, in one transaction, with
upserts keyed by the cluster's ids — so sending the same body twice changes nothing.

Allocation state: a new allocation is ``running`` unless the body says ``preempting``. An
existing allocation keeps the state the product gave it (a victim stays ``preempting`` until its
eviction is acknowledged) unless the body names a state explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from preemption import resources as quantities
from preemption.model import DEFAULT_CREATED_AT, PreemptionPolicy, QoS
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
    DisruptionBudget,
    Node,
)
from scheduler_admin.queues.models import Partition

TOP_KEYS = {"nodes", "allocations", "asks", "budgets", "remove"}
NODE_KEYS = {"name", "capacity", "schedulable"}
ALLOCATION_KEYS = {
    "id", "queue", "app", "user", "node", "resources", "priority", "allow_preemption",
    "originator", "required_node", "job", "qos", "pdb", "created_at", "state",
}  # fmt: skip
ASK_KEYS = {
    "id", "queue", "app", "user", "resources", "priority", "allow_preemption",
    "preemption_policy", "required_node", "job", "created_at", "state", "node",
}  # fmt: skip
BUDGET_KEYS = {"name", "allowed_disruptions"}
REMOVE_KEYS = {"nodes", "allocations", "asks"}


class IngestErrors(ValueError):
    """The body was refused; ``errors`` maps each field path to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{path}: {', '.join(msgs)}" for path, msgs in errors.items()))
        self.errors = errors


@dataclass
class IngestResult:
    nodes: int = 0
    allocations: int = 0
    asks: int = 0
    budgets: int = 0
    removed: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "allocations": self.allocations,
            "asks": self.asks,
            "budgets": self.budgets,
            "removed": self.removed,
        }


class _Checker:
    """Reads typed values out of the body, collecting every error with its path."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}
        # Thousands of tasks share a handful of shapes ({"memory": "2Gi", "vcore": "500m"}):
        # parse each shape once. Only valid shapes are kept (errors carry each item's path).
        self._parsed: dict[tuple[tuple[object, object], ...], dict[str, int]] = {}

    def fail(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def mapping(self, value: object, path: str, keys: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, "must be an object")
            return {}
        for key in value:
            if key not in keys:
                self.fail(f"{path}.{key}" if path else str(key), "unknown field")
        return value

    def items(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, "must be a list")
            return []
        return value

    def text(self, value: object, path: str, *, required: bool = True) -> str:
        if value is None or value == "":
            if required:
                self.fail(path, "is required")
            return ""
        if not isinstance(value, str) or len(value) > 253:
            self.fail(path, "must be a string of at most 253 characters")
            return ""
        return value

    def integer(self, value: object, path: str, default: int, minimum: int | None = None) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, "must be an integer")
            return default
        if minimum is not None and value < minimum:
            self.fail(path, f"must be at least {minimum}")
        return value

    def boolean(self, value: object, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, "must be true or false")
            return default
        return value

    def resources(self, value: object, path: str) -> dict[str, int]:
        shape = _shape(value)
        if shape is not None and shape in self._parsed:
            return dict(self._parsed[shape])
        try:
            parsed = quantities.parse_resources(value, field=path)
        except quantities.ResourceErrors as exc:
            for error in exc.errors:
                self.fail(error.field, error.message)
            return {}
        if shape is not None:
            self._parsed[shape] = dict(parsed)
        return parsed

    def time(self, value: object, path: str) -> datetime:
        if value is None:
            return DEFAULT_CREATED_AT
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                pass
            else:
                if moment.tzinfo is None:
                    return moment.replace(tzinfo=UTC)
                try:  # PostgreSQL stores offsets up to ±15:59 only: keep every time in UTC
                    return moment.astimezone(UTC)
                except (OverflowError, ValueError):
                    self.fail(path, "is out of the supported time range")
                    return DEFAULT_CREATED_AT
        self.fail(path, "must be an ISO 8601 time such as 2026-01-01T12:00:00Z")
        return DEFAULT_CREATED_AT

    def choice(self, value: object, path: str, choices: list[str], default: str) -> str:
        if value is None:
            return default
        if value not in choices:
            self.fail(path, f"must be one of {', '.join(choices)}")
            return default
        return str(value)


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


def parse_cluster_state(partition: Partition, body: object) -> ClusterStateBody:
    """Check a cluster-state body against ``partition`` (its leaf queues and nodes) and return
    it with defaults filled in, or raise ``IngestErrors`` listing every problem by path.

    Shared by ingestion (which then writes it) and the simulator's state overrides (which apply
    it in memory only).
    """
    checker = _Checker()
    data = checker.mapping(body, "", TOP_KEYS)
    queues = {q.path for q in partition.current_config().queues}
    leaves = {path for path in queues if not any(p.startswith(path + ".") for p in queues)}
    known_nodes = set(partition.nodes.values_list("name", flat=True))

    nodes = [
        _node(checker, raw, f"nodes[{i}]")
        for i, raw in enumerate(checker.items(data.get("nodes"), "nodes"))
    ]
    node_names = known_nodes | {node["name"] for node in nodes}
    remove = checker.mapping(data.get("remove") or {}, "remove", REMOVE_KEYS)
    removed_nodes = {
        checker.text(n, f"remove.nodes[{i}]")
        for i, n in enumerate(checker.items(remove.get("nodes"), "remove.nodes"))
    }
    allocations = [
        _allocation(checker, raw, f"allocations[{i}]", leaves, node_names)
        for i, raw in enumerate(checker.items(data.get("allocations"), "allocations"))
    ]
    asks = [
        _ask(checker, raw, f"asks[{i}]", leaves, node_names)
        for i, raw in enumerate(checker.items(data.get("asks"), "asks"))
    ]
    budgets = [
        _budget(checker, raw, f"budgets[{i}]")
        for i, raw in enumerate(checker.items(data.get("budgets"), "budgets"))
    ]
    removed_allocations = [
        checker.text(a, f"remove.allocations[{i}]")
        for i, a in enumerate(checker.items(remove.get("allocations"), "remove.allocations"))
    ]
    removed_asks = [
        checker.text(a, f"remove.asks[{i}]")
        for i, a in enumerate(checker.items(remove.get("asks"), "remove.asks"))
    ]
    for label, ids in (
        ("nodes", [n["name"] for n in nodes]),
        ("allocations", [a["id"] for a in allocations]),
        ("asks", [a["id"] for a in asks]),
        ("budgets", [b["name"] for b in budgets]),
    ):
        seen: set[str] = set()
        for index, item_id in enumerate(ids):
            if item_id and item_id in seen:
                checker.fail(f"{label}[{index}].id", f"duplicate {item_id!r} in this body")
            seen.add(item_id)
    _check_apps(checker, partition, allocations, asks)
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
    )


def ingest_cluster_state(
    partition: Partition, body: object, *, actor: AbstractBaseUser | None, audit: bool = True
) -> IngestResult:
    """Apply a cluster-state body to ``partition`` atomically, or raise ``IngestErrors``.

    ``audit=False`` is for the demo simulator's churn only: it stands in for the cluster, and a
    ``state.ingested`` event per step (about 1,200 an hour) would bury the admins' changes and
    the runs in the audit log. Every push through the API or ``ingest_state`` is audited.
    """
    state = parse_cluster_state(partition, body)
    with transaction.atomic():
        result = _write(partition, state.nodes, state.allocations, state.asks, state.budgets)
        emptied = _applications_of(partition, state.removed_allocations, state.removed_asks)
        result.removed = {
            "nodes": Node.objects.filter(partition=partition, name__in=state.removed_nodes)
            .delete()[1]
            .get("cluster.Node", 0),
            "allocations": Allocation.objects.filter(
                partition=partition, external_id__in=state.removed_allocations
            ).delete()[0],
            "asks": Ask.objects.filter(
                partition=partition, external_id__in=state.removed_asks
            ).delete()[0],
        }
        # An application lives while it has tasks or asks: one whose last ones were removed is
        # gone from the cluster too (otherwise a long-running cluster's finished jobs pile up).
        Application.objects.filter(pk__in=emptied, allocations=None, asks=None).delete()
        if audit:
            record_event(
                AuditKind.STATE_INGESTED,
                actor=actor,
                partition_name=partition.name,
                object_type="cluster-state",
                summary=(
                    f"Cluster state of {partition.name}: {result.nodes} nodes, "
                    f"{result.allocations} allocations, {result.asks} asks, "
                    f"{result.budgets} budgets upserted; removed {sum(result.removed.values())}"
                ),
                data=result.to_json(),
            )
    return result


def _applications_of(
    partition: Partition, allocation_ids: list[str], ask_ids: list[str]
) -> set[int]:
    """Primary keys of the applications owning these allocations and asks."""
    owners = set(
        Allocation.objects.filter(partition=partition, external_id__in=allocation_ids).values_list(
            "application_id", flat=True
        )
    )
    owners.update(
        Ask.objects.filter(partition=partition, external_id__in=ask_ids).values_list(
            "application_id", flat=True
        )
    )
    return owners


def _shape(value: object) -> tuple[tuple[object, object], ...] | None:
    """A hashable key for a resource mapping of plain strings and integers, else None."""
    if not isinstance(value, Mapping):
        return None
    items = tuple(value.items())
    for name, amount in items:
        if type(name) is not str or type(amount) not in (str, int):
            return None
    return items


def _node(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    item = checker.mapping(raw, path, NODE_KEYS)
    return {
        "name": checker.text(item.get("name"), f"{path}.name"),
        "capacity": checker.resources(item.get("capacity"), f"{path}.capacity"),
        "schedulable": checker.boolean(item.get("schedulable"), f"{path}.schedulable", True),
    }


def _queue(checker: _Checker, value: object, path: str, leaves: set[str]) -> str:
    queue = checker.text(value, path)
    if queue and queue not in leaves:
        checker.fail(path, f"{queue!r} is not a leaf queue of this partition")
    return queue


def _node_ref(
    checker: _Checker, value: object, path: str, nodes: set[str], *, required: bool
) -> str:
    name = checker.text(value, path, required=required)
    if name and name not in nodes:
        checker.fail(path, f"no node {name!r}")
    return name


def _allocation(
    checker: _Checker, raw: object, path: str, leaves: set[str], nodes: set[str]
) -> dict[str, Any]:
    item = checker.mapping(raw, path, ALLOCATION_KEYS)
    allocation_id = checker.text(item.get("id"), f"{path}.id")
    qos = item.get("qos")
    return {
        "id": allocation_id,
        "app": checker.text(item.get("app"), f"{path}.app", required=False) or allocation_id,
        "user": checker.text(item.get("user"), f"{path}.user", required=False),
        "queue": _queue(checker, item.get("queue"), f"{path}.queue", leaves),
        "node": _node_ref(checker, item.get("node"), f"{path}.node", nodes, required=True),
        "resources": checker.resources(item.get("resources"), f"{path}.resources"),
        "priority": checker.integer(item.get("priority"), f"{path}.priority", 0),
        "allow_preemption": checker.boolean(
            item.get("allow_preemption"), f"{path}.allow_preemption", True
        ),
        "originator": checker.boolean(item.get("originator"), f"{path}.originator", False),
        "required_node": _node_ref(
            checker, item.get("required_node"), f"{path}.required_node", nodes, required=False
        ),
        "job": checker.text(item.get("job"), f"{path}.job", required=False),
        "qos": ""
        if qos is None
        else checker.choice(qos, f"{path}.qos", [q.value for q in QoS], ""),
        "pdb": checker.text(item.get("pdb"), f"{path}.pdb", required=False),
        "created_at": checker.time(item.get("created_at"), f"{path}.created_at"),
        "state": None
        if item.get("state") is None
        else checker.choice(
            item.get("state"), f"{path}.state", [s.value for s in AllocationState], "running"
        ),
    }


def _ask(
    checker: _Checker, raw: object, path: str, leaves: set[str], nodes: set[str]
) -> dict[str, Any]:
    item = checker.mapping(raw, path, ASK_KEYS)
    ask_id = checker.text(item.get("id"), f"{path}.id")
    return {
        "id": ask_id,
        "app": checker.text(item.get("app"), f"{path}.app", required=False) or ask_id,
        "user": checker.text(item.get("user"), f"{path}.user", required=False),
        "queue": _queue(checker, item.get("queue"), f"{path}.queue", leaves),
        "resources": checker.resources(item.get("resources"), f"{path}.resources"),
        "priority": checker.integer(item.get("priority"), f"{path}.priority", 0),
        "allow_preemption": checker.boolean(
            item.get("allow_preemption"), f"{path}.allow_preemption", True
        ),
        "preemption_policy": checker.choice(
            item.get("preemption_policy"),
            f"{path}.preemption_policy",
            [p.value for p in PreemptionPolicy],
            "PreemptLowerPriority",
        ),
        "required_node": _node_ref(
            checker, item.get("required_node"), f"{path}.required_node", nodes, required=False
        ),
        "job": checker.text(item.get("job"), f"{path}.job", required=False),
        "created_at": checker.time(item.get("created_at"), f"{path}.created_at"),
        "state": checker.choice(
            item.get("state"), f"{path}.state", [s.value for s in AskState], "pending"
        ),
        "node": _node_ref(checker, item.get("node"), f"{path}.node", nodes, required=False),
    }


def _budget(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    item = checker.mapping(raw, path, BUDGET_KEYS)
    return {
        "name": checker.text(item.get("name"), f"{path}.name"),
        "allowed_disruptions": checker.integer(
            item.get("allowed_disruptions"), f"{path}.allowed_disruptions", 0, minimum=0
        ),
    }


def _check_apps(
    checker: _Checker,
    partition: Partition,
    allocations: list[dict[str, Any]],
    asks: list[dict[str, Any]],
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
                    f"application {app!r} is in {first[0]} at {first[1]}; one app, one queue",
                )


def _write(
    partition: Partition,
    nodes: list[dict[str, Any]],
    allocations: list[dict[str, Any]],
    asks: list[dict[str, Any]],
    budgets: list[dict[str, Any]],
) -> IngestResult:
    now = timezone.now()
    Node.objects.bulk_create(
        [Node(partition=partition, **node) for node in nodes],
        update_conflicts=True,
        unique_fields=["partition", "name"],
        update_fields=["capacity", "schedulable", "updated_at"],
    )
    apps = {}
    for item in [*allocations, *asks]:
        apps.setdefault(item["app"], (item["queue"], item["user"]))
    Application.objects.bulk_create(
        [Application(partition=partition, external_id=app, queue_path=queue, user=user)
         for app, (queue, user) in apps.items()],
        update_conflicts=True,
        unique_fields=["partition", "external_id"],
        update_fields=["queue_path", "user"],
    )  # fmt: skip
    app_ids = dict(
        Application.objects.filter(partition=partition, external_id__in=list(apps)).values_list(
            "external_id", "id"
        )
    )
    fields = [
        "application_id", "queue_path", "node_name", "resources", "priority",
        "allow_preemption", "originator", "required_node", "job", "qos", "pdb", "created_at",
        "state",
    ]  # fmt: skip
    stored = _stored_rows(Allocation, partition, [a["id"] for a in allocations], fields)
    rows = []
    for item in allocations:
        before = stored.get(item["id"])
        row = Allocation(
            partition=partition,
            external_id=item["id"],
            application_id=app_ids[item["app"]],
            queue_path=item["queue"],
            node_name=item["node"],
            resources=item["resources"],
            priority=item["priority"],
            allow_preemption=item["allow_preemption"],
            originator=item["originator"],
            required_node=item["required_node"],
            job=item["job"],
            qos=item["qos"],
            pdb=item["pdb"],
            created_at=item["created_at"],
            # Without a state in the body a stored allocation keeps its own (e.g. preempting).
            state=item["state"] or (before[-1] if before else AllocationState.RUNNING),
            state_changed_at=now if before is None else None,
        )
        if before is None or _values(row, fields) != before:
            rows.append(row)
    Allocation.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["partition", "external_id"],
        update_fields=[name.removesuffix("_id") for name in fields],
        batch_size=2000,
    )
    # An ask sent without a node keeps the node the product reserved or nominated for it.
    for with_node in (True, False):
        group = [item for item in asks if bool(item["node"]) == with_node]
        Ask.objects.bulk_create(
            [
                Ask(
                    partition=partition,
                    external_id=item["id"],
                    application_id=app_ids[item["app"]],
                    queue_path=item["queue"],
                    resources=item["resources"],
                    priority=item["priority"],
                    allow_preemption=item["allow_preemption"],
                    preemption_policy=item["preemption_policy"],
                    required_node=item["required_node"],
                    job=item["job"],
                    created_at=item["created_at"],
                    state=item["state"],
                    node=item["node"],
                )
                for item in group
            ],
            update_conflicts=True,
            unique_fields=["partition", "external_id"],
            update_fields=[
                "application", "queue_path", "resources", "priority", "allow_preemption",
                "preemption_policy", "required_node", "job", "created_at", "state",
                *(["node"] if with_node else []),
            ],
            batch_size=2000,
        )  # fmt: skip
    DisruptionBudget.objects.bulk_create(
        [DisruptionBudget(partition=partition, **budget) for budget in budgets],
        update_conflicts=True,
        unique_fields=["partition", "name"],
        update_fields=["allowed_disruptions"],
    )
    return IngestResult(
        nodes=len(nodes), allocations=len(allocations), asks=len(asks), budgets=len(budgets)
    )


def _stored_rows(
    model: type[Allocation], partition: Partition, ids: list[str], fields: list[str]
) -> dict[str, tuple[Any, ...]]:
    """The stored values of ``fields`` for the rows with these external ids.

    Pushing the same state again is the common case for an agent that reports every few
    seconds; comparing first and writing only new or changed rows makes a repeated push of
    5,000 allocations a read instead of a rewrite (and leaves untouched rows' tuples alone).
    """
    return {
        row[0]: row[1:]
        for row in model.objects.filter(partition=partition, external_id__in=ids).values_list(
            "external_id", *fields
        )
    }


def _values(row: Allocation, fields: list[str]) -> tuple[Any, ...]:
    return tuple(getattr(row, name) for name in fields)
