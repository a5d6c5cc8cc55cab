"""Bulk, idempotent ingestion of cluster state (SPEC 3.3 and 7 ``cluster-state``).

The body speaks the scenario files' vocabulary::

    {"nodes": [...], "allocations": [...], "asks": [...], "budgets": [...],
     "remove": {"nodes": [names], "allocations": [ids], "asks": [ids], "budgets": [names]},
     "replace": false}

``"replace": true`` makes the body the partition's whole state: every node, allocation, ask and
budget it does not list is removed (and the applications left without tasks or asks), as a
cluster agent that has just listed everything sends it. Without it a push only adds, changes
and removes what it names.

Everything is checked first and every problem is reported with its path
(``allocations[3].resources.memory``); only a clean body is written, in one transaction, with
upserts keyed by the cluster's ids — so sending the same body twice changes nothing. Every text
and integer the checker accepts fits its column (``scheduler_admin.base.limits``).

Only new and changed rows are written, and a ``state.ingested`` audit event is recorded only
when something changed, with the counts of what did (``IngestResult.changed``).

Allocation state: a new allocation is ``running`` unless the body says ``preempting``. An
existing allocation keeps the state the product gave it (a victim stays ``preempting`` until its
eviction is acknowledged) unless the body names a state explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, models, transaction
from django.db.models.functions import Cast
from django.utils import timezone

from preemption import resources as quantities
from preemption.model import DEFAULT_CREATED_AT, PreemptionPolicy, QoS
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event
from scheduler_admin.base.errors import Invalid
from scheduler_admin.base.limits import (
    CLUSTER_ID_MAX_LENGTH,
    CLUSTER_USER_MAX_LENGTH,
    INT32_MAX,
    INT32_MIN,
    POSITIVE_INT_MAX,
    QUEUE_PATH_MAX_LENGTH,
    RESOURCE_NAME_MAX_LENGTH,
)
from scheduler_admin.base.lock_order import lock_partition, retry_on_conflict
from scheduler_admin.cluster.locking import lock_allocations, lock_asks
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

if TYPE_CHECKING:
    from scheduler_admin.accounts.permissions import Authorize

TOP_KEYS = {"nodes", "allocations", "asks", "budgets", "remove", "replace"}
REMOVE_KEYS = {"nodes", "allocations", "asks", "budgets"}
#: What a push can change, in the order the response and the audit event list them.
KINDS = ("nodes", "applications", "allocations", "asks", "budgets")

#: Longest ISO 8601 time worth parsing (``2026-01-01T12:00:00.123456+05:30`` is 32).
_TIME_MAX_LENGTH = 64
#: Longest key or value quoted in an error message or shown in an error path.
_QUOTE_MAX_LENGTH = 80
#: Rows per INSERT statement: under SQLite's 32,766 bound parameters for the widest table.
_BATCH_ROWS = 2000


class IngestErrors(Invalid):
    """The body was refused; ``errors`` maps each field path to its messages."""

    detail = "The cluster state is not valid."


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
    replace: bool = False
    removed: dict[str, int] = field(default_factory=dict)
    changed: dict[str, dict[str, int]] = field(default_factory=_no_changes)

    @property
    def anything_changed(self) -> bool:
        return any(any(counts.values()) for counts in self.changed.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "allocations": self.allocations,
            "asks": self.asks,
            "budgets": self.budgets,
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


def _quote(value: object) -> str:
    """``repr`` of a value for a message, shortened: never echoes a NUL, a lone surrogate or a
    megabyte of text into an error body (``repr`` escapes the first two)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        text = f"an integer of {value.bit_length()} bits"  # repr fails past 4,300 digits
    elif isinstance(value, str | int | float | bool):
        text = repr(value)
    else:
        text = type(value).__name__
    return text if len(text) <= _QUOTE_MAX_LENGTH else text[: _QUOTE_MAX_LENGTH - 3] + "..."


def _text_problem(value: str, limit: int) -> str | None:
    """Why ``value`` cannot be stored as text of at most ``limit`` characters, or None.

    PostgreSQL text and jsonb refuse NUL, and a lone surrogate (``"\\ud800"``, which JSON can
    spell) cannot be encoded in UTF-8: both would fail in the database, half-way through a
    write, rather than here.
    """
    if len(value) > limit:
        return f"must be at most {limit} characters"
    if "\x00" in value:
        return "must not contain NUL characters"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode text (it holds a lone surrogate)"
    return None


