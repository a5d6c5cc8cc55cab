"""The queue tree of a partition: validation (SPEC 3.2) and effective values.

``validate_config`` checks a whole ``PartitionConfig`` and returns every broken rule at once, so
an admin fixes a bad change in one round trip. ``Hierarchy`` answers the questions the UI, the
API and the policies ask of a valid tree: effective max, inherited preemption policy and quota
delay (with the queue each value comes from), leaves and ancestors.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Protocol

from preemption import resources
from preemption.config import (
    ASK_POLICIES,
    DURATION_PROPERTIES,
    MAX_DEVIATION_PERCENT,
    MAX_VICTIMS_LIMIT,
    PREEMPTION_POLICIES,
    PROPERTY_DELAY,
    PROPERTY_MAX_LENGTH,
    PROPERTY_POLICY,
    PROPERTY_QUOTA_DELAY,
    QUEUE_PATH_MAX_LENGTH,
    RESOURCE_NAME_MAX_LENGTH,
    ROOT,
    VICTIM_STRATEGIES,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
    plain_data_problems,
    shown,
    text_problem,
)
from preemption.durations import (
    MAX_DURATION,
    DurationError,
    duration_spelling,
    format_duration,
    parse_duration,
    parse_go_duration,
)
from preemption.errors import ConfigError, ConfigErrors  # noqa: F401 (callers import both here)
from preemption.yunikorn_rules import share_rule_check, yunikorn_rule_errors

#: YuniKorn's rule for queue names (and ours for partition names).
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")  # always used with fullmatch


class HasUsage(Protocol):
    """Anything that uses resources in a queue (an allocation, in practice)."""

    @property
    def queue(self) -> str: ...

    @property
    def resources(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class Effective:
    """An effective value and where it comes from: a queue path, ``"partition"`` or None
    (the built-in default)."""

    value: object
    source: str | None


class Hierarchy:
    """Read-only views over a structurally valid config (``validate_config`` found no
    structural error). Lookups are by queue path."""

    def __init__(self, config: PartitionConfig) -> None:
        built = config.__dict__.get("_hierarchy")
        if built is not None:  # this config's tree is built: share it and its remembered values
            self.__dict__.update(built.__dict__)
            return
        self.config = config
        self.settings: PartitionSettings = config.settings
        self.queues: dict[str, QueueConfig] = config.queues_by_path()
        self._children: dict[str, list[str]] = {path: [] for path in self.queues}
        for queue in config.queues:
            if queue.parent is not None and queue.parent in self._children:
                self._children[queue.parent].append(queue.path)
        # Effective values, filled in on demand from the parent's (each queue's once): the
        # validation and the timer rules ask for every queue's, which walking each path from
        # root would make quadratic in the depth and slow at 5,000 queues.
        self._max: dict[str, dict[str, int]] = {}
        self._quota_delay: dict[str, Effective] = {}
        self._passed_policy: dict[str, Effective] = {}
        # Kept with the config (a value: replaced, never changed in place), so every Hierarchy
        # of the same config object (the validation, the notices, the timer rules, the plans'
        # state) shares one tree and what it has worked out.
        object.__setattr__(config, "_hierarchy", self)

    def children(self, path: str) -> list[str]:
        return self._children[path]

    def is_leaf(self, path: str) -> bool:
        return not self._children[path]

    def ancestors(self, path: str) -> Iterator[str]:
        """Parent, grandparent, ... up to root (the queue itself excluded)."""
        parent = self.queues[path].parent
        while parent is not None:
            yield parent
            parent = self.queues[parent].parent

    def path_from_root(self, path: str) -> list[str]:
        return [*reversed(list(self.ancestors(path))), path]

    def is_within(self, path: str, ancestor: str) -> bool:
        """True when ``path`` is ``ancestor`` or lies in its subtree."""
        return path == ancestor or path.startswith(ancestor + ".")

    def leaves_under(self, path: str) -> list[str]:
        """Leaf queues of the subtree rooted at ``path``, in configured (depth-first) order."""
        leaves: list[str] = []
        stack = [path]
        while stack:
            current = stack.pop()
            children = self._children[current]
            if not children:
                leaves.append(current)
            stack.extend(reversed(children))
        return leaves

    def subtree(self, path: str) -> list[str]:
        """``path`` and every queue below it, parents before children (depth-first)."""
        found: list[str] = []
        stack = [path]
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self._children[current]))
        return found

    def usage_by_queue(self, allocations: Iterable[HasUsage]) -> dict[str, dict[str, int]]:
        """Usage of every queue: the sum of the given allocations in its subtree.

        Sums per queue first, then rolls each queue's total into its parent, children before
        parents, so the cost is one pass over the allocations plus one over the tree. An
        allocation of a queue that is not in the config is ignored.
        """
        usage: dict[str, dict[str, int]] = {path: {} for path in self.queues}
        for allocation in allocations:
            own = usage.get(allocation.queue)
            if own is None:
                continue
            for name, value in allocation.resources.items():
                own[name] = own.get(name, 0) + value
        for queue in reversed(self.config.queues):
            if queue.parent is None or queue.parent not in usage:
                continue
            parent = usage[queue.parent]
            for name, value in usage[queue.path].items():
                parent[name] = parent.get(name, 0) + value
        return usage

    def fence_root(
        self, path: str, ask: Mapping[str, int], usage: Mapping[str, Mapping[str, int]]
    ) -> str:
        """Where inter-queue preemption for an ask in ``path`` may look (law 7, SPEC 4.2).

        Walk up from the queue itself: stop at the first queue whose own ``preemption.policy``
        is ``fence``, or whose ``usage + ask`` would exceed its own max, or at root.
        """
        for step in [path, *self.ancestors(path)]:
            queue = self.queues[step]
            if _policy_of(queue) == "fence":
                return step
            if not resources.fits(resources.add(usage.get(step, {}), ask), queue.max):
                return step
        return ROOT

    def effective_max(self, path: str) -> dict[str, int]:
        """Component-wise minimum of the max along the path (a type no queue limits is absent,
        i.e. unlimited)."""
        return dict(self._effective_max(path))

    def _effective_max(self, path: str) -> dict[str, int]:
        """``effective_max``, remembered per queue (shared: never change the result)."""
        found = self._max.get(path)
        if found is not None:
            return found
        missing = [path]  # the queue and its ancestors not computed yet, nearest first
        parent = self.queues[path].parent
        while parent is not None and parent not in self._max:
            missing.append(parent)
            parent = self.queues[parent].parent
        limit = self._max[parent] if parent is not None else {}
        for step in reversed(missing):
            limit = resources.limit_min(limit, self.queues[step].max)
            self._max[step] = limit
        return limit

    def effective_policy(self, path: str) -> Effective:
        """``preemption.policy``: the queue's own value, else ``disabled`` if the nearest ancestor
        that sets one says so, else ``default`` (``fence`` is never inherited)."""
        queue = self.queues[path]
        own = _policy_of(queue)
        if own is not None:
            return Effective(own, path)
        if queue.parent is None:
            return _DEFAULT_POLICY
        return self._policy_passed_down(queue.parent)

    def _policy_passed_down(self, path: str) -> Effective:
        """What a child of ``path`` that sets no policy gets: ``disabled`` from the nearest
        queue on the path (``path`` included) that sets a policy, when that one is
        ``disabled``; else ``default``."""
        missing: list[str] = []
        step: str | None = path
        found: Effective | None = None
        while step is not None:
            found = self._passed_policy.get(step)
            if found is not None:
                break
            queue = self.queues[step]
            own = _policy_of(queue)
            if own is not None:
                found = Effective("disabled", step) if own == "disabled" else _DEFAULT_POLICY
                self._passed_policy[step] = found
                break
            missing.append(step)
            step = queue.parent
        found = found or _DEFAULT_POLICY
        for below in missing:
            self._passed_policy[below] = found
        return found

    def effective_quota_delay(self, path: str) -> Effective:
        """``quota.preemption.delay`` in seconds from the queue or its nearest ancestor that sets
        it; 0 (quota preemption off for the queue) when none does."""
        found = self._quota_delay.get(path)
        if found is not None:
            return found
        missing: list[str] = []
        step: str | None = path
        while step is not None:
            found = self._quota_delay.get(step)
            if found is not None:
                break
            queue = self.queues[step]
            seconds = duration_property(queue, PROPERTY_QUOTA_DELAY)
            if seconds is not None:
                found = Effective(seconds, step)
                self._quota_delay[step] = found
                break
            missing.append(step)
            step = queue.parent
        found = found or _NO_QUOTA_DELAY
        for below in missing:
            self._quota_delay[below] = found
        return found

    def duration_text(self, effective: Effective, key: str) -> str:
        """How an effective delay is shown: the property as written (with its unit) on the queue
        it comes from, else the partition's whole-second setting in Go's syntax."""
        if effective.source in self.queues:
            written = self.queues[effective.source].properties.get(key)
            if written:
                return written
        return format_duration(int(effective.value or 0))

    def preemption_delay(self, path: str) -> Effective:
        """A leaf's own ``preemption.delay`` (never inherited), else the partition default."""
        seconds = duration_property(self.queues[path], PROPERTY_DELAY)
        if seconds is not None and self.is_leaf(path):
            return Effective(seconds, path)
        return Effective(self.settings.default_preemption_delay, "partition")


