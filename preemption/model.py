"""Frozen inputs and outputs of the preemption policies (SPEC 4.0).

Every policy is a pure function of a ``ClusterState``, the thing being decided (an ask, a job, a
quota change), ``Options`` and ``now``, and returns a ``Plan``. Nothing here reads a clock, a
database or a setting; the services and the scenario runner build these objects.

Resource values are canonical integers (``preemption.resources``). Allocations in state
``preempting`` (victims of an earlier run not yet gone) count as gone in every computation and are
never candidates; ``ClusterState.running`` lists only the live ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import cached_property
from itertools import chain
from types import MappingProxyType
from typing import Any, NamedTuple, overload

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
    NODE_INELIGIBLE = "node_ineligible"


class PolicyName(StrEnum):
    QUOTA = "quota"
    INTER_QUEUE = "inter_queue"
    REQUIRED_NODE = "required_node"
    PRIORITY = "priority"
    JOB = "job"


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"


class SelectorOperator(StrEnum):
    """Operators of a required node affinity expression (Kubernetes' ``NodeSelectorOperator``)."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True)
class Taint:
    """A node taint (SPEC 3.3); an omitted value is empty."""

    key: str
    effect: TaintEffect
    value: str = ""


@dataclass(frozen=True)
class Toleration:
    """An ask's toleration (SPEC 3.3); an omitted key, value or effect is empty (an empty
    effect tolerates every effect, an empty key with ``Exists`` every key)."""

    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: TaintEffect | None = None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One expression of a required node affinity term (SPEC 3.3)."""

    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()


#: Required node affinity: terms (ORed), each a tuple of expressions (ANDed).
NodeAffinity = tuple[tuple[NodeSelectorRequirement, ...], ...]


@dataclass(frozen=True)
class Node:
    name: str
    capacity: Mapping[str, int]
    schedulable: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


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
    #: Where it may run (SPEC 3.3); each defaults to no constraint (``preemption.eligibility``).
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: NodeAffinity = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class Budget:
    """A disruption budget (Kubernetes PDB): how many of its pods may still be disrupted."""

    name: str
    allowed_disruptions: int


@dataclass(frozen=True)
class Options:
    """Tunables of the policies; the defaults are the product's. The live loop plans with a
    partition's own (``Options.of(settings)``), which admins set as partition settings."""

    victim_strategy: tuple[str, ...] = ("single", "multiple")
    deviation_percent: int = 10
    max_victims: int = 5
    soft_eviction: bool = False

    @classmethod
    def of(cls, settings: PartitionSettings) -> Options:
        """The options a partition's settings give."""
        return cls(
            victim_strategy=settings.victim_strategy,
            deviation_percent=settings.deviation_percent,
            max_victims=settings.max_victims,
            soft_eviction=settings.soft_eviction,
        )


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


class Explanations(Sequence[Explanation]):
    """A plan's explanations, sorted by candidate id: a read-only sequence of ``Explanation``
    kept as the policy's candidate -> reason map and its victims, each ``Explanation`` made
    when it is read.

    A plan explains every allocation in scope (100,000 in the benchmark). Stored as that many
    named tuples they were the largest part of a plan's garbage collection (issue 14): each
    survives the plan and is scanned by every collection, and a named tuple holding an enum
    member is never untracked. Here they are one dict and one set; the ids are sorted on the
    first read. Compares equal to any sequence of the same explanations (``()`` when empty).
    """

    __slots__ = ("_accepted", "_ids", "_reasons")

    def __init__(self, reasons: Mapping[str, Reason], victims: Iterable[str] = ()) -> None:
        self._reasons = reasons
        self._accepted = frozenset(victim for victim in victims if victim in reasons)
        self._ids: tuple[str, ...] | None = None

    @property
    def reasons(self) -> Mapping[str, Reason]:
        """Candidate -> reason, read-only (in the policy's order, not sorted)."""
        return MappingProxyType(self._reasons)

    @property
    def accepted(self) -> frozenset[str]:
        """The accepted candidates (the plan's victims)."""
        return self._accepted

    @property
    def candidates(self) -> tuple[str, ...]:
        """Every explained candidate, sorted by id."""
        return self._sorted()

    def get(self, candidate: str) -> Explanation | None:
        reason = self._reasons.get(candidate)
        if reason is None:
            return None
        return Explanation(candidate, candidate in self._accepted, reason)

    def _sorted(self) -> tuple[str, ...]:
        if self._ids is None:
            self._ids = tuple(sorted(self._reasons))
        return self._ids

    def __len__(self) -> int:
        return len(self._reasons)

    def __iter__(self) -> Iterator[Explanation]:
        reasons, accepted = self._reasons, self._accepted
        for candidate in self._sorted():
            yield Explanation(candidate, candidate in accepted, reasons[candidate])

    @overload
    def __getitem__(self, index: int) -> Explanation: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Explanation, ...]: ...

    def __getitem__(self, index: int | slice) -> Explanation | tuple[Explanation, ...]:
        reasons, accepted = self._reasons, self._accepted
        if isinstance(index, slice):
            return tuple(
                Explanation(candidate, candidate in accepted, reasons[candidate])
                for candidate in self._sorted()[index]
            )
        candidate = self._sorted()[index]
        return Explanation(candidate, candidate in accepted, reasons[candidate])

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, tuple) or len(value) != 3:
            return False
        return self.get(value[0]) == value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Explanations):
            return self._reasons == other._reasons and self._accepted == other._accepted
        if isinstance(other, tuple | list):
            return len(other) == len(self) and all(
                mine == theirs for mine, theirs in zip(self, other, strict=True)
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Explanations({list(self)!r})"

    def __reduce__(self) -> tuple[type[Explanations], tuple[dict[str, Reason], list[str]]]:
        return (type(self), (dict(self._reasons), sorted(self._accepted)))


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
    explanations: Sequence[Explanation] = ()

    def explanation_for(self, candidate: str) -> Explanation | None:
        if isinstance(self.explanations, Explanations):
            return self.explanations.get(candidate)
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


def explanations_from(reasons: Mapping[str, Reason], victims: Iterable[str]) -> Explanations:
    """The sorted explanations of a candidate -> reason map (victims accepted). The plan keeps
    ``reasons`` itself: the caller must not change it afterwards."""
    return Explanations(reasons, victims)


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