def _is_plain(value: object, limit: int) -> bool:
    """True for a non-empty str that is stored as is: the checker's fast path."""
    return (
        type(value) is str and 0 < len(value) <= limit and value.isascii() and "\x00" not in value
    )


class _Checker:
    """Reads typed values out of the body, collecting every error with its path.

    Every text is bounded by the ``scheduler_admin.base.limits`` constant its column uses and free
    of NUL and lone surrogates; every integer is within its column's range; so a body the
    checker accepts always writes (the columns use the same constants).
    """

    def __init__(self, leaves: set[str] | None = None, nodes: set[str] | None = None) -> None:
        self.errors: dict[str, list[str]] = {}
        #: The partition's leaf queues and the nodes an item may name (stored or in the body).
        self.leaves = leaves or set()
        #: YuniKorn reports queue paths lower-cased (``root.queuea`` for a configured
        #: ``root.queueA``); names are unique regardless of case, so the match is unambiguous.
        self.leaf_spelling = {leaf.lower(): leaf for leaf in self.leaves}
        self.nodes = nodes or set()
        # Thousands of tasks share a handful of shapes ({"memory": "2Gi", "vcore": "500m"}):
        # parse each shape once. Only valid shapes are kept (errors carry each item's path).
        self._parsed: dict[tuple[tuple[object, object], ...], dict[str, int]] = {}

    def fail(self, path: str, message: str) -> None:
        self.errors.setdefault(path or "non_field_errors", []).append(message)

    def mapping(self, value: object, path: str, keys: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, "must be an object")
            return {}
        if not keys.issuperset(value):
            for key in value:
                if key not in keys:
                    self._unknown(key, path)
        return value

    def _unknown(self, key: object, path: str) -> None:
        if isinstance(key, str) and _is_plain(key, _QUOTE_MAX_LENGTH):
            self.fail(f"{path}.{key}" if path else key, "unknown field")
        else:  # not showable as a path: named (escaped, shortened) in the parent's message
            self.fail(path, f"unknown field {_quote(key)}")

    def items(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, "must be a list")
            return []
        return value

    def text(
        self,
        value: object,
        path: str,
        *,
        required: bool = True,
        limit: int = CLUSTER_ID_MAX_LENGTH,
    ) -> str:
        if _is_plain(value, limit):
            return value  # type: ignore[return-value]
        if value is None or value == "":
            if required:
                self.fail(path, "is required")
            return ""
        if not isinstance(value, str):
            self.fail(path, "must be a string")
            return ""
        problem = _text_problem(value, limit)
        if problem:
            self.fail(path, problem)
            return ""
        return value

    def integer(self, value: object, path: str, default: int, minimum: int, maximum: int) -> int:
        if value is None:
            return default
        if type(value) is not int:  # bool is an int subclass; floats may have lost digits
            self.fail(path, "must be an integer")
            return default
        if not minimum <= value <= maximum:
            self.fail(path, f"must be an integer from {minimum} to {maximum}")
            return default
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
        if isinstance(value, Mapping) and not self._resource_names(value, path):
            return {}
        try:
            parsed = quantities.parse_resources(value, field=path)
        except quantities.ResourceErrors as exc:
            for error in exc.errors:
                self.fail(error.field, error.message)
            return {}
        if shape is not None:
            self._parsed[shape] = dict(parsed)
        return parsed

    def _resource_names(self, value: Mapping[object, object], path: str) -> bool:
        """Resource names are stored as JSON keys: text within the limit, no NUL, no lone
        surrogate. A bad name is reported at the mapping's path (it cannot be a path itself)."""
        good = True
        for name in value:
            if isinstance(name, str) and _is_plain(name, RESOURCE_NAME_MAX_LENGTH):
                continue
            if not isinstance(name, str) or not name:
                problem = "must be a non-empty string"
            else:
                problem = _text_problem(name, RESOURCE_NAME_MAX_LENGTH)
                if problem is None:
                    continue
            self.fail(path, f"resource name {_quote(name)} {problem}")
            good = False
        return good

    def time(self, value: object, path: str) -> datetime:
        if value is None:
            return DEFAULT_CREATED_AT
        # fromisoformat stops at a NUL ("...00Z\x00junk" would parse): refuse such text first.
        if isinstance(value, str) and _text_problem(value, _TIME_MAX_LENGTH) is None:
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
        if not isinstance(value, str) or value not in choices:
            self.fail(path, f"must be one of {', '.join(choices)}")
            return default
        return value


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

    def is_empty(self) -> bool:
        """Nothing to upsert or remove, and not a replace push (an empty replace push is a
        cluster with nothing in it, and empties the partition's state)."""
        return not self.replace and not any(
            (self.nodes, self.allocations, self.asks, self.budgets, self.removed_nodes,
             self.removed_allocations, self.removed_asks, self.removed_budgets)
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
    queues = {q.path for q in partition.current_config().queues}
    checker = _Checker(
        leaves={path for path in queues if not any(p.startswith(path + ".") for p in queues)},
        nodes=set(partition.nodes.values_list("name", flat=True)),
    )
    data = checker.mapping(body, "", TOP_KEYS)
    replace = checker.boolean(data.get("replace"), "replace", False)
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
                checker.fail(f"{label}[{index}].{key}", f"duplicate {_quote(item_id)} in this body")
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
    )


