"""Frozen inputs and outputs of the preemption policies (SPEC 4.0).

Every policy is a pure function of a ``ClusterState``, the thing being decided (an ask, a job, a
quota change), ``Options`` and ``now``, and returns a ``Plan``. Nothing here reads a clock, a
database or a setting; the services and the scenario runner build these objects.

Resource values are canonical integers (``preemption.resources``). Allocations in state
``preempting`` (victims of an earlier run not yet gone) count as gone in every computation and are
never candidates; ``ClusterState.running`` lists only the live ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import cached_property
from itertools import chain
from typing import Any, NamedTuple

from preemption.config import PartitionConfig, PartitionSettings
from preemption.hierarchy import Hierarchy

#: ``created_at`` of an allocation or ask that does not say (the scenario format's default).
DEFAULT_CREATED_AT = datetime(2026, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """Whole microseconds since the epoch: an exact integer for sort keys, so "newest first" is
    simply ``-micros(created_at)`` and ties are decided exactly."""
    return (moment - _EPOCH) // _MICROSECOND


class AllocationState(StrEnum):
    RUNNING = "running"
    PREEMPTING = "preempting"
    RELEASED = "released"


class AskState(StrEnum):
    PENDING = "pending"
    RESERVED = "reserved"
    ALLOCATED = "allocated"
    REMOVED = "removed"


class PreemptionPolicy(StrEnum):
    """An ask's own Kubernetes-style preemption policy."""

    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"


class QoS(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


class Outcome(StrEnum):
    NOT_TRIGGERED = "not_triggered"  # the policy's trigger conditions do not hold
    COMPLETE = "complete"  # the goal is met
    BEST_EFFORT = "best_effort"  # quota only: short by at most miss_percent on every type
    SHORT = "short"  # quota only: some victims, more remains
    DOES_NOT_HELP = "does_not_help"  # triggered, but no acceptable victim set


class Reason(StrEnum):
    """Why a candidate was or was not chosen (SCENARIOS.md "Reason codes")."""

    VICTIM = "victim"
    LAW1_OPTED_OUT = "law1_opted_out"
    LAW2_BELOW_GUARANTEE = "law2_below_guarantee"
    LAW3_SAME_APPLICATION = "law3_same_application"
    LAW5_QUEUE_WITHIN_GUARANTEE = "law5_queue_within_guarantee"
    LAW6_HIGHER_PRIORITY = "law6_higher_priority"
    OUTSIDE_FENCE = "outside_fence"
    QUEUE_PREEMPTION_DISABLED = "queue_preemption_disabled"
    DAEMONSET_EXCLUDED = "daemonset_excluded"
    NO_SHARED_RESOURCE = "no_shared_resource"
    TARGET_MET = "target_met"
    NOT_ON_NODE = "not_on_node"
    DEVIATION_TOO_LARGE = "deviation_too_large"
    TOO_MANY_VICTIMS = "too_many_victims"
    NOT_NEEDED_AFTER_REPRIEVE = "not_needed_after_reprieve"
    BUDGET_VIOLATION = "budget_violation"


class PolicyName(StrEnum):
    QUOTA = "quota"
    INTER_QUEUE = "inter_queue"
    REQUIRED_NODE = "required_node"
    PRIORITY = "priority"
    JOB = "job"


@dataclass(frozen=True)
class Node:
    name: str
    capacity: Mapping[str, int]
    schedulable: bool = True


@dataclass(frozen=True)
class Allocation:
    """A running task (pod). ``queue`` is the leaf queue of its application."""

    id: str
    app: str
    queue: str
    node: str
    resources: Mapping[str, int]
    priority: int = 0
    allow_preemption: bool = True
    originator: bool = False
    required_node: str | None = None
    job: str | None = None
    qos: QoS | None = None
    pdb: str | None = None
    created_at: datetime = DEFAULT_CREATED_AT
    state: AllocationState = AllocationState.RUNNING

    @property
    def is_running(self) -> bool:
        return self.state == AllocationState.RUNNING


@dataclass(frozen=True)
class Ask:
    """A pending request. ``node`` is the node already reserved for it (4.2) or nominated to it
    (4.4)."""

    id: str
    app: str
    queue: str
    resources: Mapping[str, int]
    priority: int = 0
    allow_preemption: bool = True
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    required_node: str | None = None
    job: str | None = None
    created_at: datetime = DEFAULT_CREATED_AT
    state: AskState = AskState.PENDING
    node: str | None = None


@dataclass(frozen=True)
class Budget:
    """A disruption budget (Kubernetes PDB): how many of its pods may still be disrupted."""

    name: str
    allowed_disruptions: int


@dataclass(frozen=True)
class Options:
    """Tunables of the policies; the defaults are the product's."""

    victim_strategy: tuple[str, ...] = ("single", "multiple")
    deviation_percent: int = 10
    max_victims: int = 5
    soft_eviction: bool = False


class QueueUsage(NamedTuple):
    """Resources used in one queue by running allocations a state does not list."""

    queue: str
    resources: Mapping[str, int]


@dataclass(frozen=True)
class ClusterState:
    """Everything a policy may look at: the partition config, the cluster and runs in progress.

    Derived views (the hierarchy, live allocations, usage per queue) are computed once on first
    use and cached; the state itself never changes.

    ``usage_elsewhere`` is for a state narrowed to what one plan reads (the services' quota
    plans list only the allocations of the queue's subtree): the running usage of allocations
    it does not list, summed per queue, counted in ``usage`` as if they were listed. Empty in a
    full state.
    """

    config: PartitionConfig
    nodes: tuple[Node, ...] = ()
    allocations: tuple[Allocation, ...] = ()
    asks: tuple[Ask, ...] = ()
    budgets: tuple[Budget, ...] = ()
    running_runs: frozenset[str] = frozenset()
    usage_elsewhere: tuple[QueueUsage, ...] = ()

    @property
    def settings(self) -> PartitionSettings:
        return self.config.settings

    @cached_property
    def hierarchy(self) -> Hierarchy:
        return Hierarchy(self.config)

    @cached_property
    def running(self) -> tuple[Allocation, ...]:
        """Live allocations (``preempting`` ones count as gone)."""
        return tuple(allocation for allocation in self.allocations if allocation.is_running)

    @cached_property
    def usage(self) -> dict[str, dict[str, int]]:
        """Usage of every queue (its own allocations and all its descendants'), by path."""
        return self.hierarchy.usage_by_queue(chain(self.running, self.usage_elsewhere))

    @cached_property
    def nodes_by_name(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}

    @cached_property
    def asks_by_id(self) -> dict[str, Ask]:
        return {ask.id: ask for ask in self.asks}

    @cached_property
    def budgets_by_name(self) -> dict[str, Budget]:
        return {budget.name: budget for budget in self.budgets}

    def ask(self, ask_id: str) -> Ask:
        try:
            return self.asks_by_id[ask_id]
        except KeyError:
            raise KeyError(f"no ask {ask_id!r}") from None


class Explanation(NamedTuple):
    """Why one candidate was (``accepted``) or was not chosen, citing a ``Reason``.

    A named tuple rather than a dataclass: a plan explains every allocation in scope (100,000 in
    the benchmark), and tuples are several times cheaper to create.
    """

    candidate: str
    accepted: bool
    reason: Reason

    def to_json(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "accepted": self.accepted, "reason": str(self.reason)}


@dataclass(frozen=True)
class Plan:
    """A policy's decision (SPEC 4.0).

    ``victims`` are in the order taken; ``explanations`` hold one entry per running allocation in
    the policy's scope, sorted by candidate id. ``targets`` (per leaf) and ``freed`` are set by the
    quota policy, ``nominations`` (ask id -> node) by the job policy, ``node`` by the policies that
    reserve or nominate one.
    """

    policy: PolicyName
    outcome: Outcome
    victims: tuple[str, ...] = ()
    node: str | None = None
    nominations: Mapping[str, str] = field(default_factory=dict)
    targets: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    freed: Mapping[str, int] = field(default_factory=dict)
    explanations: tuple[Explanation, ...] = ()

    def explanation_for(self, candidate: str) -> Explanation | None:
        for explanation in self.explanations:
            if explanation.candidate == candidate:
                return explanation
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": str(self.policy),
            "victims": list(self.victims),
            "outcome": str(self.outcome),
            "node": self.node,
            "nominations": dict(sorted(self.nominations.items())),
            "targets": {
                path: dict(sorted(amounts.items()))
                for path, amounts in sorted(self.targets.items())
            },
            "freed": dict(sorted(self.freed.items())),
            "explanations": [explanation.to_json() for explanation in self.explanations],
        }


