"""Priority preemption, Kubernetes style (SPEC 4.4, seed 003).

A pending ask A that fits no node may preempt running allocations of strictly lower priority on
*one* node, chosen so that the preemption disturbs as little as possible. A then gets that node as
its nominated node (``Plan.node``); it is not guaranteed to land there (seed 003, examples 1-4).

Steps:

1. **Trigger**: A still waits (``pending`` or ``reserved``: an allocated or removed ask never
   triggers a policy, as in 4.2, 4.3 and 4.5, and kube-scheduler only preempts for unbound
   pods), A's ``preemption_policy`` is ``PreemptLowerPriority`` and A fits no schedulable
   node. Room on a node is its capacity minus its live allocations (``preempting`` ones count as
   gone, SPEC 4.0) minus the resources of the *other* waiting asks (``pending`` or ``reserved``)
   of equal or higher priority nominated to it (seed 003, example 1). Otherwise
   ``not_triggered``.
2. **Per schedulable node A may use** (by name; SPEC 3.3: lower-priority tasks on the others
   are ``node_ineligible``, and A fitting there does not count for the trigger either): the
   candidates are its running allocations with priority strictly lower than A
   (``law6_higher_priority`` otherwise). The node is possible only if A fits once all of them
   are gone.
3. **Budgets**: walking the candidates from the most important down, each uses one allowed
   disruption of its budget; one that finds none left is budget-violating.
4. **Reprieve**: start with all candidates removed; put them back one by one, budget-violating
   ones first, then the rest (each group most important first), keeping each that leaves room for
   A (``not_needed_after_reprieve``). The rest are the node's victims, in that order.
5. **Node choice**: fewest budget-violating victims; lowest highest-victim priority; smallest sum
   of victim priorities, each offset by 2^31 (kube-scheduler's ``pickOneNodeForPreemption``);
   fewest victims; latest earliest start among the highest-priority victims; node name. Outcome
   ``complete`` with that node, or ``does_not_help`` when no node is possible.

Explanations (judgement calls, SPEC 4.0 leaves the scope of this policy as "the node"):

- every running allocation of the state gets an entry, so that an admin can see why a pod
  elsewhere was not taken: on the chosen node the reasons of its pass; elsewhere
  ``law6_higher_priority`` or ``not_on_node`` (the node was not chosen, is not schedulable, or -
  when no node is possible - preempting there would not make room for A). With no possible node
  this is what "the first node by name" gives (SPEC 4.0): a node that is not possible has no
  victims and no reprieve, only ``law6_higher_priority`` and ``not_on_node``;
- a victim that is budget-violating is reported as ``budget_violation`` (still ``accepted``): it
  is taken although its disruption budget has no disruption left, which an auditor must see;
  other victims are ``victim``;
- ``not_triggered`` plans carry no explanations (nothing was evaluated).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from preemption.eligibility import may_use
from preemption.model import (
    Allocation,
    Ask,
    AskState,
    ClusterState,
    Node,
    Options,
    Outcome,
    Plan,
    PolicyName,
    PreemptionPolicy,
    QoS,
    Reason,
    explanations_from,
    micros,
)

__all__ = ["PRIORITY_OFFSET", "plan_priority"]


#: Rank of a QoS class in the importance order (SPEC 4.4): lower is more important.
#: An allocation without a QoS class counts as Burstable.
_QOS_RANK: dict[QoS | None, int] = {
    QoS.GUARANTEED: 0,
    QoS.BURSTABLE: 1,
    None: 1,
    QoS.BEST_EFFORT: 2,
}


#: Ask states that still wait to run, so that a node named by such an ask holds room for it.
#: ``reserved`` is waiting too (as in 4.2, 4.3 and 4.5); ``allocated`` asks run as allocations
#: and ``removed`` ones are gone, so neither holds room.
_WAITING = frozenset({AskState.PENDING, AskState.RESERVED})


#: Added to every victim priority in the node-choice sum (SPEC 4.4, changed 2026-11-24), as
#: kube-scheduler does (``int64(p) + int64(math.MaxInt32) + 1``): with priorities in int32 every
#: offset priority is >= 0, so an extra victim never lowers a node's sum. The raw sum could: once
#: the highest victim priority tied, extra priority-0 or negative victims made a sum smaller.
PRIORITY_OFFSET = 2**31


@dataclass(frozen=True)
class _NodePass:
    """The outcome of evaluating one possible node: its victims (in the order taken) and the
    reason of each of its running allocations."""

    node: str
    victims: tuple[Allocation, ...]
    violating: frozenset[str]
    reasons: Mapping[str, Reason]


def plan_priority(state: ClusterState, ask_id: str, now: datetime, options: Options) -> Plan:
    """Plan Kubernetes-style priority preemption for the pending ask ``ask_id`` (SPEC 4.4).

    ``now`` and ``options`` are not used: this policy has no delay and no tunables.
    """
    del now, options  # part of the common policy signature (SPEC 4.0)
    ask = state.ask(ask_id)
    if ask.state not in _WAITING:
        # Already running (allocated) or gone (removed): nothing to make room for.
        return Plan(PolicyName.PRIORITY, Outcome.NOT_TRIGGERED)
    if ask.preemption_policy != PreemptionPolicy.PREEMPT_LOWER_PRIORITY:
        return Plan(PolicyName.PRIORITY, Outcome.NOT_TRIGGERED)

    demand = _demand(ask)
    # SPEC 4.4: only the schedulable nodes A may use (3.3) are looked at, for the trigger too.
    nodes = sorted(
        (node for node in state.nodes if node.schedulable and may_use(ask, node)),
        key=lambda n: n.name,
    )
    ineligible = frozenset(node.name for node in state.nodes if not may_use(ask, node))
    by_node = _allocations_by_node(state.running)
    reserved = _reserved_by_node(state.asks, ask)
    # Trigger (SPEC 4.4): A fits no schedulable node as it stands.
    if any(_fits(demand, _room(node, by_node[node.name], reserved[node.name])) for node in nodes):
        return Plan(PolicyName.PRIORITY, Outcome.NOT_TRIGGERED)

    passes = [
        result
        for node in nodes
        if (result := _evaluate_node(node, by_node[node.name], reserved[node.name], ask, state))
        is not None
    ]
    if not passes:
        reasons = _reasons_elsewhere(state.running, ask, ineligible)
        return Plan(
            PolicyName.PRIORITY,
            Outcome.DOES_NOT_HELP,
            explanations=explanations_from(reasons, ()),
        )

    chosen = min(passes, key=_node_choice_key)
    victims = tuple(allocation.id for allocation in chosen.victims)
    reasons = {**_reasons_elsewhere(state.running, ask, ineligible), **chosen.reasons}
    return Plan(
        PolicyName.PRIORITY,
        Outcome.COMPLETE,
        victims=victims,
        node=chosen.node,
        explanations=explanations_from(reasons, victims),
    )


# --------------------------------------------------------------------------------------------
# Room on a node
# --------------------------------------------------------------------------------------------


def _demand(ask: Ask) -> dict[str, int]:
    """The types A actually requests. A listed 0 means the same as a missing type (SPEC 3.1:
    missing from a task means 0), so it never makes A not fit, even on an overcommitted node."""
    return {name: value for name, value in ask.resources.items() if value > 0}


def _allocations_by_node(running: Iterable[Allocation]) -> defaultdict[str, list[Allocation]]:
    by_node: defaultdict[str, list[Allocation]] = defaultdict(list)
    for allocation in running:
        by_node[allocation.node].append(allocation)
    return by_node


def _reserved_by_node(asks: Iterable[Ask], ask: Ask) -> defaultdict[str, dict[str, int]]:
    """Resources set aside on each node for the *other* waiting asks (pending or reserved)
    nominated there with priority at least A's (SPEC 4.4 "Room"; seed 003, example 1: pod D does
    not take the space freed for pod C). kube-scheduler likewise counts every unbound pod
    nominated to the node with priority >= A's. Lower-priority nominations are not set aside
    (seed 003, example 4: pod F takes node 1 although pod C was nominated there)."""
    reserved: defaultdict[str, dict[str, int]] = defaultdict(dict)
    for other in asks:
        if (
            other.id == ask.id
            or other.state not in _WAITING
            or other.node is None
            or other.priority < ask.priority
        ):
            continue
        room = reserved[other.node]
        for name, value in other.resources.items():
            room[name] = room.get(name, 0) + value
    return reserved


def _room(
    node: Node, allocations: Iterable[Allocation], reserved: Mapping[str, int]
) -> dict[str, int]:
    """Free room on ``node``: capacity (a missing type is 0) minus ``allocations`` minus what is
    set aside for nominated asks. May be negative on an overcommitted node."""
    room = dict(node.capacity)
    for name, value in reserved.items():
        room[name] = room.get(name, 0) - value
    for allocation in allocations:
        _take(room, allocation.resources)
    return room


def _take(room: dict[str, int], resources: Mapping[str, int]) -> None:
    for name, value in resources.items():
        room[name] = room.get(name, 0) - value


def _give(room: dict[str, int], resources: Mapping[str, int]) -> None:
    for name, value in resources.items():
        room[name] = room.get(name, 0) + value


def _fits(demand: Mapping[str, int], room: Mapping[str, int]) -> bool:
    """SPEC 4.0: A fits when the room has at least A's amount of every type A requests."""
    return all(room.get(name, 0) >= value for name, value in demand.items())