_DEFAULT_POLICY = Effective("default", None)
_NO_QUOTA_DELAY = Effective(0, None)


def _policy_of(queue: QueueConfig) -> str | None:
    value = queue.properties.get(PROPERTY_POLICY)
    if value is None:
        return None
    lowered = value.strip().lower()
    return lowered if lowered in PREEMPTION_POLICIES else None


def duration_property(queue: QueueConfig, key: str) -> int | None:
    """A duration property in whole seconds (a sub-second remainder rounds up); None when the
    queue does not set it or sets something that is not a non-negative duration."""
    value = queue.properties.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return _duration_seconds(value, key)
    try:
        return parse_duration(value, field=key)
    except DurationError:
        return None


@lru_cache(maxsize=4096)
def _duration_seconds(value: str, key: str) -> int | None:
    """``duration_property`` of a text value, remembered: a tree of 5,000 queues inherits the
    same few spellings, and effective delays are looked up along every path."""
    try:
        return parse_duration(value, field=key)
    except DurationError:
        return None


def normalized_config(config: PartitionConfig) -> PartitionConfig:
    """``config`` with every duration property in its stored spelling (``duration_spelling``:
    integer seconds get their unit, ``60`` -> ``60s``), so what is saved, shown and exported
    means the same to YuniKorn as to this product. Values that are not durations are left for
    validation to report."""
    queues = tuple(_normalized_queue(queue) for queue in config.queues)
    if all(map(operator.is_, queues, config.queues)):
        return config
    return replace(config, queues=queues)


