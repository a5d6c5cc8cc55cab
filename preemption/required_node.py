"""Required-node (DaemonSet) preemption (SPEC 4.3, seed 002 "simple preemptor").

A DaemonSet pod (an ask A with ``required_node`` N) can run on N only, so when N has no room the
scheduler cannot try other nodes: it frees room on N itself by preempting tasks running there.

1. **Trigger.** A does not fit N -- free = capacity minus the live allocations on N, a type missing
   from the capacity counts as 0 -- and A has been pending for at least the partition's
   ``daemonset_preemption_delay``. Otherwise the plan is ``not_triggered``.
2. **Candidates** are the live allocations on N. Rules, in order, first failure gives the reason:
   no ``required_node`` (``daemonset_excluded``), ``priority <= A.priority``
   (``law6_higher_priority``), shares a type with A (``no_shared_resource``). Queues, guarantees
   and fences do not apply.
3. **Order.** Classes regular, originator (owner/driver), opted out (``allow_preemption=false``, a
   last resort); within a class lower priority first, newest first, smaller size first, id.
4. **Strategies** from ``options.victim_strategy``, in order; a later one is tried only when the
   earlier finds nothing. ``single`` takes one task close to A's size, ``multiple`` walks the
   order taking tasks until A fits, within ``max_victims``.
5. **Outcome** ``complete`` with ``node`` N, or ``does_not_help`` (nobody is preempted).

Judgement calls where SPEC 4.3 is silent (each also commented where it is implemented):

- "A's types" are the types A requests a positive amount of. A ``gpu: 0`` entry asks for nothing,
  so it never blocks the fit, adds nothing to a size, and cannot divide a deviation by zero.
- The node's ``schedulable`` flag is ignored: DaemonSet pods tolerate cordoned nodes, and A has
  no other node to go to. A required node missing from the state has no capacity and no tasks.
- Only asks still waiting (state ``pending`` or ``reserved``) can trigger; an ask that is already
  allocated or removed is ``not_triggered``. ``preemption_policy`` is not part of 4.3's trigger.
- The originator of an application that opted out of preemption is in the opted-out class: its
  opt-out (law 1) is the stronger reason to spare it.
- ``multiple`` passes over a candidate that would not reduce what is still missing on N (it only
  shares a type A already has room for): preempting it would free nothing A needs. Such a task is
  ``target_met`` ("not needed") and does not count towards ``max_victims``, as in 4.1 and 4.2.
- ``multiple`` that cannot make A fit with ``max_victims`` victims -- even if removing every
  candidate would not be enough -- finds nothing, and every candidate is ``too_many_victims``.
- Reasons of the ``single`` pass: the victim is ``victim``; every other candidate of its class and
  of the classes before it (examined: too small to make room alone, too far from A's size, or
  farther than the victim) is ``deviation_too_large``; candidates of later classes were not
  needed, ``target_met``. When ``single`` finds nothing every candidate is
  ``deviation_too_large``.
- An empty ``victim_strategy`` list means the default order ``[single, multiple]``.
- ``node`` is N only when the outcome is ``complete``; ``not_triggered`` and ``does_not_help``
  plans have no node (nothing is reserved for A by this plan). A ``not_triggered`` plan has no
  explanations: no candidate was considered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction

from preemption.model import (
    Allocation,
    Ask,
    AskState,
    ClusterState,
    Options,
    Outcome,
    Plan,
    PolicyName,
    Reason,
    explanations_from,
    micros,
)
from preemption.resources import shares_type

__all__ = ["deviation", "plan_required_node", "size_on_node"]

SINGLE = "single"
MULTIPLE = "multiple"
DEFAULT_STRATEGIES: tuple[str, ...] = (SINGLE, MULTIPLE)

#: Victim classes in the order seed 002 takes them from (section "Pods classification").
CLASS_REGULAR = 0
CLASS_ORIGINATOR = 1
CLASS_OPTED_OUT = 2

_WAITING_STATES = frozenset({AskState.PENDING, AskState.RESERVED})

#: Sort key of a candidate: (class, priority, -created_at in microseconds, size, id).
OrderKey = tuple[int, int, int, Fraction, str]


@dataclass(frozen=True)
class _Candidate:
    """An allocation that passed the static rules, with what the strategies need of it."""

    allocation: Allocation
    klass: int
    key: OrderKey

    @property
    def id(self) -> str:
        return self.allocation.id


@dataclass(frozen=True)
class _Pass:
    """What one strategy found: its victims (empty = nothing) and a reason per candidate."""

    victims: tuple[str, ...]
    reasons: dict[str, Reason]


def plan_required_node(state: ClusterState, ask_id: str, now: datetime, options: Options) -> Plan:
    """Plan room on the required node of ask ``ask_id`` (SPEC 4.3).

    Steps:
    1. Check the trigger: A waits for N, has waited the DaemonSet delay and does not fit N.
    2. Give every live allocation on N its static reason, or make it a candidate.
    3. Sort the candidates once: class, priority, newest, size, id.
    4. Run the strategies in the configured order until one finds victims; explanations come
       from that pass, or from the last strategy when none finds any.
    """
    ask = state.ask(ask_id)
    node_name = ask.required_node
    if node_name is None or not _has_waited(ask, now, state.settings.daemonset_preemption_delay):
        return Plan(policy=PolicyName.REQUIRED_NODE, outcome=Outcome.NOT_TRIGGERED)

    demand = requested_types(ask.resources)
    node = state.nodes_by_name.get(node_name)
    # A node missing from the state has no capacity: nothing fits, and no task runs there.
    capacity: Mapping[str, int] = node.capacity if node is not None else {}
    on_node = [allocation for allocation in state.running if allocation.node == node_name]
    missing = _missing(demand, capacity, on_node)
    if _fits(missing):
        return Plan(policy=PolicyName.REQUIRED_NODE, outcome=Outcome.NOT_TRIGGERED)

    reasons: dict[str, Reason] = {}
    candidates: list[_Candidate] = []
    for allocation in on_node:
        reason = _static_reason(allocation, ask)
        if reason is None:
            candidates.append(_candidate(allocation, demand, capacity))
        else:
            reasons[allocation.id] = reason
    candidates.sort(key=lambda candidate: candidate.key)

    chosen = _run_strategies(candidates, demand, missing, options)
    reasons.update(chosen.reasons)
    outcome = Outcome.COMPLETE if chosen.victims else Outcome.DOES_NOT_HELP
    return Plan(
        policy=PolicyName.REQUIRED_NODE,
        outcome=outcome,
        victims=chosen.victims,
        node=node_name if chosen.victims else None,
        explanations=explanations_from(reasons, chosen.victims),
    )


# --------------------------------------------------------------------------------------------
# Trigger and room on the node
# --------------------------------------------------------------------------------------------


def _has_waited(ask: Ask, now: datetime, delay_seconds: int) -> bool:
    """Whether A is still waiting and has waited at least the DaemonSet delay (seed 002,
    "Reservation age check"; SPEC: "at least", so exactly the delay is enough)."""
    if ask.state not in _WAITING_STATES:
        return False
    return now - ask.created_at >= timedelta(seconds=delay_seconds)


def requested_types(resources: Mapping[str, int]) -> dict[str, int]:
    """A's types: the ones it asks a positive amount of (a 0 entry asks for nothing)."""
    return {name: value for name, value in sorted(resources.items()) if value > 0}