def _fits_with(
    demand: Mapping[str, int], room: Mapping[str, int], extra: Mapping[str, int]
) -> bool:
    """Whether A still fits once ``extra`` is taken from ``room`` (without copying the room)."""
    return all(room.get(name, 0) - extra.get(name, 0) >= value for name, value in demand.items())


# --------------------------------------------------------------------------------------------
# One node's pass
# --------------------------------------------------------------------------------------------


def _importance_key(allocation: Allocation) -> tuple[int, int, datetime, str]:
    """Most important first (SPEC 4.4): higher priority; QoS Guaranteed, Burstable (or unset),
    BestEffort; older first; id."""
    return (-allocation.priority, _QOS_RANK[allocation.qos], allocation.created_at, allocation.id)


def _evaluate_node(
    node: Node,
    allocations: Sequence[Allocation],
    reserved: Mapping[str, int],
    ask: Ask,
    state: ClusterState,
) -> _NodePass | None:
    """Victims of ``node`` for ``ask``, or None when the node is not possible.

    Steps: split candidates (priority strictly below A) from the rest; check that A fits once all
    candidates are gone; mark budget-violating candidates; reprieve.
    """
    demand = _demand(ask)
    candidates = sorted(
        (allocation for allocation in allocations if allocation.priority < ask.priority),
        key=_importance_key,
    )
    kept = [allocation for allocation in allocations if allocation.priority >= ask.priority]
    room = _room(node, kept, reserved)
    if not _fits(demand, room):
        return None

    violating = _budget_violating(candidates, state)
    victims, reprieved = _reprieve(candidates, violating, demand, room)

    reasons: dict[str, Reason] = {a.id: Reason.LAW6_HIGHER_PRIORITY for a in kept}
    for allocation in reprieved:
        reasons[allocation.id] = Reason.NOT_NEEDED_AFTER_REPRIEVE
    for allocation in victims:
        # Judgement call: a victim taken although its budget is used up says so (still accepted).
        reasons[allocation.id] = (
            Reason.BUDGET_VIOLATION if allocation.id in violating else Reason.VICTIM
        )
    return _NodePass(
        node=node.name,
        victims=tuple(victims),
        violating=frozenset(a.id for a in victims if a.id in violating),
        reasons=reasons,
    )