def _normalized_queue(queue: QueueConfig) -> QueueConfig:
    properties = normalized_properties(queue.properties)
    return queue if properties is queue.properties else replace(queue, properties=properties)


def normalized_properties(properties: Mapping[str, str]) -> Mapping[str, str]:
    """``properties`` with each duration property given its unit (see ``normalized_config``);
    ``properties`` itself when every one already has it."""
    changed: dict[str, str] | None = None
    for key in DURATION_PROPERTIES:
        value = properties.get(key)
        if isinstance(value, str):
            spelled = _spelling(value, key)
            if spelled is not None and spelled != value:
                if changed is None:
                    changed = dict(properties)
                changed[key] = spelled
    return properties if changed is None else changed


@lru_cache(maxsize=4096)
def _spelling(value: str, key: str) -> str | None:
    """``duration_spelling`` of a text value (None: not a duration), remembered like
    ``_duration_seconds``."""
    try:
        return duration_spelling(value, field=key)
    except DurationError:
        return None


def validate_config(
    config: PartitionConfig, *, base: PartitionConfig | None = None
) -> list[ConfigError]:
    """Every broken rule of SPEC 3.2 in ``config``; an empty list means it may be saved.

    Steps: partition settings; tree structure (one root, known parents, no cycles, valid and
    unique names, paths that fit their column) — later rules need a tree, so they run only when
    the structure holds; property values and kept YuniKorn keys (text that can be stored); then
    the resource rules between each queue, its parent and its children.

    ``base``: a config that ``config`` was made from by replacing some queues in place (same
    position, path, parent and name; ``PartitionConfig.with_queue``), e.g. the saved config a
    change is applied to. Its findings are then reused for every queue the replaced ones cannot
    affect (those outside their subtrees and paths from root): the same list, found with work
    around the change rather than over the whole tree. What is found is kept with the config
    (a value: replaced, never changed in place), so validating it again costs nothing.
    """
    found = config.__dict__.get("_findings")
    if found is None:
        if base is not None and base is not config:
            found = _findings_from(base, _findings(base), config)
        if found is None:
            found = _findings(config)
    errors = _settings_errors(config.settings)
    if found.structure:
        return errors + found.structure + _beyond_the_structure(config, found.structure)
    for own in found.own:
        errors.extend(own)
    for extra in found.extra:
        errors.extend(extra)
    if found.storable and not _extra_errors(None, config.settings.extra):
        # YuniKorn's rules read the kept keys; unstorable ones are reported above.
        errors.extend(yunikorn_rule_errors(config))
    return errors


