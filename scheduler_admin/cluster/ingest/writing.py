"""Writing a parsed cluster-state body: compare with what is stored, write only what changed.

``write_state`` upserts the body's nodes, applications, allocations, asks and budgets;
``list_removals`` and ``remove_state`` work out and delete what the push removes (its ``remove``
lists and, for a ``replace`` push, everything it does not list). All of it runs inside
``services.ingest_cluster_state``'s transaction, under its locks; ``IngestResult`` counts what
changed, for the response and the audit event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import models
from django.utils import timezone

from scheduler_admin.cluster.ingest.parsing import ClusterStateBody
from scheduler_admin.cluster.ingest.rows import stored_rows, upsert_rows
from scheduler_admin.cluster.locking import lock_allocations, lock_asks
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    DisruptionBudget,
    DynamicQueue,
    Node,
)
from scheduler_admin.queues.models import Partition

#: What a push can change, in the order the response and the audit event list them.
KINDS = ("nodes", "applications", "allocations", "asks", "budgets", "dynamic_queues")


def _no_changes() -> dict[str, dict[str, int]]:
    return {kind: {"created": 0, "updated": 0, "removed": 0} for kind in KINDS}


@dataclass
class IngestResult:
    """What a push held (``nodes`` .. ``budgets``: items in the body; ``replace``: whether it
    replaced the partition's state; ``removed``: rows it deleted, by its ``remove`` lists and,
    with ``replace``, because it did not list them) and what it actually changed (``changed``:
    per kind, rows created, updated and removed; applications are created and removed with
    their tasks)."""

    nodes: int = 0
    allocations: int = 0
    asks: int = 0
    budgets: int = 0
    dynamic_queues: int = 0
    replace: bool = False
    removed: dict[str, int] = field(default_factory=dict)
    changed: dict[str, dict[str, int]] = field(default_factory=_no_changes)
    #: Whether the partition held no application when the push began (``remove_state``: then
    #: every application is one the push just created for a task or ask of its own).
    applications_were_none: bool = field(default=False, repr=False, compare=False)

    @property
    def anything_changed(self) -> bool:
        return any(any(counts.values()) for counts in self.changed.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "allocations": self.allocations,
            "asks": self.asks,
            "budgets": self.budgets,
            "dynamic_queues": self.dynamic_queues,
            "replace": self.replace,
            "removed": self.removed,
            "changed": self.changed,
        }

    def summary(self, partition_name: str) -> str:
        """One line for the audit log: only the kinds that changed."""
        parts = []
        for kind in KINDS:
            counts = self.changed[kind]
            done = [f"{number} {verb}" for verb, number in counts.items() if number]
            if done:
                parts.append(f"{kind} {', '.join(done)}")
        how = " (replaced)" if self.replace else ""
        return f"Cluster state of {partition_name} changed{how}: {'; '.join(parts)}"


_ALLOCATION_COLUMNS = (
    "application_id", "queue_path", "node_name", "resources", "priority", "allow_preemption",
    "originator", "required_node", "job", "qos", "pdb", "created_at",
)  # fmt: skip
_ASK_COLUMNS = (
    "application_id", "queue_path", "resources", "priority", "allow_preemption",
    "preemption_policy", "required_node", "job", "created_at", "state", "node_selector",
    "node_affinity", "tolerations",
)  # fmt: skip
#: A new allocation's state when the body names none (read once: an enum member's ``.value``
#: is a Python-level descriptor call per allocation).
_RUNNING = AllocationState.RUNNING.value
_NODE_COLUMNS = ("capacity", "schedulable", "labels", "taints")
_DYNAMIC_COLUMNS = ("leaf", "template", "guaranteed", "max", "properties")


def write_state(
    partition: Partition, state: ClusterStateBody, removals: dict[str, set[str]]
) -> IngestResult:
    """Upsert the body's nodes, applications, allocations, asks and budgets, writing only the
    rows that are new or differ from what is stored, and count them.

    Each table is read once (the compared columns of the rows the body names) and compared in
    Python; the new and changed rows are then written with a few multi-row
    ``INSERT .. ON CONFLICT DO UPDATE`` statements (``upsert_rows``; on PostgreSQL the rows not
    stored go by ``COPY``: the read, under the ingest lock, proves them new). Pushing the same
    state again, the common case for an agent reporting every few seconds, is therefore five
    reads and no write; a first push of 50,000 allocations is some 25 statements instead of
    Django's per-object work in ``bulk_create``.

    What the product owns is never overwritten from a stale read: an allocation sent without a
    ``state`` keeps the stored one (a victim stays ``preempting`` until its eviction is
    acknowledged), an ask sent without a ``node`` keeps the node the product reserved or
    nominated; those columns are left out of the update rather than written back.

    Before the allocations (and the asks) are written, the stored ones this push updates or
    removes are locked in id order (``cluster.locking``), as every other writer of many of
    them locks them: see ``remove_state``.
    """
    now = timezone.now()
    result = IngestResult(
        nodes=len(state.nodes),
        allocations=len(state.allocations),
        asks=len(state.asks),
        budgets=len(state.budgets),
        dynamic_queues=len(state.dynamic_queues),
        replace=state.replace,
    )
    changed = result.changed

    def count(kind: str, key: str, items: Iterable[Mapping[str, Any]], stored: Mapping) -> None:
        for item in items:
            changed[kind]["updated" if item[key] in stored else "created"] += 1

    # Nodes ------------------------------------------------------------------------------------
    whole = state.replace
    stored = stored_rows(
        Node, partition, "name", list(_NODE_COLUMNS), state.nodes, "name", whole=whole
    )
    nodes = [
        n for n in state.nodes
        if stored.get(n["name"]) != tuple(n[column] for column in _NODE_COLUMNS)
    ]  # fmt: skip
    count("nodes", "name", nodes, stored)
    upsert_rows(
        Node, partition, "name", [*_NODE_COLUMNS, "updated_at"],
        [(n["name"], *(n[column] for column in _NODE_COLUMNS), now) for n in nodes],
        stored=stored,
    )  # fmt: skip

    # Applications: one per app named by an allocation or ask (its first item decides) ----------
    apps: dict[str, dict[str, Any]] = {}
    for item in [*state.allocations, *state.asks]:
        apps.setdefault(item["app"], item)
    stored_apps = stored_rows(
        Application, partition, "external_id", ["id", "queue_path", "user"], apps.values(), "app",
        whole=whole,
    )  # fmt: skip
    app_ids = {app: row[0] for app, row in stored_apps.items()}
    result.applications_were_none = (
        whole and not stored_apps and not Application.objects.filter(partition=partition).exists()
    )
    changed_apps = [
        item for app, item in apps.items()
        if stored_apps.get(app, (None,))[1:] != (item["queue"], item["user"])
    ]  # fmt: skip
    count("applications", "app", changed_apps, stored_apps)
    upsert_rows(
        Application, partition, "external_id", ["queue_path", "user"],
        [(item["app"], item["queue"], item["user"]) for item in changed_apps],
        stored=stored_apps,
    )  # fmt: skip
    created = [item for app, item in apps.items() if app not in app_ids]
    # Into a partition holding no application (a first replacement), its whole table is just
    # what was created: read it at once rather than sending the names back.
    stored = stored_rows(
        Application, partition, "external_id", ["id"], created, "app",
        whole=result.applications_were_none,
    )  # fmt: skip
    app_ids.update((app, row[0]) for app, row in stored.items())

    # Allocations ------------------------------------------------------------------------------
    stored = stored_rows(
        Allocation, partition, "external_id", [*_ALLOCATION_COLUMNS, "state"],
        state.allocations, "id", whole=whole,
    )  # fmt: skip
    with_state, keep_state = [], []
    for item in state.allocations:
        values = (
            app_ids[item["app"]], item["queue"], item["node"], item["resources"],
            item["priority"], item["allow_preemption"], item["originator"],
            item["required_node"], item["job"], item["qos"], item["pdb"], item["created_at"],
        )  # fmt: skip
        before = stored.get(item["id"])
        if before is not None and before[:-1] == values and item["state"] in (None, before[-1]):
            continue
        changed["allocations"]["created" if before is None else "updated"] += 1
        row = (item["id"], *values, item["state"] or _RUNNING, now)
        (with_state if item["state"] else keep_state).append(row)
    lock_allocations(
        partition,
        [row[0] for row in (*with_state, *keep_state) if row[0] in stored]
        + list(removals["allocations"]),
    )
    columns = [*_ALLOCATION_COLUMNS, "state", "state_changed_at"]
    # A state the body names replaces the stored one (stamped when it differs); without one,
    # a new allocation starts running and a stored one keeps its own (the update leaves it).
    upsert_rows(
        Allocation, partition, "external_id", columns, with_state,
        update=[*_ALLOCATION_COLUMNS, "state"],
        update_sql={"state_changed_at": "CASE WHEN {table}.state = excluded.state "
                    "THEN {table}.state_changed_at ELSE excluded.state_changed_at END"},
        stored=stored,
    )  # fmt: skip
    upsert_rows(
        Allocation, partition, "external_id", columns, keep_state, update=_ALLOCATION_COLUMNS,
        stored=stored,
    )  # fmt: skip

    # Asks: an ask sent without a node keeps the node the product reserved or nominated -------
    stored = stored_rows(
        Ask, partition, "external_id", [*_ASK_COLUMNS, "node"], state.asks, "id", whole=whole
    )
    with_node, keep_node = [], []
    for item in state.asks:
        values = (
            app_ids[item["app"]], item["queue"], item["resources"], item["priority"],
            item["allow_preemption"], item["preemption_policy"], item["required_node"],
            item["job"], item["created_at"], item["state"], item["node_selector"],
            item["node_affinity"], item["tolerations"],
        )  # fmt: skip
        before = stored.get(item["id"])
        if before is not None and before[:-1] == values and item["node"] in ("", before[-1]):
            continue
        changed["asks"]["created" if before is None else "updated"] += 1
        (with_node if item["node"] else keep_node).append((item["id"], *values, item["node"]))
    lock_asks(
        partition,
        [row[0] for row in (*with_node, *keep_node) if row[0] in stored] + list(removals["asks"]),
    )
    columns = [*_ASK_COLUMNS, "node"]
    upsert_rows(Ask, partition, "external_id", columns, with_node, update=columns, stored=stored)
    upsert_rows(
        Ask, partition, "external_id", columns, keep_node, update=_ASK_COLUMNS, stored=stored
    )

    # Budgets ----------------------------------------------------------------------------------
    stored = stored_rows(
        DisruptionBudget, partition, "name", ["allowed_disruptions"], state.budgets, "name"
    )
    budgets = [b for b in state.budgets if stored.get(b["name"]) != (b["allowed_disruptions"],)]
    count("budgets", "name", budgets, stored)
    upsert_rows(
        DisruptionBudget, partition, "name", ["allowed_disruptions"],
        [(b["name"], b["allowed_disruptions"]) for b in budgets],
    )  # fmt: skip

    # Dynamic queues (SPEC 3.4): cluster state, no config revision ---------------------------
    stored = stored_rows(
        DynamicQueue, partition, "path", list(_DYNAMIC_COLUMNS), state.dynamic_queues, "path"
    )
    dynamic = [
        q for q in state.dynamic_queues
        if stored.get(q["path"]) != tuple(q[column] for column in _DYNAMIC_COLUMNS)
    ]  # fmt: skip
    count("dynamic_queues", "path", dynamic, stored)
    upsert_rows(
        DynamicQueue, partition, "path", [*_DYNAMIC_COLUMNS, "updated_at"],
        [(q["path"], *(q[column] for column in _DYNAMIC_COLUMNS), now) for q in dynamic],
    )  # fmt: skip
    return result


def list_removals(partition: Partition, state: ClusterStateBody) -> dict[str, set[str]]:
    """What the push removes, per kind (ids or names): its ``remove`` lists and, for a
    ``replace`` push, every stored row of the partition that the body does not list.

    Read under the partition's ingest lock: every row a push can create is created under that
    lock, so what is stored but not listed here stays so until the transaction ends."""
    removals = {
        "nodes": set(state.removed_nodes),
        "allocations": set(state.removed_allocations),
        "asks": set(state.removed_asks),
        "budgets": set(state.removed_budgets),
        "dynamic_queues": set(),
    }
    if state.replace:
        listed = {
            "nodes": {item["name"] for item in state.nodes},
            "allocations": {item["id"] for item in state.allocations},
            "asks": {item["id"] for item in state.asks},
            "budgets": {item["name"] for item in state.budgets},
            "dynamic_queues": {item["path"] for item in state.dynamic_queues},
        }
        for kind, model, key in (
            ("nodes", Node, "name"),
            ("allocations", Allocation, "external_id"),
            ("asks", Ask, "external_id"),
            ("budgets", DisruptionBudget, "name"),
            ("dynamic_queues", DynamicQueue, "path"),
        ):
            removals[kind] |= _unlisted(model, partition, key, listed[kind])
    return removals


def remove_state(
    partition: Partition,
    state: ClusterStateBody,
    removals: dict[str, set[str]],
    result: IngestResult,
) -> None:
    """Delete what the push removes (``list_removals``), then the applications left without any
    task or ask.

    The allocations and asks removed were locked, in id order, with those the push updates
    (``write_state``), so a run marking victims or an acknowledgement releasing them at the same
    moment waits or is waited for, never deadlocks with the push. A row the enforcement
    changed before it was locked is deleted as it is now (the usage triggers see the row as
    deleted). An allocation removed while its eviction order is pending leaves the order
    pending: the pod is gone, and acknowledging the order (``gone``) finds no allocation to
    release.
    """
    emptied = _applications_of(partition, removals["allocations"], removals["asks"])
    result.removed = {
        "nodes": _delete(Node, partition, "name", removals["nodes"]),
        "allocations": _delete(Allocation, partition, "external_id", removals["allocations"]),
        "asks": _delete(Ask, partition, "external_id", removals["asks"]),
        "budgets": _delete(DisruptionBudget, partition, "name", removals["budgets"]),
        "dynamic_queues": _delete(DynamicQueue, partition, "path", removals["dynamic_queues"]),
    }
    for kind, count in result.removed.items():
        result.changed[kind]["removed"] = count
    # An application lives while it has tasks or asks: one whose last ones were removed is
    # gone from the cluster too (otherwise a long-running cluster's finished jobs pile up). A
    # replace push looks at every application of the partition (one anti-join): one may also
    # have been emptied earlier by its tasks moving to another application.
    applications = Application.objects.filter(partition=partition, allocations=None, asks=None)
    if not state.replace:
        applications = applications.filter(pk__in=emptied) if emptied else None
    elif result.applications_were_none and not any(result.removed.values()):
        # Every application then was created by this push for an allocation or ask it wrote
        # and kept: none can be empty (a first replacement skips reading them all again).
        applications = None
    if applications is not None:
        result.changed["applications"]["removed"] = _deleted(applications.delete(), Application)


def _unlisted(
    model: type[models.Model], partition: Partition, key: str, listed: set[str]
) -> set[str]:
    """The ``key`` values of the partition's stored rows that are not in ``listed``."""
    stored = model.objects.filter(partition=partition).values_list(key, flat=True)  # type: ignore[attr-defined]
    return set(stored.iterator(chunk_size=10_000)) - listed