@retry_on_conflict
def ingest_cluster_state(
    partition: Partition,
    body: object,
    *,
    actor: AbstractBaseUser | None,
    audit: bool = True,
    authorize: Authorize | None = None,
) -> IngestResult:
    """Apply a cluster-state body to ``partition`` atomically, or raise ``IngestErrors``.

    Steps, in one transaction, its locks in the order of ``scheduler_admin.base.lock_order``:

    1. check the whole body (``parse_cluster_state``); nothing is written unless it is valid,
       and a body with nothing to push (``{}``, empty lists) is refused (``EMPTY_PUSH``);
    2. run the caller's in-write authorization (``authorize``: the account checked again, then
       the partition row locked, shared), or lock the partition row alone, shared: the push
       inserts rows that reference it, and a run's writer takes it before the tasks and asks
       this push locks (``lock_order`` level 2);
    3. take the partition's ingest lock (PostgreSQL; SQLite's IMMEDIATE transactions already
       run one writer at a time), so two agents pushing at once apply one after the other and
       each sees exactly what it changed;
    4. compare every item with its stored row and write only new and changed rows
       (``_write``), then the removals (``_remove``: the ``remove`` lists and, for a
       ``replace`` push, everything of the partition the body does not list);
    5. record one ``state.ingested`` audit event with the counts, but only when something
       changed: an agent repeating the same state every few seconds writes nothing at all;
    6. once committed, analyse the tables the push changed a large part of (``analyse_after``).

    ``audit=False`` is for the demo simulator's churn only: it stands in for the cluster, and a
    ``state.ingested`` event per step (about 1,200 an hour) would bury the admins' changes and
    the runs in the audit log. Every push through the API or ``ingest_state`` that changes
    something is audited.
    """
    state = parse_cluster_state(partition, body)
    if state.is_empty():
        raise IngestErrors({"body": [EMPTY_PUSH]})
    with transaction.atomic():
        if authorize is not None:
            authorize(partition, exclusive=False)
        else:
            lock_partition(partition.pk, exclusive=False)
        _lock_partition_state(partition)
        removals = _removals(partition, state)
        result = _write(partition, state, removals)
        _remove(partition, state, removals, result)
        if audit and result.anything_changed:
            record_event(
                AuditKind.STATE_INGESTED,
                actor=actor,
                partition_name=partition.name,
                object_type="cluster-state",
                summary=result.summary(partition.name),
                data=result.to_json(),
            )
        transaction.on_commit(lambda: analyse_after(result), robust=True)
    return result


#: A push that writes at least this many rows of a table, and at least ``ANALYSE_FRACTION`` of
#: the rows the table had, has the table analysed once it commits.
ANALYSE_MIN_ROWS = 1000
ANALYSE_FRACTION = 0.1
_ANALYSED = {"nodes": Node, "applications": Application, "allocations": Allocation, "asks": Ask}