def _beyond_the_structure(
    config: PartitionConfig, structure: list[ConfigError]
) -> list[ConfigError]:
    """The other rules' findings in a config whose tree is broken, so that one answer lists
    every fault: a misspelt name or a duplicate does not hide a guarantee above max elsewhere.

    The rules between queues (effective max, the children's guarantees, the quota delay) need
    a tree: they are checked on the sound part, the queues reached from root through queues
    without a structural fault of their own (a broken queue's subtree is left out: its
    effective values are not known). Each broken queue's own values (properties, resource
    values) and every queue's kept keys are checked anyway, and YuniKorn's rules on the kept
    keys run on the whole config, which they tolerate.
    """
    broken = {error.queue for error in structure if error.queue is not None}
    children: dict[str, list[QueueConfig]] = {}
    for queue in config.queues:
        if queue.parent is not None and queue.path not in broken:
            children.setdefault(queue.parent, []).append(queue)
    root = next(
        (q for q in config.queues if q.parent is None and q.path == ROOT and q.path not in broken),
        None,
    )
    sound: list[QueueConfig] = [] if root is None else [root]
    for queue in sound:  # grows while it is walked: parents first
        sound.extend(children.get(queue.path, ()))
    errors: list[ConfigError] = []
    if sound:
        part = replace(config, queues=tuple(sound))
        found = _findings(part)
        if not found.structure:  # by construction; a tree it cannot read adds nothing
            for own in found.own:
                errors.extend(own)
    kept = {queue.path for queue in sound}
    extras: list[ConfigError] = []
    for queue in config.queues:
        if queue.path not in kept:
            errors.extend(property_errors(queue) + _resource_value_errors(queue))
        extras.extend(_extra_errors(queue.path, queue.extra))
    errors.extend(extras)
    if not extras and not _extra_errors(None, config.settings.extra):
        errors.extend(yunikorn_rule_errors(config))
    return errors


def with_settings(config: PartitionConfig, settings: PartitionSettings) -> PartitionConfig:
    """``config`` with other partition settings, keeping what validation found in its queues
    (those checks read no setting; the settings are checked on every ``validate_config``), so
    an import validated when its file was read is not validated again when the product's own
    settings are put back before it is saved (seconds at 18,000 queues)."""
    changed = replace(config, settings=settings)
    found = config.__dict__.get("_findings")
    if found is not None:
        object.__setattr__(changed, "_findings", found)  # frozen: kept beside the fields
    return changed


def is_validated(config: PartitionConfig) -> bool:
    """Whether ``validate_config``'s findings for ``config`` are kept with it: a config made
    from it is then validated around the change only, at no cost for ``config`` itself."""
    return "_findings" in config.__dict__


@dataclass(frozen=True)
class _Findings:
    """What ``validate_config`` finds in one config's queues, per queue by position, so a config
    that replaces a few queues of this one can reuse the rest (``_findings_from``).

    ``own``: each queue's property errors and resource errors (its values' own problems, or the
    rules between it, its parent and its children); ``extra``: each queue's unstorable kept keys.
    ``values`` counts the queues whose resource values are broken: then no sums are made and
    every queue reports only its values' own problems."""

    structure: list[ConfigError]
    own: tuple[tuple[ConfigError, ...], ...] = ()
    extra: tuple[tuple[ConfigError, ...], ...] = ()
    broken_values: tuple[bool, ...] = ()
    positions: Mapping[str, int] | None = None

    @property
    def storable(self) -> bool:
        return not any(self.extra)


def _findings(config: PartitionConfig) -> _Findings:
    """``validate_config``'s queue checks over the whole tree, kept with ``config``."""
    found = config.__dict__.get("_findings")
    if found is not None:
        return found
    structure = _structure_errors(config)
    if structure:
        found = _Findings(structure)
    else:
        hierarchy = Hierarchy(config)
        queues = config.queues
        extra = tuple(_kept(_extra_errors(queue.path, queue.extra)) for queue in queues)
        values = [_resource_value_errors(queue) for queue in queues]
        # The sums need valid numbers: with a broken value anywhere each queue reports only
        # its values' own problems.
        passed_up = None if any(values) else guarantees_passed_up(hierarchy)
        own = tuple(
            _kept(
                property_errors(queue)
                + (
                    value_errors
                    if passed_up is None
                    else _queue_resource_errors(hierarchy, queue, passed_up)
                )
            )
            for queue, value_errors in zip(queues, values, strict=True)
        )
        found = _Findings(
            structure, own, extra, tuple(bool(v) for v in values),
            {queue.path: index for index, queue in enumerate(queues)},
        )  # fmt: skip
    object.__setattr__(config, "_findings", found)  # frozen: kept beside the fields
    return found


