"""The tree of a structurally valid config and the values its queues get from it.

``Hierarchy`` answers the questions the UI, the API and the policies ask of a valid tree:
effective max, inherited preemption policy and quota delay (with the queue each value comes
from), leaves and ancestors, and the guarantees the children pass up."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from preemption import resources
from preemption.config import (
    PREEMPTION_POLICIES,
    PROPERTY_DELAY,
    PROPERTY_POLICY,
    PROPERTY_QUOTA_DELAY,
    ROOT,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
)
from preemption.durations import DurationError, format_duration, parse_duration


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
        passed[queue.path] = sum_amounts(passed[child] for child in hierarchy.children(queue.path))
    return passed


def sum_amounts(amounts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """``resources.add`` of all of ``amounts`` (types sorted, as it gives them), summed in
    place rather than one new set per term: a parent may have hundreds of children."""
    total: dict[str, int] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, 0) + value
    return dict(sorted(total.items()))