def _missing(
    demand: Mapping[str, int], capacity: Mapping[str, int], on_node: Iterable[Allocation]
) -> dict[str, int]:
    """Per type of A, how much more N must free before A fits: ``A[t] - free[t]``.

    Free is the capacity (a missing type is 0, SPEC 4.0) minus the live allocations on N;
    ``preempting`` ones are already gone. A value <= 0 means the type has room.
    """
    missing = {name: value - capacity.get(name, 0) for name, value in demand.items()}
    for allocation in on_node:
        for name in missing:
            missing[name] += allocation.resources.get(name, 0)
    return missing


def _fits(missing: Mapping[str, int]) -> bool:
    return all(value <= 0 for value in missing.values())


# --------------------------------------------------------------------------------------------
# Candidates and their order
# --------------------------------------------------------------------------------------------


def _static_reason(allocation: Allocation, ask: Ask) -> Reason | None:
    """The first candidate rule of SPEC 4.3 the allocation fails, or None if it passes all."""
    if allocation.required_node is not None:
        return Reason.DAEMONSET_EXCLUDED
    # Law 6 of seed 000 applied here too (SPEC 4.3, not in seed 002): equal priority may go.
    if allocation.priority > ask.priority:
        return Reason.LAW6_HIGHER_PRIORITY
    if not shares_type(allocation.resources, ask.resources):
        return Reason.NO_SHARED_RESOURCE
    return None


def victim_class(allocation: Allocation) -> int:
    """Seed 002's class: regular, then originator, then opted out (law 1, a last resort).

    An opted-out originator is in the opted-out class: the opt-out is the stronger protection.
    """
    if not allocation.allow_preemption:
        return CLASS_OPTED_OUT
    if allocation.originator:
        return CLASS_ORIGINATOR
    return CLASS_REGULAR