def _kept(errors: list[ConfigError]) -> tuple[ConfigError, ...]:
    """One queue's findings as kept: most queues have none, and a tree of 5,000 queues would
    otherwise keep (and have the garbage collector walk) 10,000 empty lists."""
    return tuple(errors) if errors else ()


def _findings_from(
    base: PartitionConfig, found: _Findings, config: PartitionConfig
) -> _Findings | None:
    """``_findings(config)`` worked out from ``base``'s, when ``config`` is ``base`` with some
    queues replaced in place (same position, path, parent and name; the others the very same
    objects); None when it is not, or when the change breaks or repairs a resource value (every
    queue then reports differently: the whole tree is checked).

    A replaced queue can change only its own findings, those of its subtree (effective max and
    quota delay come down from it) and those of its ancestors (the guarantees passed up to
    them); every other queue's are reused. ``tests/unit/test_incremental_validation.py``
    compares the result with the full validation over generated trees and changes."""
    if found.structure or found.positions is None or len(config.queues) != len(base.queues):
        return None
    changed = [
        index
        for index, (before, after) in enumerate(zip(base.queues, config.queues, strict=True))
        if before is not after
    ]
    for index in changed:
        before, after = base.queues[index], config.queues[index]
        if (before.path, before.parent, before.name) != (after.path, after.parent, after.name):
            return None  # the tree itself changed
    extra = list(found.extra)
    broken = list(found.broken_values)
    values: dict[int, list[ConfigError]] = {}
    for index in changed:
        queue = config.queues[index]
        extra[index] = _kept(_extra_errors(queue.path, queue.extra))
        values[index] = _resource_value_errors(queue)
        broken[index] = bool(values[index])
    if any(broken) != any(found.broken_values):
        return None
    own = list(found.own)
    if any(broken):  # no sums: each queue's findings are its own
        for index in changed:
            own[index] = _kept(property_errors(config.queues[index]) + values[index])
    else:
        hierarchy = Hierarchy(config)
        passed_up = guarantees_passed_up(hierarchy)
        affected: set[str] = set()
        for index in changed:
            path = config.queues[index].path
            affected.update(hierarchy.subtree(path))
            affected.update(hierarchy.ancestors(path))
        for path in affected:
            index = found.positions[path]
            queue = config.queues[index]
            own[index] = _kept(
                property_errors(queue) + _queue_resource_errors(hierarchy, queue, passed_up)
            )
    result = _Findings(found.structure, tuple(own), tuple(extra), tuple(broken), found.positions)
    object.__setattr__(config, "_findings", result)  # frozen: kept beside the fields
    share_rule_check(base, config, changed)
    return result


def guarantees_passed_up(hierarchy: Hierarchy) -> dict[str, dict[str, int]]:
    """What each queue's guarantee counts as in its parent's sum, as YuniKorn checks it
    (``checkQueueResource``): its own guarantee when it sets one (any non-zero value), else the
    sum of its children's, so a parent that guarantees nothing passes its children's guarantees
    up to the grandparent instead of hiding them."""
    passed: dict[str, dict[str, int]] = {}
    # Children before parents: deepest first (a JSON body may list a child before its parent).
    deepest_first = sorted(
        hierarchy.config.queues, key=lambda queue: queue.path.count("."), reverse=True
    )
    for queue in deepest_first:
        if any(queue.guaranteed.values()):
            passed[queue.path] = dict(queue.guaranteed)
            continue
        passed[queue.path] = _sum(passed[child] for child in hierarchy.children(queue.path))
    return passed


def _sum(amounts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """``resources.add`` of all of ``amounts`` (types sorted, as it gives them), summed in
    place rather than one new set per term: a parent may have hundreds of children."""
    total: dict[str, int] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, 0) + value
    return dict(sorted(total.items()))


#: Why a ``preemption.delay`` on a parent queue is accepted but flagged (SPEC 3.2).
PARENT_DELAY_WARNING = (
    "YuniKorn passes this value to the leaves below; this product ignores it on a parent "
    "(it follows seed 000: preemption.delay is read on leaf queues only)"
)


def config_notices(config: PartitionConfig) -> list[ConfigError]:
    """Settings that are valid but read differently or not at all, for the UI, the import and
    the validate responses to point out. Warnings never block a save."""
    hierarchy = Hierarchy(config)
    return [
        ConfigError(queue.path, f"properties.{PROPERTY_DELAY}", PARENT_DELAY_WARNING)
        for queue in config.queues
        if PROPERTY_DELAY in queue.properties and not hierarchy.is_leaf(queue.path)
    ]