def analyse_after(result: IngestResult) -> list[str]:
    """Refresh the planner's statistics of the tables a large push changed (PostgreSQL; returns
    the tables analysed).

    Without them, the first big push into an empty or young table leaves PostgreSQL guessing: it
    chose the ``(partition, state, queue)`` index over the unique id for a run's eviction
    updates, each one reading every running task of the partition (59 evictions/s instead of
    256 at 200,000 tasks), until autovacuum came by. Autovacuum's own rule (rows changed above
    10% of the table) is applied here at once, with a floor so a steady trickle of pushes never
    pays for it. Called after the push commits (``ANALYZE`` reads what is committed and would
    otherwise lengthen the push's transaction).
    """
    if connection.vendor != "postgresql":
        return []
    written = {kind: sum(result.changed[kind].values()) for kind in _ANALYSED}
    large = {kind: count for kind, count in written.items() if count >= ANALYSE_MIN_ROWS}
    if not large:
        return []
    tables = {kind: _ANALYSED[kind]._meta.db_table for kind in large}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)",
            [list(tables.values())],
        )
        rows = dict(cursor.fetchall())
        # reltuples is -1 for a table never analysed (or vacuumed) yet.
        chosen = [
            table
            for kind, table in tables.items()
            if rows.get(table, -1) < 0 or large[kind] >= ANALYSE_FRACTION * rows[table]
        ]
        for table in chosen:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return chosen


def _lock_partition_state(partition: Partition) -> None:
    """Serialise pushes to one partition (a transaction-scoped advisory lock, so config saves,
    which lock the partition row, are not held up by a long push)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"cluster-state:{partition.pk}"],
            )


def _removals(partition: Partition, state: ClusterStateBody) -> dict[str, set[str]]:
    """What the push removes, per kind (ids or names): its ``remove`` lists and, for a
    ``replace`` push, every stored row of the partition that the body does not list.

    Read under the partition's ingest lock: every row a push can create is created under that
    lock, so what is stored but not listed here stays so until the transaction ends."""
    removals = {
        "nodes": set(state.removed_nodes),
        "allocations": set(state.removed_allocations),
        "asks": set(state.removed_asks),
        "budgets": set(state.removed_budgets),
    }
    if state.replace:
        listed = {
            "nodes": {item["name"] for item in state.nodes},
            "allocations": {item["id"] for item in state.allocations},
            "asks": {item["id"] for item in state.asks},
            "budgets": {item["name"] for item in state.budgets},
        }
        for kind, model, key in (
            ("nodes", Node, "name"),
            ("allocations", Allocation, "external_id"),
            ("asks", Ask, "external_id"),
            ("budgets", DisruptionBudget, "name"),
        ):
            removals[kind] |= _unlisted(model, partition, key, listed[kind])
    return removals


def _remove(
    partition: Partition,
    state: ClusterStateBody,
    removals: dict[str, set[str]],
    result: IngestResult,
) -> None:
    """Delete what the push removes (``_removals``), then the applications left without any
    task or ask.

    The allocations and asks removed were locked, in id order, with those the push updates
    (``_write``), so a run marking victims or an acknowledgement releasing them at the same
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


def _shape(value: object) -> tuple[tuple[object, object], ...] | None:
    """A hashable key for a resource mapping of plain strings and integers, else None."""
    if not isinstance(value, Mapping):
        return None
    items = tuple(value.items())
    for name, amount in items:
        if type(name) is not str or type(amount) not in (str, int):
            return None
    return items


def _ids(checker: _Checker, value: object, path: str) -> list[str]:
    return [checker.text(v, f"{path}[{i}]") for i, v in enumerate(checker.items(value, path))]


# Item fields: name -> (check, default). A check takes (checker, value, path) and returns the
# value to keep. Fields in an item's ``always`` set are checked even when absent (required
# ones say so; resource sets become new empty dicts); the others only when given and not null,
# so a typical task of six fields costs six checks, not fifteen.
_Check = Callable[[_Checker, Any, str], Any]


def _id(checker: _Checker, value: object, path: str) -> str:
    return checker.text(value, path)