def explanations_from(
    reasons: Mapping[str, Reason], victims: tuple[str, ...]
) -> tuple[Explanation, ...]:
    """Build the sorted explanation list from a candidate -> reason map (victims accepted)."""
    chosen = set(victims)
    return tuple(
        Explanation(candidate, candidate in chosen, reasons[candidate])
        for candidate in sorted(reasons)
    )


@dataclass(frozen=True)
class ConfigChange:
    """One saved config change of a ``quota_timeline`` (SCENARIOS.md): it sets only what it
    names. ``properties`` entries are merged into the queue's (None deletes one); ``partition``
    holds partition settings to replace."""

    at: datetime
    queue: str | None = None
    max: Mapping[str, int] | None = None
    guaranteed: Mapping[str, int] | None = None
    properties: Mapping[str, str | None] | None = None
    partition: Mapping[str, Any] | None = None

    def apply(self, config: PartitionConfig) -> PartitionConfig:
        if self.partition:
            config = replace(config, settings=replace(config.settings, **self.partition))
        if self.queue is None:
            return config
        queue = config.queue(self.queue)
        if queue is None:
            raise KeyError(f"no queue {self.queue!r}")
        changes: dict[str, Any] = {}
        if self.max is not None:
            changes["max"] = dict(self.max)
        if self.guaranteed is not None:
            changes["guaranteed"] = dict(self.guaranteed)
        if self.properties is not None:
            merged = dict(queue.properties)
            for key, value in self.properties.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            changes["properties"] = merged
        return config.with_queue(replace(queue, **changes))


@dataclass(frozen=True)
class TimelineRun:
    """A quota preemption run that started during a replayed timeline."""

    queue: str
    at: datetime
    victims: tuple[str, ...]
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "victims": list(self.victims),
            "outcome": str(self.outcome),
        }