def _settings_errors(settings: PartitionSettings) -> list[ConfigError]:
    errors: list[ConfigError] = []
    if not isinstance(settings.name, str) or not NAME_PATTERN.fullmatch(settings.name):
        errors.append(ConfigError(None, "name", f"{settings.name!r} is not a valid name"))
    if not _is_int(settings.miss_percent) or not 0 <= settings.miss_percent <= 100:
        errors.append(ConfigError(None, "miss_percent", "must be an integer from 0 to 100"))
    for key in ("default_preemption_delay", "daemonset_preemption_delay"):
        value = getattr(settings, key)
        if not _is_int(value) or not 0 <= value <= MAX_DURATION:
            errors.append(
                ConfigError(
                    None,
                    key,
                    f"must be a whole number of seconds >= 0 and <= {MAX_DURATION} "
                    "(about 68 years)",
                )
            )
    if settings.ask_policy not in ASK_POLICIES:
        errors.append(ConfigError(None, "ask_policy", f"must be one of {', '.join(ASK_POLICIES)}"))
    for key in ("preemption_enabled", "quota_preemption_enabled", "soft_eviction"):
        if not isinstance(getattr(settings, key), bool):
            errors.append(ConfigError(None, key, "must be true or false"))
    errors.extend(_option_errors(settings))
    errors.extend(_extra_errors(None, settings.extra))
    return errors


def _option_errors(settings: PartitionSettings) -> list[ConfigError]:
    """The engine tunables kept as settings (SPEC 4.3): a non-empty list of distinct
    strategies, and counts in their ranges."""
    errors: list[ConfigError] = []
    strategies = settings.victim_strategy
    if not isinstance(strategies, tuple) or not strategies:
        errors.append(
            ConfigError(
                None,
                "victim_strategy",
                f"must be a non-empty list of {', '.join(VICTIM_STRATEGIES)}",
            )
        )
    else:
        for i, strategy in enumerate(strategies):
            if strategy not in VICTIM_STRATEGIES:
                errors.append(
                    ConfigError(
                        None,
                        f"victim_strategy[{i}]",
                        f"must be one of {', '.join(VICTIM_STRATEGIES)}",
                    )
                )
        if len(set(map(repr, strategies))) != len(strategies):
            errors.append(ConfigError(None, "victim_strategy", "lists a strategy twice"))
    if not _is_int(settings.deviation_percent) or not (
        0 <= settings.deviation_percent <= MAX_DEVIATION_PERCENT
    ):
        errors.append(
            ConfigError(
                None, "deviation_percent", f"must be an integer from 0 to {MAX_DEVIATION_PERCENT}"
            )
        )
    if not _is_int(settings.max_victims) or not 1 <= settings.max_victims <= MAX_VICTIMS_LIMIT:
        errors.append(
            ConfigError(None, "max_victims", f"must be an integer from 1 to {MAX_VICTIMS_LIMIT}")
        )
    return errors


def _extra_errors(queue: str | None, extra: Mapping[str, object]) -> list[ConfigError]:
    """Kept YuniKorn keys must be storable JSON data (``config.plain_data_problems``)."""
    if type(extra) is dict and not extra:
        return []  # most queues keep nothing
    return [
        ConfigError(queue, where, message)
        for where, message in plain_data_problems(dict(extra), "extra")
    ]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _structure_errors(config: PartitionConfig) -> list[ConfigError]:
    errors: list[ConfigError] = []
    by_path: dict[str, QueueConfig] = {}
    for queue in config.queues:
        if queue.path in by_path:
            errors.append(ConfigError(queue.path, "name", f"duplicate queue name {queue.name!r}"))
        by_path[queue.path] = queue

    errors.extend(_case_clash_errors(config.queues))
    ending: set[str] = set()  # paths whose parents lead to a queue without one: no cycle
    roots = [queue for queue in config.queues if queue.parent is None]
    if [queue.path for queue in roots] != [ROOT]:
        errors.append(ConfigError(None, "queues", "there must be exactly one top queue, 'root'"))
    for queue in config.queues:
        if len(queue.path) > QUEUE_PATH_MAX_LENGTH:
            errors.append(
                ConfigError(
                    queue.path,
                    "path",
                    f"the path is {len(queue.path)} characters long, over the limit of "
                    f"{QUEUE_PATH_MAX_LENGTH}: use shorter names or fewer levels",
                )
            )
        if queue.parent is None:
            continue
        if not isinstance(queue.name, str) or not NAME_PATTERN.fullmatch(queue.name):
            errors.append(
                ConfigError(
                    queue.path,
                    "name",
                    f"{queue.name!r} is not a valid queue name (1-64 of a-z A-Z 0-9 _ : # / @ -)",
                )
            )
        if queue.parent not in by_path:
            errors.append(ConfigError(queue.path, "parent", f"no queue {queue.parent!r}"))
        elif _in_cycle(queue, by_path, ending):
            errors.append(ConfigError(queue.path, "parent", "queue parents form a cycle"))
        elif queue.path != f"{queue.parent}.{queue.name}":
            errors.append(ConfigError(queue.path, "path", f"must be {queue.parent}.{queue.name}"))
    return errors