def _optional_id(checker: _Checker, value: object, path: str) -> str:
    return checker.text(value, path, required=False)


def _user(checker: _Checker, value: object, path: str) -> str:
    return checker.text(value, path, required=False, limit=CLUSTER_USER_MAX_LENGTH)


def _leaf_queue(checker: _Checker, value: object, path: str) -> str:
    """A leaf queue of the partition, matched case-insensitively as YuniKorn names queues, and
    returned in the spelling of the config."""
    queue = checker.text(value, path, limit=QUEUE_PATH_MAX_LENGTH)
    if queue and queue not in checker.leaves:
        configured = checker.leaf_spelling.get(queue.lower())
        if configured is not None:
            return configured
        checker.fail(path, f"{_quote(queue)} is not a leaf queue of this partition")
    return queue


def _node_ref(checker: _Checker, value: object, path: str) -> str:
    """A node that exists, or that this body creates (required where a field is ``always``)."""
    name = checker.text(value, path)
    if name and name not in checker.nodes:
        checker.fail(path, f"no node {_quote(name)}")
    return name


def _optional_node_ref(checker: _Checker, value: object, path: str) -> str:
    return _node_ref(checker, value, path) if value != "" else ""


def _resources(checker: _Checker, value: object, path: str) -> dict[str, int]:
    return checker.resources(value, path)


def _priority(checker: _Checker, value: object, path: str) -> int:
    return checker.integer(value, path, 0, INT32_MIN, INT32_MAX)


def _disruptions(checker: _Checker, value: object, path: str) -> int:
    return checker.integer(value, path, 0, 0, POSITIVE_INT_MAX)


def _time(checker: _Checker, value: object, path: str) -> datetime:
    return checker.time(value, path)


def _flag(checker: _Checker, value: object, path: str) -> bool:
    return checker.boolean(value, path, False)


def _one_of(choices: list[str]) -> _Check:
    def check(checker: _Checker, value: object, path: str) -> str:
        return checker.choice(value, path, choices, choices[0])

    return check


_NODE_FIELDS: dict[str, tuple[_Check, Any]] = {
    "name": (_id, ""),
    "capacity": (_resources, None),
    "schedulable": (_flag, True),
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
}
_BUDGET_FIELDS: dict[str, tuple[_Check, Any]] = {
    "name": (_id, ""),
    "allowed_disruptions": (_disruptions, 0),
}
NODE_KEYS = set(_NODE_FIELDS)
ALLOCATION_KEYS = set(_ALLOCATION_FIELDS)
ASK_KEYS = set(_ASK_FIELDS)
BUDGET_KEYS = set(_BUDGET_FIELDS)
_DEFAULTS = {
    id(fields): ({name: default for name, (_, default) in fields.items()}, set(fields))
    for fields in (_NODE_FIELDS, _ALLOCATION_FIELDS, _ASK_FIELDS, _BUDGET_FIELDS)
}


def _item(
    checker: _Checker,
    raw: object,
    path: str,
    fields: dict[str, tuple[_Check, Any]],
    always: tuple[str, ...],
) -> dict[str, Any]:
    """One item of a list: every field of ``fields``, checked or defaulted."""
    defaults, keys = _DEFAULTS[id(fields)]
    item = checker.mapping(raw, path, keys)
    result = dict(defaults)
    for name in always:
        result[name] = fields[name][0](checker, item.get(name), f"{path}.{name}")
    for name, value in item.items():
        if value is not None and name not in always and name in fields:
            result[name] = fields[name][0](checker, value, f"{path}.{name}")
    return result