def _budget_violating(candidates: Sequence[Allocation], state: ClusterState) -> frozenset[str]:
    """Ids of the candidates that find their budget used up (SPEC 4.4 "Budgets").

    ``candidates`` are in importance order, so the more important pods use the allowed
    disruptions first. Budgets are counted afresh for each node (each node is a separate
    what-if). An allocation without ``pdb``, or whose ``pdb`` names no known budget, is never
    budget-violating: there is no budget to respect (judgement call).
    """
    left: dict[str, int] = {}
    violating: set[str] = set()
    for allocation in candidates:
        if allocation.pdb is None:
            continue
        budget = state.budgets_by_name.get(allocation.pdb)
        if budget is None:
            continue
        remaining = left.get(budget.name, budget.allowed_disruptions)
        if remaining > 0:
            left[budget.name] = remaining - 1
        else:
            violating.add(allocation.id)
    return frozenset(violating)


def _reprieve(
    candidates: Sequence[Allocation],
    violating: frozenset[str],
    demand: Mapping[str, int],
    room: Mapping[str, int],
) -> tuple[list[Allocation], list[Allocation]]:
    """Put candidates back while A still fits (SPEC 4.4 "Minimal victims per node").

    ``room`` is the room with every candidate gone. Budget-violating candidates are tried first
    (so they are the likeliest to survive), then the others, each group in importance order.
    Returns (victims in the order taken, reprieved).
    """
    order = [a for a in candidates if a.id in violating] + [
        a for a in candidates if a.id not in violating
    ]
    free = dict(room)
    victims: list[Allocation] = []
    reprieved: list[Allocation] = []
    for allocation in order:
        if _fits_with(demand, free, allocation.resources):
            _take(free, allocation.resources)
            reprieved.append(allocation)
        else:
            victims.append(allocation)
    return victims, reprieved