def _case_clash_errors(queues: Iterable[QueueConfig]) -> list[ConfigError]:
    """Siblings whose names differ only in case: YuniKorn lower-cases queue names, so to it they
    are one queue (its validator refuses them); the error names both spellings."""
    errors: list[ConfigError] = []
    first_spelling: dict[tuple[str | None, str], QueueConfig] = {}
    for queue in queues:
        if not isinstance(queue.name, str):
            continue
        key = (queue.parent.lower() if queue.parent else None, queue.name.lower())
        earlier = first_spelling.setdefault(key, queue)
        if earlier is not queue and earlier.name != queue.name:
            errors.append(
                ConfigError(
                    queue.path,
                    "name",
                    f"{queue.name!r} and {earlier.name!r} under {queue.parent} differ only in "
                    "case; YuniKorn compares queue names case-insensitively, so they would be one "
                    "queue",
                )
            )
    return errors


def _in_cycle(
    queue: QueueConfig, by_path: dict[str, QueueConfig], ending: set[str] | None = None
) -> bool:
    """True when following parents from ``queue`` never reaches a queue without one (or a
    parent that does not exist).

    ``ending`` collects the paths known to reach such an end; a walk stops at one, so checking
    every queue of a tree costs one step per queue rather than one per ancestor."""
    seen = {queue.path}
    parent = queue.parent
    while parent is not None:
        if ending is not None and parent in ending:
            break
        if parent in seen:
            return True
        seen.add(parent)
        following = by_path.get(parent)
        if following is None:
            break
        parent = following.parent
    if ending is not None:
        if by_path.get(queue.path) is not queue:  # a duplicate path: others walk the kept one
            seen.discard(queue.path)
        ending.update(seen)
    return False


def property_errors(queue: QueueConfig) -> list[ConfigError]:
    """Properties that cannot be stored (not text, too long, NUL or surrogates) and invalid
    values of the recognised ones (policy, delays) of one queue."""
    errors: list[ConfigError] = []
    for key, value in queue.properties.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            name = shown(key) if isinstance(key, str) else type(key).__name__
            errors.append(ConfigError(queue.path, f"properties.{name}", "must be a string"))
            continue
        for what, text in (("name", key), ("value", value)):
            problem = text_problem(text)
            if problem is None and len(text) > PROPERTY_MAX_LENGTH:
                problem = f"must be at most {PROPERTY_MAX_LENGTH} characters"
            if problem:
                errors.append(
                    ConfigError(queue.path, f"properties.{shown(key)}", f"the {what} {problem}")
                )
    policy = queue.properties.get(PROPERTY_POLICY)
    if isinstance(policy, str) and policy.strip().lower() not in PREEMPTION_POLICIES:
        errors.append(
            ConfigError(
                queue.path,
                f"properties.{PROPERTY_POLICY}",
                f"{policy!r} is not one of {', '.join(PREEMPTION_POLICIES)}",
            )
        )
    for key in DURATION_PROPERTIES:
        value = queue.properties.get(key)
        if not isinstance(value, str):
            continue
        try:
            nanoseconds = parse_go_duration(value, field=key)
        except DurationError as exc:
            errors.append(ConfigError(queue.path, f"properties.{key}", exc.message))
            continue
        # YuniKorn refuses a delay <= 0 and falls back to its default; 0 is how a queue turns
        # quota preemption off, so only that one may be 0.
        if nanoseconds < 0:
            errors.append(
                ConfigError(queue.path, f"properties.{key}", f"{value!r} must not be negative")
            )
        elif nanoseconds == 0 and key != PROPERTY_QUOTA_DELAY:
            errors.append(
                ConfigError(queue.path, f"properties.{key}", f"{value!r}: must be more than 0s")
            )
    return errors