def _delete(model: type[models.Model], partition: Partition, key: str, ids: set[str]) -> int:
    """Delete the partition's rows whose ``key`` is in ``ids``; how many were deleted."""
    if not ids:
        return 0
    rows = model.objects.filter(partition=partition, **{f"{key}__in": sorted(ids)})  # type: ignore[attr-defined]
    return _deleted(rows.delete(), model)


def _deleted(counts: tuple[int, dict[str, int]], model: type[models.Model]) -> int:
    """The rows of ``model`` itself in the counts ``QuerySet.delete`` returns."""
    return counts[1].get(model._meta.label, 0)  # type: ignore[attr-defined]


def _applications_of(
    partition: Partition, allocation_ids: Iterable[str], ask_ids: Iterable[str]
) -> set[int]:
    """Primary keys of the applications owning these allocations and asks."""
    owners: set[int] = set()
    allocation_ids, ask_ids = sorted(allocation_ids), sorted(ask_ids)
    if allocation_ids:
        owners.update(
            Allocation.objects.filter(
                partition=partition, external_id__in=allocation_ids
            ).values_list("application_id", flat=True)
        )
    if ask_ids:
        owners.update(
            Ask.objects.filter(partition=partition, external_id__in=ask_ids).values_list(
                "application_id", flat=True
            )
        )
    return owners