def _node(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    return _item(checker, raw, path, _NODE_FIELDS, ("name", "capacity"))


def _allocation(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    item = _item(checker, raw, path, _ALLOCATION_FIELDS, ("id", "queue", "node", "resources"))
    item["app"] = item["app"] or item["id"]
    return item


def _ask(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    item = _item(checker, raw, path, _ASK_FIELDS, ("id", "queue", "resources"))
    item["app"] = item["app"] or item["id"]
    return item


def _budget(checker: _Checker, raw: object, path: str) -> dict[str, Any]:
    return _item(checker, raw, path, _BUDGET_FIELDS, ("name",))


def _check_apps(
    checker: _Checker, allocations: list[dict[str, Any]], asks: list[dict[str, Any]]
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
                    f"application {_quote(app)} is in {first[0]} at {first[1]}; one app, one queue",
                )


# --------------------------------------------------------------------------------------------
# Writing: compare with what is stored, write only what changed
# --------------------------------------------------------------------------------------------

_ALLOCATION_COLUMNS = (
    "application_id", "queue_path", "node_name", "resources", "priority", "allow_preemption",
    "originator", "required_node", "job", "qos", "pdb", "created_at",
)  # fmt: skip
_ASK_COLUMNS = (
    "application_id", "queue_path", "resources", "priority", "allow_preemption",
    "preemption_policy", "required_node", "job", "created_at", "state",
)  # fmt: skip


def _write(
    partition: Partition, state: ClusterStateBody, removals: dict[str, set[str]]
) -> IngestResult:
    """Upsert the body's nodes, applications, allocations, asks and budgets, writing only the
    rows that are new or differ from what is stored, and count them.

    Each table is read once (the compared columns of the rows the body names) and compared in
    Python; the new and changed rows are then written with a few multi-row
    ``INSERT .. ON CONFLICT DO UPDATE`` statements (``_upsert``). Pushing the same state again,
    the common case for an agent reporting every few seconds, is therefore five reads and no
    write; a first push of 50,000 allocations is some 25 statements instead of Django's
    per-object work in ``bulk_create``.

    What the product owns is never overwritten from a stale read: an allocation sent without a
    ``state`` keeps the stored one (a victim stays ``preempting`` until its eviction is
    acknowledged), an ask sent without a ``node`` keeps the node the product reserved or
    nominated; those columns are left out of the update rather than written back.

    Before the allocations (and the asks) are written, the stored ones this push updates or
    removes are locked in id order (``cluster.locking``), as every other writer of many of
    them locks them: see ``_remove``.
    """
    now = timezone.now()
    result = IngestResult(
        nodes=len(state.nodes),
        allocations=len(state.allocations),
        asks=len(state.asks),
        budgets=len(state.budgets),
        replace=state.replace,
    )
    changed = result.changed

    def count(kind: str, key: str, items: Iterable[Mapping[str, Any]], stored: Mapping) -> None:
        for item in items:
            changed[kind]["updated" if item[key] in stored else "created"] += 1

    # Nodes ------------------------------------------------------------------------------------
    stored = _stored(Node, partition, "name", ["capacity", "schedulable"], state.nodes, "name")
    nodes = [n for n in state.nodes if stored.get(n["name"]) != (n["capacity"], n["schedulable"])]
    count("nodes", "name", nodes, stored)
    _upsert(
        Node, partition, "name", ["capacity", "schedulable", "updated_at"],
        [(n["name"], n["capacity"], n["schedulable"], now) for n in nodes],
    )  # fmt: skip

    # Applications: one per app named by an allocation or ask (its first item decides) ----------
    apps: dict[str, dict[str, Any]] = {}
    for item in [*state.allocations, *state.asks]:
        apps.setdefault(item["app"], item)
    stored_apps = _stored(
        Application, partition, "external_id", ["id", "queue_path", "user"], apps.values(), "app"
    )
    app_ids = {app: row[0] for app, row in stored_apps.items()}
    changed_apps = [
        item for app, item in apps.items()
        if stored_apps.get(app, (None,))[1:] != (item["queue"], item["user"])
    ]  # fmt: skip
    count("applications", "app", changed_apps, stored_apps)
    _upsert(
        Application, partition, "external_id", ["queue_path", "user"],
        [(item["app"], item["queue"], item["user"]) for item in changed_apps],
    )  # fmt: skip
    created = [item for app, item in apps.items() if app not in app_ids]
    stored = _stored(Application, partition, "external_id", ["id"], created, "app")
    app_ids.update((app, row[0]) for app, row in stored.items())

    # Allocations ------------------------------------------------------------------------------
    stored = _stored(
        Allocation, partition, "external_id", [*_ALLOCATION_COLUMNS, "state"],
        state.allocations, "id",
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
        row = (item["id"], *values, item["state"] or AllocationState.RUNNING.value, now)
        (with_state if item["state"] else keep_state).append(row)
    lock_allocations(
        partition,
        [row[0] for row in (*with_state, *keep_state) if row[0] in stored]
        + list(removals["allocations"]),
    )
    columns = [*_ALLOCATION_COLUMNS, "state", "state_changed_at"]
    # A state the body names replaces the stored one (stamped when it differs); without one,
    # a new allocation starts running and a stored one keeps its own (the update leaves it).
    _upsert(
        Allocation, partition, "external_id", columns, with_state,
        update=[*_ALLOCATION_COLUMNS, "state"],
        update_sql={"state_changed_at": "CASE WHEN {table}.state = excluded.state "
                    "THEN {table}.state_changed_at ELSE excluded.state_changed_at END"},
    )  # fmt: skip
    _upsert(Allocation, partition, "external_id", columns, keep_state, update=_ALLOCATION_COLUMNS)

    # Asks: an ask sent without a node keeps the node the product reserved or nominated -------
    stored = _stored(Ask, partition, "external_id", [*_ASK_COLUMNS, "node"], state.asks, "id")
    with_node, keep_node = [], []
    for item in state.asks:
        values = (
            app_ids[item["app"]], item["queue"], item["resources"], item["priority"],
            item["allow_preemption"], item["preemption_policy"], item["required_node"],
            item["job"], item["created_at"], item["state"],
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
    _upsert(Ask, partition, "external_id", columns, with_node, update=columns)
    _upsert(Ask, partition, "external_id", columns, keep_node, update=_ASK_COLUMNS)

    # Budgets ----------------------------------------------------------------------------------
    stored = _stored(
        DisruptionBudget, partition, "name", ["allowed_disruptions"], state.budgets, "name"
    )
    budgets = [b for b in state.budgets if stored.get(b["name"]) != (b["allowed_disruptions"],)]
    count("budgets", "name", budgets, stored)
    _upsert(
        DisruptionBudget, partition, "name", ["allowed_disruptions"],
        [(b["name"], b["allowed_disruptions"]) for b in budgets],
    )  # fmt: skip
    return result


#: Above this many items, reading the partition's whole table beats a huge ``IN`` list.
_WHOLE_TABLE_FROM = 1000


def _stored(
    model: type[models.Model],
    partition: Partition,
    key: str,
    columns: list[str],
    items: Iterable[Mapping[str, Any]],
    item_key: str,
) -> dict[str, tuple[Any, ...]]:
    """The stored values of ``columns`` (attnames) by ``key``, for the rows the items name.

    A large body reads the partition's rows at once rather than sending tens of thousands of
    ids back to the database; a small one reads only its own rows. JSON columns are read as
    text and decoded once per distinct text: thousands of tasks share a few resource sets.
    """
    ids = [item[item_key] for item in items]
    if not ids:
        return {}
    rows = model.objects.filter(partition=partition)  # type: ignore[attr-defined]
    if len(ids) < _WHOLE_TABLE_FROM:
        rows = rows.filter(**{f"{key}__in": ids})
    fields = {f.attname: f for f in model._meta.concrete_fields}  # type: ignore[attr-defined]
    as_text = [i for i, name in enumerate(columns) if isinstance(fields[name], models.JSONField)]
    rows = rows.annotate(
        **{f"text_{columns[i]}": Cast(columns[i], models.TextField()) for i in as_text}
    )
    names = [f"text_{name}" if i in as_text else name for i, name in enumerate(columns)]
    decoded: dict[str, Any] = {}

    def decode(text: str) -> Any:
        if text not in decoded:
            decoded[text] = json.loads(text)
        return decoded[text]

    stored = {}
    for key_value, *values in rows.values_list(key, *names):
        for i in as_text:
            values[i] = decode(values[i])
        stored[key_value] = tuple(values)
    return stored


def _upsert(
    model: type[models.Model],
    partition: Partition,
    key: str,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    *,
    update: Iterable[str] | None = None,
    update_sql: Mapping[str, str] | None = None,
) -> None:
    """``INSERT (partition, key, *columns) .. ON CONFLICT (partition, key) DO UPDATE``.

    ``rows`` are ``(key, *columns)`` tuples of Python values (attnames: ``application_id``). On
    conflict the ``update`` columns (default: all) take the new values and the ``update_sql``
    columns an SQL expression (``{table}`` names the stored row, ``excluded`` the new one).
    Rows are written in key order, so two writers of overlapping rows lock them in the same
    order.

    On PostgreSQL the rows go as one binary array per column through ``unnest``: a statement
    per table whatever the number of rows, and no per-value quoting (Django's client-side
    parameter binding spends about 20 µs a value: 16 s for 50,000 allocations). Elsewhere
    (SQLite for development) as multi-row ``VALUES`` in batches.
    """
    if not rows:
        return
    meta = model._meta  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    by_attname = {f.attname: f for f in meta.concrete_fields}
    fields = [by_attname[name] for name in [key, *columns]]
    names = ", ".join(quote(n) for n in ["partition_id", *(f.column for f in fields)])
    sets = [f"{quote(c)} = excluded.{quote(c)}" for c in (columns if update is None else update)]
    sets += [f"{quote(c)} = {sql.format(table=table)}" for c, sql in (update_sql or {}).items()]
    conflict = (
        f"ON CONFLICT ({quote('partition_id')}, {quote(fields[0].column)}) "
        f"DO UPDATE SET {', '.join(sets)}"
    )
    rows = sorted(rows, key=lambda row: row[0])
    if connection.vendor == "postgresql":
        _insert_arrays(table, names, conflict, partition.pk, fields, rows)
    else:
        _insert_values(table, names, conflict, partition.pk, fields, rows)


def _insert_arrays(
    table: str,
    names: str,
    conflict: str,
    partition_id: int,
    fields: list[models.Field],
    rows: list[tuple[Any, ...]],
) -> None:
    """PostgreSQL: ``INSERT .. SELECT FROM unnest(%b::type[], ..)``, parameters in binary.

    JSON goes as text (``json.dumps`` with the field's encoder, as the ORM writes it) and is
    cast per value; a psycopg cursor of its own binds on the server, on Django's connection
    and so inside its transaction.
    """
    quote = connection.ops.quote_name
    columns = list(zip(*rows, strict=True))
    arrays, selects, aliases = [], [], []
    for index, (f, values) in enumerate(zip(fields, columns, strict=True)):
        alias = quote(f"c{index}")
        aliases.append(alias)
        if isinstance(f, models.JSONField):
            arrays.append(("text", [json.dumps(v, cls=f.encoder) for v in values]))
            selects.append(f"{alias}::jsonb")
        else:
            arrays.append((f.db_type(connection), list(values)))
            selects.append(alias)
    unnest = ", ".join(f"%b::{db_type}[]" for db_type, _ in arrays)
    sql = (
        f"INSERT INTO {table} ({names}) SELECT %b::bigint, {', '.join(selects)} "  # noqa: S608
        f"FROM unnest({unnest}) AS s({', '.join(aliases)}) {conflict}"
    )  # every name comes from the model's metadata, quoted; every value is a parameter
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, [partition_id, *(values for _, values in arrays)])


def _insert_values(
    table: str,
    names: str,
    conflict: str,
    partition_id: int,
    fields: list[models.Field],
    rows: list[tuple[Any, ...]],
) -> None:
    """Any other database: multi-row ``VALUES`` in batches of ``_BATCH_ROWS``, values adapted
    by their model field as the ORM would."""
    adapters: list[Callable[[Any], Any] | None] = [
        (lambda value, f=f: f.get_db_prep_save(value, connection))
        if isinstance(f, models.JSONField | models.DateTimeField)
        else None
        for f in fields
    ]
    one = "(" + ", ".join(["%s"] * (len(fields) + 1)) + ")"
    head = f"INSERT INTO {table} ({names}) VALUES "  # noqa: S608 - names from the model, quoted
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _BATCH_ROWS):
            batch = rows[start : start + _BATCH_ROWS]
            params: list[Any] = []
            for row in batch:
                params.append(partition_id)
                params.extend(
                    value if adapt is None else adapt(value)
                    for value, adapt in zip(row, adapters, strict=True)
                )
            cursor.execute(f"{head}{', '.join([one] * len(batch))} {conflict}", params)