def _resource_value_errors(queue: QueueConfig) -> list[ConfigError]:
    """Resource names and values that are not storable names and quantities >= 0."""
    errors: list[ConfigError] = []
    for kind in ("guaranteed", "max"):
        for name, value in getattr(queue, kind).items():
            if type(value) is int and value >= 0 and _good_resource_name(name):
                continue  # the common case, decided without building any message
            if not isinstance(name, str) or not name:
                errors.append(ConfigError(queue.path, kind, "resource names must be strings"))
            elif problem := text_problem(name):
                errors.append(
                    ConfigError(queue.path, f"{kind}.{shown(name)}", f"the name {problem}")
                )
            elif len(name) > RESOURCE_NAME_MAX_LENGTH:
                errors.append(
                    ConfigError(
                        queue.path,
                        kind,
                        f"resource names must be at most {RESOURCE_NAME_MAX_LENGTH} characters",
                    )
                )
            elif not _is_int(value) or value < 0:
                errors.append(ConfigError(queue.path, f"{kind}.{name}", "must be a quantity >= 0"))
    return errors


@lru_cache(maxsize=1024)
def _good_resource_name(name: object) -> bool:
    """A resource name ``_resource_value_errors`` accepts (a tree names the same few types on
    every queue, so each is checked once)."""
    return (
        type(name) is str
        and bool(name)
        and text_problem(name) is None
        and len(name) <= RESOURCE_NAME_MAX_LENGTH
    )


def _queue_resource_errors(
    hierarchy: Hierarchy, queue: QueueConfig, passed_up: Mapping[str, Mapping[str, int]]
) -> list[ConfigError]:
    """Rules between the queue's own values, its parent and its children (SPEC 3.2)."""
    errors: list[ConfigError] = []
    if queue.path == ROOT:
        if queue.guaranteed or queue.max:
            errors.append(ConfigError(ROOT, "resources", "the root queue carries no resources"))
        return errors

    # One message per type, at the max (the value an admin lowers), naming both values: the
    # quota-delay rule below would otherwise report the same pair a second time.
    for name, value in queue.guaranteed.items():
        if name in queue.max and queue.max[name] < value:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"max {name} {_fmt(name, queue.max[name])} is below guaranteed "
                    f"{_fmt(name, value)}",
                )
            )

    assert queue.parent is not None
    parent_max = hierarchy._effective_max(queue.parent)
    for name, value in queue.max.items():
        if name in parent_max and value > parent_max[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"max {_fmt(name, value)} is above the parent's effective max "
                    f"{_fmt(name, parent_max[name])}",
                )
            )

    errors.extend(_children_guarantee_errors(hierarchy, queue, passed_up))

    delay = hierarchy.effective_quota_delay(queue.path)
    if isinstance(delay.value, int) and delay.value > 0:
        for name, value in queue.guaranteed.items():
            if queue.max.get(name) == value:  # below it is reported above
                errors.append(
                    ConfigError(
                        queue.path,
                        f"max.{name}",
                        f"max must be greater than guaranteed ({_fmt(name, value)}) while "
                        f"quota.preemption.delay is set (from {delay.source})",
                    )
                )
    return errors


def _children_guarantee_errors(
    hierarchy: Hierarchy, queue: QueueConfig, passed_up: Mapping[str, Mapping[str, int]]
) -> list[ConfigError]:
    """The children's guarantees (each child's own, or what a child that sets none passes up
    from below) must fit this queue's guarantee, where it sets that type, and its effective
    max."""
    children = hierarchy.children(queue.path)
    if not children:
        return []
    total = _sum(passed_up[child] for child in children)
    through = [child for child in children if passed_up[child] and not any(
        hierarchy.queues[child].guaranteed.values())]  # fmt: skip
    origin = (
        f" (with the guarantees below {', '.join(through)}, which sets no guarantee of its own "
        "and so passes its children's up, as YuniKorn counts them)"
        if through
        else ""
    )
    errors = []
    own_max = hierarchy._effective_max(queue.path)
    for name, value in sorted(total.items()):
        if name in queue.guaranteed and value > queue.guaranteed[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"guaranteed.{name}",
                    f"children's guarantees add up to {_fmt(name, value)}, above this queue's "
                    f"guarantee {_fmt(name, queue.guaranteed[name])}{origin}",
                )
            )
        if name in own_max and value > own_max[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"children's guarantees add up to {_fmt(name, value)}, above this queue's "
                    f"effective max {_fmt(name, own_max[name])}{origin}",
                )
            )
    return errors


def _fmt(name: str, value: int) -> str:
    return resources.format_quantity(value, resource=name)
