"""The partition configuration as a plain document: settings plus a flat, ordered queue list.

This is the shape every layer agrees on. The database stores it per revision as a JSON snapshot
(``to_json``), YuniKorn ``queues.yaml`` converts to and from it (``preemption.yunikorn``), and
validation and effective values work on it (``preemption.hierarchy``). Resource values are
canonical integers (bytes, millicores, counts); property values are strings as the admin wrote
them.

Queues are listed parents first, siblings in their configured order, so a snapshot round-trips to
the same YAML. A queue is identified by its ``path`` (``root.a.b``): names cannot contain ``.``, so
the path is unambiguous.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from preemption import durations, resources

ROOT = "root"
ASK_POLICIES = ("inter_queue", "priority")
#: The victim strategies of required-node preemption (SPEC 4.3), in the order tried by default.
VICTIM_STRATEGIES = ("single", "multiple")
#: Upper bounds of the engine tunables kept as partition settings (mirrored by
#: ``scheduler_admin.base.limits``): a ``deviation_percent`` of 1,000 already accepts a victim 11
#: times the ask, and ``max_victims`` is a count of tasks on one node, so larger values only
#: hide a typo.
MAX_DEVIATION_PERCENT = 1000
MAX_VICTIMS_LIMIT = 10_000
#: The partition's enforcement modes (SPEC 5 "Enforcement mode"): ``enforce`` evicts,
#: ``observe`` plans and records runs but evicts nothing.
ENFORCEMENT_MODES = ("enforce", "observe")
#: Which changes need another admin's approval (SPEC 6 "Approvals"): ``none``, ``decreases`` (a
#: change that lowers or adds a max, or lowers a guarantee) or ``all``.
APPROVAL_MODES = ("none", "decreases", "all")
#: The highest ``max_evictions_per_minute`` (SPEC 5 "Pacing"; 0 means unlimited). Mirrored by
#: ``scheduler_admin.base.limits.MAX_EVICTIONS_PER_MINUTE_MAX``.
MAX_EVICTIONS_PER_MINUTE_LIMIT = 100_000
PREEMPTION_POLICIES = ("default", "fence", "disabled")

PROPERTY_POLICY = "preemption.policy"
PROPERTY_DELAY = "preemption.delay"
PROPERTY_QUOTA_DELAY = "quota.preemption.delay"
PROPERTY_ASK_BACKOFF_DELAY = "application.unschedasks.backoff.delay"
#: Properties YuniKorn reads as Go durations; stored and exported with a unit (``durations``).
DURATION_PROPERTIES = (PROPERTY_DELAY, PROPERTY_QUOTA_DELAY, PROPERTY_ASK_BACKOFF_DELAY)

#: Version of the snapshot layout, stored in every snapshot so old revisions stay readable.
SNAPSHOT_FORMAT = 1

# Limits of what a config may hold. They mirror ``scheduler_admin.base.limits`` (the engine imports
# nothing of Django; ``tests/unit/test_config_limits.py`` checks that the two agree), so a config
# that validates here always fits the columns it is stored in.

#: Longest queue path (``root.a.b``): the ``path`` column's length.
QUEUE_PATH_MAX_LENGTH = 1024
#: Longest property key or value.
PROPERTY_MAX_LENGTH = 256
#: Longest resource name: a Kubernetes qualified name, an optional DNS-subdomain prefix (253),
#: "/" and a name (63).
RESOURCE_NAME_MAX_LENGTH = 253 + 1 + 63
#: Deepest nesting of lists and mappings in a kept YuniKorn value (``extra``), and in any JSON or
#: YAML document the product reads: deeper documents are refused before anything walks them.
DOCUMENT_MAX_DEPTH = 64

#: What PostgreSQL text and jsonb cannot hold: NUL, and UTF-16 surrogates, which in a Python
#: string are always unpaired (a valid pair decodes to one code point) and cannot be encoded.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "must not contain NUL characters"
    return "must not contain unpaired surrogates (not valid Unicode)"


def shown(text: str) -> str:
    """``text`` with NUL and surrogates written as ``\\u`` escapes, safe to put in a message
    or a field path (an unpaired surrogate cannot be encoded in a response or a page)."""
    return _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def plain_data_problems(value: Any, at: str) -> Iterator[tuple[str, str]]:
    """``(location, message)`` for everything in ``value`` that is not storable JSON data:
    types other than null, bool, int, finite float, str, list and str-keyed mapping; text
    holding NUL or surrogates (keys too); nesting deeper than ``DOCUMENT_MAX_DEPTH``.

    Iterative, so a hostile depth cannot exhaust the interpreter's stack while it is checked.
    """
    stack: list[tuple[Any, str, int]] = [(value, at, 1)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                yield where, problem
        elif isinstance(item, float) and not math.isfinite(item):
            yield where, f"{item} is not a number JSON can store"
        elif item is None or isinstance(item, bool | int | float):
            continue
        elif depth > DOCUMENT_MAX_DEPTH:
            yield where, f"nested deeper than {DOCUMENT_MAX_DEPTH} levels"
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    yield f"{where}.{_quote_key(key)}", "keys must be strings"
                    continue
                inner = f"{where}.{shown(key)}"
                problem = text_problem(key)
                if problem:
                    yield inner, f"the key {problem}"
                stack.append((child, inner, depth + 1))
        else:
            yield where, f"unsupported value of type {type(item).__name__}"


def _quote_key(key: object) -> str:
    """A short ``repr`` of a non-text key (``repr`` of an int past 4300 digits raises)."""
    if isinstance(key, int) and key.bit_length() > 256:
        return "<a very large integer>"
    text = repr(key)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class PartitionSettings:
    """Partition-wide settings (SPEC 3.2). Delays are whole seconds.

    ``preemption_enabled`` mirrors YuniKorn's ``preemption.enabled`` and is kept for export;
    ``extra`` holds YuniKorn partition keys the product does not act on, kept verbatim.

    ``victim_strategy``, ``deviation_percent``, ``max_victims`` (required-node preemption, SPEC
    4.3) and ``soft_eviction`` (job preemption, SPEC 4.5) are the engine's options as the live
    loop plans with them (``Options.of``); ``enforcement`` and ``max_evictions_per_minute``
    (SPEC 5) say whether and how fast the live loop evicts, and ``approval`` (SPEC 6) which
    changes need another admin's approval; they mean nothing to the engine.
    Like ``miss_percent`` they are the product's own:
    they travel in the JSON form of the config, never in ``queues.yaml``. A snapshot saved
    before they existed reads as their defaults.
    """

    name: str
    preemption_enabled: bool = True
    quota_preemption_enabled: bool = False
    miss_percent: int = 0
    default_preemption_delay: int = 30
    daemonset_preemption_delay: int = 0
    ask_policy: str = "inter_queue"
    victim_strategy: tuple[str, ...] = VICTIM_STRATEGIES
    deviation_percent: int = 10
    max_victims: int = 5
    soft_eviction: bool = False
    enforcement: str = "enforce"
    max_evictions_per_minute: int = 0
    approval: str = "none"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A list of strategies (JSON, a form, the database) is held as a tuple, so equal
        # settings compare equal however they were built; anything else stays for the validator
        # to name (``hierarchy.validate_config``).
        if isinstance(self.victim_strategy, list):
            object.__setattr__(self, "victim_strategy", tuple(self.victim_strategy))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "preemption_enabled": self.preemption_enabled,
            "quota_preemption_enabled": self.quota_preemption_enabled,
            "miss_percent": self.miss_percent,
            "default_preemption_delay": self.default_preemption_delay,
            "daemonset_preemption_delay": self.daemonset_preemption_delay,
            "ask_policy": self.ask_policy,
            "victim_strategy": list(self.victim_strategy),
            "deviation_percent": self.deviation_percent,
            "max_victims": self.max_victims,
            "soft_eviction": self.soft_eviction,
            "enforcement": self.enforcement,
            "max_evictions_per_minute": self.max_evictions_per_minute,
            "approval": self.approval,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionSettings:
        return cls(
            name=data["name"],
            preemption_enabled=data.get("preemption_enabled", True),
            quota_preemption_enabled=data.get("quota_preemption_enabled", False),
            miss_percent=data.get("miss_percent", 0),
            default_preemption_delay=data.get("default_preemption_delay", 30),
            daemonset_preemption_delay=data.get("daemonset_preemption_delay", 0),
            ask_policy=data.get("ask_policy", "inter_queue"),
            victim_strategy=data.get("victim_strategy", VICTIM_STRATEGIES),
            deviation_percent=data.get("deviation_percent", 10),
            max_victims=data.get("max_victims", 5),
            soft_eviction=data.get("soft_eviction", False),
            enforcement=data.get("enforcement", "enforce"),
            max_evictions_per_minute=data.get("max_evictions_per_minute", 0),
            approval=data.get("approval", "none"),
            extra=dict(data.get("extra", {})),
        )


@dataclass(frozen=True)
class QueueConfig:
    """One queue as configured. ``parent`` is the parent's path (None only for root).

    ``extra`` holds YuniKorn queue keys the product keeps but does not act on
    (``maxapplications``, ``adminacl``, ``submitacl``, ``childtemplate``, ``limits``, ``parent``).
    """

    path: str
    parent: str | None
    name: str
    guaranteed: Mapping[str, int] = field(default_factory=dict)
    max: Mapping[str, int] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def child_of(cls, parent: str | None, name: str, **fields: Any) -> QueueConfig:
        """A queue named ``name`` under ``parent`` (None makes it the root)."""
        path = name if parent is None else f"{parent}.{name}"
        return cls(path=path, parent=parent, name=name, **fields)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "parent": self.parent,
            "name": self.name,
            "guaranteed": dict(sorted(self.guaranteed.items())),
            "max": dict(sorted(self.max.items())),
            "properties": dict(sorted(self.properties.items())),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueConfig:
        return cls(
            path=data["path"],
            parent=data.get("parent"),
            name=data["name"],
            guaranteed=dict(data.get("guaranteed", {})),
            max=dict(data.get("max", {})),
            properties=dict(data.get("properties", {})),
            extra=dict(data.get("extra", {})),
        )


@dataclass(frozen=True)
class PartitionConfig:
    """A whole partition: what one revision snapshots and one change replaces atomically."""

    settings: PartitionSettings
    queues: tuple[QueueConfig, ...]

    @property
    def name(self) -> str:
        return self.settings.name

    def queue(self, path: str) -> QueueConfig | None:
        for queue in self.queues:
            if queue.path == path:
                return queue
        return None

    def queues_by_path(self) -> dict[str, QueueConfig]:
        return {queue.path: queue for queue in self.queues}

    def children(self, path: str) -> list[QueueConfig]:
        return [queue for queue in self.queues if queue.parent == path]

    def sibling_order(self) -> dict[str | None, list[str]]:
        """Children's paths per parent path, in configured order (what an export preserves)."""
        order: dict[str | None, list[str]] = {}
        for queue in self.queues:
            order.setdefault(queue.parent, []).append(queue.path)
        return order

    def with_queue(self, updated: QueueConfig) -> PartitionConfig:
        """A copy with the queue of the same path replaced (appended if it is new)."""
        queues = list(self.queues)
        for index, queue in enumerate(queues):
            if queue.path == updated.path:
                queues[index] = updated
                return replace(self, queues=tuple(queues))
        return replace(self, queues=(*queues, updated))

    def without_subtree(self, path: str) -> PartitionConfig:
        prefix = path + "."
        kept = tuple(q for q in self.queues if q.path != path and not q.path.startswith(prefix))
        return replace(self, queues=kept)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": SNAPSHOT_FORMAT,
            "partition": self.settings.to_json(),
            "queues": [queue.to_json() for queue in self.queues],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionConfig:
        """Read a snapshot written by ``to_json`` (trusted input: our own revisions)."""
        return cls(
            settings=PartitionSettings.from_json(data["partition"]),
            queues=tuple(QueueConfig.from_json(item) for item in data["queues"]),
        )


