"""Required-node preemption: the candidates on the required node by class (regular,
originator, opted out), the single victim or the multiple pass, and how far a size deviates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from preemption.explanations.notes import Note, Notes, only, plan_reasons, positive
from preemption.explanations.task_rules import daemonset_text, higher_priority_text, no_shared_text
from preemption.explanations.wording import amounts, ordinal, percent, when
from preemption.model import ClusterState, Options, Plan, Reason
from preemption.required_node import (
    CLASS_OPTED_OUT,
    CLASS_ORIGINATOR,
    DEFAULT_STRATEGIES,
    SINGLE,
    _candidate,
    _missing,
    _multiple,
    _single,
    deviation,
    requested_types,
)

_CLASS_NAMES = {0: "regular", CLASS_ORIGINATOR: "originator", CLASS_OPTED_OUT: "opted out"}


def describe_required_node(state: ClusterState, plan: Plan, ask_id: str, options: Options) -> Notes:
    """Static rules, then the strategy that decided (the first in ``victim_strategy`` that
    found victims, else the last): ``single`` says how each candidate compares as the one
    victim; ``multiple`` replays the walk with what the node still lacked."""
    ask = state.ask(ask_id)
    node_name = ask.required_node or ""
    reasons = plan_reasons(plan)
    demand = requested_types(ask.resources)
    node = state.nodes_by_name.get(node_name)
    capacity: Mapping[str, int] = node.capacity if node is not None else {}
    on_node = [allocation for allocation in state.running if allocation.node == node_name]
    missing = _missing(demand, capacity, on_node)
    notes: Notes = {}
    candidates = []
    for allocation in on_node:
        reason = reasons.get(allocation.id)
        if reason == Reason.DAEMONSET_EXCLUDED:
            notes[allocation.id] = Note(daemonset_text(allocation))
        elif reason == Reason.LAW6_HIGHER_PRIORITY:
            notes[allocation.id] = Note(
                higher_priority_text(allocation, ask.priority, "ask", equal_may_go=True)
            )
        elif reason == Reason.NO_SHARED_RESOURCE:
            notes[allocation.id] = Note(no_shared_text(allocation, demand))
        elif reason is not None:
            candidates.append(_candidate(allocation, demand, capacity))
    candidates.sort(key=lambda candidate: candidate.key)

    strategy = ""
    for strategy in options.victim_strategy or DEFAULT_STRATEGIES:
        found = (
            _single(candidates, demand, missing, options.deviation_percent)
            if strategy == SINGLE
            else _multiple(candidates, missing, options.max_victims)
        )
        if found.victims:
            break
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    scope = f"node {node_name}"
    remaining = dict(missing)
    last = ""
    for rank, candidate in enumerate(candidates, 1):
        allocation = candidate.allocation
        place = (
            f"{ordinal(rank)} in the order: class {_CLASS_NAMES[candidate.klass]}, priority "
            f"{allocation.priority}, created {when(allocation.created_at)}, size "
            f"{percent(candidate.key[3])} of {node_name}"
        )
        reason = reasons[allocation.id]
        before = positive(remaining)
        if strategy == SINGLE:
            notes[allocation.id] = _single_note(
                candidate, candidates, reason, plan, demand, missing, options, place, rank
            )
        elif reason == Reason.TOO_MANY_VICTIMS:
            notes[allocation.id] = Note(
                f"{place}; making room on {node_name} ({amounts(before)} lacking) would need "
                f"more than max_victims {options.max_victims} victims: nobody is preempted",
                rank,
            )
        elif reason == Reason.VICTIM:
            for name in remaining:
                remaining[name] -= allocation.resources.get(name, 0)
            after = positive(remaining)
            last = allocation.id
            notes[allocation.id] = Note(
                f"victim #{position[allocation.id]} (multiple strategy), {place}; {node_name} "
                f"lacked {amounts(before)} before it, {amounts(after)} after",
                rank,
                {scope: before},
                {scope: after},
            )
        elif not before and last:
            notes[allocation.id] = Note(
                f"not needed: the ask fits {node_name} after victim #{position[last]} ({last}); "
                f"{place}",
                rank,
                {scope: before},
                {scope: before},
            )
        else:
            notes[allocation.id] = Note(
                f"not needed: it frees none of what {node_name} still lacks ({amounts(before)}); "
                f"{place}",
                rank,
                {scope: before},
                {scope: before},
            )
    return notes


def _single_note(
    candidate: Any,
    candidates: Sequence[Any],
    reason: Reason,
    plan: Plan,
    demand: Mapping[str, int],
    missing: Mapping[str, int],
    options: Options,
    place: str,
    rank: int,
) -> Note:
    """A candidate of the ``single`` pass: the victim, or why it was not the one."""
    allocation = candidate.allocation
    node = allocation.node
    lacks = positive(missing)
    distance = deviation(allocation.resources, demand)
    limit = f"{options.deviation_percent}%"
    if reason == Reason.VICTIM:
        after = positive({n: v - allocation.resources.get(n, 0) for n, v in missing.items()})
        return Note(
            f"victim #1, the single victim: alone it frees what {node} lacks ({amounts(lacks)}) "
            f"and its size deviates {percent(distance)} from the ask's (limit {limit}); {place}",
            rank,
            {f"node {node}": lacks},
            {f"node {node}": after},
        )
    if reason == Reason.TARGET_MET:
        victim = next(c for c in candidates if plan.victims and c.id == plan.victims[0])
        return Note(
            f"not needed: its class {_CLASS_NAMES[candidate.klass]} comes after the single "
            f"victim's class {_CLASS_NAMES[victim.klass]}; {place}",
            rank,
        )
    if not all(allocation.resources.get(n, 0) >= need for n, need in missing.items()):
        return Note(
            f"as the single victim it is too small: {node} lacks {amounts(lacks)} and it frees "
            f"{amounts(only(allocation.resources, lacks))}; {place}",
            rank,
        )
    if distance * 100 > options.deviation_percent:
        return Note(
            f"as the single victim its size deviates {percent(distance)} from the ask's, above "
            f"deviation_percent {limit}; {place}",
            rank,
        )
    victim = plan.victims[0] if plan.victims else ""
    victim_distance = next(
        (deviation(c.allocation.resources, demand) for c in candidates if c.id == victim),
        Fraction(0),
    )
    return Note(
        f"the single victim {victim} deviates less from the ask ({percent(victim_distance)} "
        f"against {percent(distance)}) or comes first in the order; {place}",
        rank,
    )