# --------------------------------------------------------------------------------------------
# Node choice and explanations
# --------------------------------------------------------------------------------------------


def _node_choice_key(result: _NodePass) -> tuple[int, int, int, int, int, str]:
    """Smallest is best (SPEC 4.4 "Node choice"), criteria in this order: fewest budget-violating
    victims; lowest highest-victim priority; smallest sum of offset victim priorities; fewest
    victims; latest earliest start among the highest-priority victims; node name.

    A possible node always has at least one victim: A fits no node as it stands, so putting every
    candidate back cannot leave room for A.

    The sum offsets each priority by ``PRIORITY_OFFSET`` (2^31), exactly as kube-scheduler does,
    so that a node is not preferred for losing *more* low-priority pods: with the highest victim
    priority tied, the raw sum preferred victims {5, 0, 0, 0} (5) to {5, 1} (6), and three
    priority -5 victims (-15) to one (-5). Nodes with different victim counts can still tie on
    the sum, but only with victims near the lowest int32 priority (one at -2^31 adds 0); "fewest
    victims" decides then. Python integers do not overflow, so the sum is exact.
    """
    priorities = [victim.priority for victim in result.victims]
    highest = max(priorities)
    earliest = min(micros(v.created_at) for v in result.victims if v.priority == highest)
    return (
        len(result.violating),
        highest,
        sum(priority + PRIORITY_OFFSET for priority in priorities),
        len(result.victims),
        -earliest,  # the later the earliest start, the smaller (less work lost)
        result.node,
    )


def _reasons_elsewhere(
    running: Iterable[Allocation], ask: Ask, ineligible: frozenset[str]
) -> dict[str, Reason]:
    """Reasons for allocations outside the chosen node's pass: equal or higher priority is
    ``law6_higher_priority``; on a node A may not use (SPEC 3.3) ``node_ineligible`` (checked
    after the priority rule, SPEC 4.0); anything else could only have helped on a node that was
    not chosen (or is not schedulable), ``not_on_node``."""
    return {allocation.id: _reason_elsewhere(allocation, ask, ineligible) for allocation in running}


def _reason_elsewhere(allocation: Allocation, ask: Ask, ineligible: frozenset[str]) -> Reason:
    if allocation.priority >= ask.priority:
        return Reason.LAW6_HIGHER_PRIORITY
    if allocation.node in ineligible:
        return Reason.NODE_INELIGIBLE
    return Reason.NOT_ON_NODE