@dataclass(frozen=True)
class FieldChange:
    """One difference between two configs: ``queue`` is None for a partition setting."""

    queue: str | None
    field: str
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        """The change as the API and the audit trail show it: quantities as exact strings
        (``max.memory`` ``"300Gi"``, vcore ``"10"`` = 10 cores) and the partition's delays as
        durations (``"30s"``), like every other response; other values as stored."""
        return {
            "queue": self.queue,
            "field": self.field,
            "old": self._shown(self.old),
            "new": self._shown(self.new),
        }

    def _shown(self, value: Any) -> Any:
        if value is None:
            return None
        kind, _, name = self.field.partition(".")
        if self.queue is not None and kind in _RESOURCE_FIELDS and name:
            return resources.format_quantity(value, resource=name)
        if self.queue is None and self.field in _DURATION_SETTINGS:
            return durations.format_duration(value)
        return value


_QUEUE_FIELDS = ("guaranteed", "max", "properties", "extra")
_RESOURCE_FIELDS = ("guaranteed", "max")
#: The partition settings that hold whole seconds.
_DURATION_SETTINGS = ("default_preemption_delay", "daemonset_preemption_delay")


def diff_configs(old: PartitionConfig, new: PartitionConfig) -> list[FieldChange]:
    """Per-setting and per-queue-field differences, in a stable order.

    A queue that appears or disappears is one change with field ``queue``; a changed mapping is
    reported per key (``max.memory``, ``properties.preemption.policy``) so a reader sees exactly
    which value moved.
    """
    changes: list[FieldChange] = []
    old_settings, new_settings = old.settings.to_json(), new.settings.to_json()
    for key in old_settings:
        if key != "name" and old_settings[key] != new_settings[key]:
            changes.append(FieldChange(None, key, old_settings[key], new_settings[key]))

    old_queues, new_queues = old.queues_by_path(), new.queues_by_path()
    for path in sorted(old_queues.keys() | new_queues.keys()):
        before, after = old_queues.get(path), new_queues.get(path)
        if before is None:
            changes.append(FieldChange(path, "queue", None, "added"))
            continue
        if after is None:
            changes.append(FieldChange(path, "queue", "removed", None))
            continue
        if before is after:
            continue  # the same queue (an edit of others keeps it): nothing to compare
        for field_name in _QUEUE_FIELDS:
            changes.extend(
                _mapping_changes(
                    path, field_name, getattr(before, field_name), getattr(after, field_name)
                )
            )
    return changes


def _mapping_changes(
    path: str, field_name: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Iterable[FieldChange]:
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            yield FieldChange(path, f"{field_name}.{key}", before.get(key), after.get(key))