def size_on_node(
    resources: Mapping[str, int], demand: Mapping[str, int], capacity: Mapping[str, int]
) -> Fraction:
    """A task's size on N: the sum over A's types of ``v[t] / capacity(N)[t]``, exactly.

    A type N has no capacity of contributes 0 (there is nothing to be a share of).
    """
    total = Fraction(0)
    for name in demand:
        available = capacity.get(name, 0)
        if available > 0:
            total += Fraction(resources.get(name, 0), available)
    return total


def _candidate(
    allocation: Allocation, demand: Mapping[str, int], capacity: Mapping[str, int]
) -> _Candidate:
    # Newest first = created_at descending, as exact integer microseconds (no float rounding).
    age_key = -micros(allocation.created_at)
    klass = victim_class(allocation)
    size = size_on_node(allocation.resources, demand, capacity)
    return _Candidate(allocation, klass, (klass, allocation.priority, age_key, size, allocation.id))


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def _run_strategies(
    candidates: Sequence[_Candidate],
    demand: Mapping[str, int],
    missing: Mapping[str, int],
    options: Options,
) -> _Pass:
    """Try the strategies in order; the first that finds victims wins (seed 002: "later options
    act as fallback"). If none does, the last strategy's reasons explain the candidates."""
    strategies = options.victim_strategy or DEFAULT_STRATEGIES
    result = _Pass((), {})
    for strategy in strategies:
        if strategy == SINGLE:
            result = _single(candidates, demand, missing, options.deviation_percent)
        elif strategy == MULTIPLE:
            result = _multiple(candidates, missing, options.max_victims)
        else:
            raise ValueError(f"unknown victim strategy {strategy!r}")
        if result.victims:
            break
    return result


def deviation(resources: Mapping[str, int], demand: Mapping[str, int]) -> Fraction:
    """How far a task's size is from A's: ``max over A's types of |v[t] - A[t]| / A[t]``.

    ``demand`` holds positive amounts only (``requested_types``), so the division is safe.
    """
    return max(
        (Fraction(abs(resources.get(name, 0) - value), value) for name, value in demand.items()),
        default=Fraction(0),
    )


def _single(
    candidates: Sequence[_Candidate],
    demand: Mapping[str, int],
    missing: Mapping[str, int],
    deviation_percent: int,
) -> _Pass:
    """One victim whose removal alone lets A fit and whose deviation is within the limit.

    Classes are examined in order; the first class holding such a task gives the victim with
    the smallest deviation, ties by the candidate order. Candidates examined and not taken are
    ``deviation_too_large``; those of later classes were not needed (``target_met``).
    """
    limit = Fraction(deviation_percent, 100)
    best: tuple[Fraction, OrderKey, _Candidate] | None = None
    for candidate in candidates:  # sorted: classes come in order
        if best is not None and candidate.klass > best[2].klass:
            break
        resources = candidate.allocation.resources
        if not all(resources.get(name, 0) >= need for name, need in missing.items()):
            continue
        distance = deviation(resources, demand)
        if distance > limit:
            continue
        if best is None or (distance, candidate.key) < (best[0], best[1]):
            best = (distance, candidate.key, candidate)
    if best is None:
        return _Pass((), {c.id: Reason.DEVIATION_TOO_LARGE for c in candidates})
    victim = best[2]
    reasons: dict[str, Reason] = {}
    for candidate in candidates:
        if candidate.id == victim.id:
            reasons[candidate.id] = Reason.VICTIM
        elif candidate.klass > victim.klass:
            reasons[candidate.id] = Reason.TARGET_MET
        else:
            reasons[candidate.id] = Reason.DEVIATION_TOO_LARGE
    return _Pass((victim.id,), reasons)


def _multiple(
    candidates: Sequence[_Candidate], missing: Mapping[str, int], max_victims: int
) -> _Pass:
    """Walk the order taking victims until A fits N, at most ``max_victims`` of them.

    SPEC 4.3 keeps the class and priority order here (differs from seed 002's "resource-wise
    descending"). A candidate that would not reduce anything still missing is passed over
    (``target_met``): it would be preempted for nothing. Needing more than ``max_victims``
    victims -- or more than all candidates -- finds nothing (``too_many_victims``).
    """
    remaining = dict(missing)
    victims: list[str] = []
    for candidate in candidates:
        if _fits(remaining):
            break
        resources = candidate.allocation.resources
        if not any(resources.get(name, 0) > 0 for name, need in remaining.items() if need > 0):
            continue
        if len(victims) == max_victims:
            break
        victims.append(candidate.id)
        for name in remaining:
            remaining[name] -= resources.get(name, 0)
    if not _fits(remaining):
        return _Pass((), {c.id: Reason.TOO_MANY_VICTIMS for c in candidates})
    taken = set(victims)
    reasons = {c.id: Reason.VICTIM if c.id in taken else Reason.TARGET_MET for c in candidates}
    return _Pass(tuple(victims), reasons)
