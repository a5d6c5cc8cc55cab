"""Priority preemption: the replay of the reprieve walk on the chosen node, budget-violating tasks
first, each group most important first, with what the ask still lacked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from preemption.explanations.notes import Note, Notes, only, plan_reasons, positive
from preemption.explanations.task_rules import higher_priority_text
from preemption.explanations.wording import amounts, ordinal, when
from preemption.model import Allocation, ClusterState, Options, Plan, Reason
from preemption.priority import (
    _budget_violating,
    _demand,
    _importance_key,
    _reserved_by_node,
    _room,
)


def _importance(allocation: Allocation) -> str:
    qos = str(allocation.qos) if allocation.qos else "Burstable (unset)"
    return f"priority {allocation.priority}, QoS {qos}, created {when(allocation.created_at)}"


def describe_priority(state: ClusterState, plan: Plan, ask_id: str, options: Options) -> Notes:
    """Reasons off the chosen node (equal or higher priority, another node), then a replay of
    the chosen node's budgets and reprieve walk: what the ask still lacked on the node before
    and after each victim, and why each reprieved task could stay."""
    del options
    ask = state.ask(ask_id)
    reasons = plan_reasons(plan)
    demand = _demand(ask)
    notes: Notes = {}
    chosen = plan.node
    for allocation in state.running:
        reason = reasons.get(allocation.id)
        if reason is None or allocation.node == chosen:
            continue
        if reason == Reason.LAW6_HIGHER_PRIORITY:
            notes[allocation.id] = Note(
                higher_priority_text(allocation, ask.priority, "ask", equal_may_go=False)
            )
        elif chosen:
            notes[allocation.id] = Note(f"runs on {allocation.node}; the plan chose {chosen}")
        else:
            node = state.nodes_by_name.get(allocation.node)
            why = (
                f"{allocation.node} is not schedulable"
                if node is None or not node.schedulable
                else f"even with every lower-priority task gone the ask would not fit "
                f"{allocation.node}"
            )
            notes[allocation.id] = Note(
                f"no node can make room for the ask ({why}): nobody is preempted"
            )
    if not chosen:
        return notes

    node = state.nodes_by_name[chosen]
    reserved = _reserved_by_node(state.asks, ask)[chosen]
    on_node = [allocation for allocation in state.running if allocation.node == chosen]
    candidates = sorted(
        (allocation for allocation in on_node if allocation.priority < ask.priority),
        key=_importance_key,
    )
    kept = [allocation for allocation in on_node if allocation.priority >= ask.priority]
    for allocation in kept:
        notes[allocation.id] = Note(
            higher_priority_text(allocation, ask.priority, "ask", equal_may_go=False)
        )
    violating = _budget_violating(candidates, state)
    spent = _budget_spenders(candidates, violating, state)
    order = [a for a in candidates if a.id in violating] + [
        a for a in candidates if a.id not in violating
    ]
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    # What the ask lacks on the node as it stands, then with each victim gone (in victim order).
    lacking_room = _room(node, on_node, reserved)
    scope = f"node {chosen}"
    free = _room(node, kept, reserved)  # the reprieve starts with every candidate gone
    for rank, allocation in enumerate(order, 1):
        place = f"{ordinal(rank)} in the reprieve walk: {_importance(allocation)}"
        if reasons.get(allocation.id) == Reason.NOT_NEEDED_AFTER_REPRIEVE:
            room_before = positive(free)
            for name, value in allocation.resources.items():
                free[name] = free.get(name, 0) - value
            detail = (
                f"reprieved, {place}; with it kept the ask still fits {chosen} (free room "
                f"{amounts(only(room_before, demand))} before putting it back, "
                f"{amounts(only(free, demand))} after; the ask needs {amounts(demand)})"
            )
            notes[allocation.id] = Note(detail, rank)
            continue
        before = _lacking(demand, lacking_room)
        for name, value in allocation.resources.items():
            lacking_room[name] = lacking_room.get(name, 0) + value
        after = _lacking(demand, lacking_room)
        short = _lacking(
            demand, {n: free.get(n, 0) - allocation.resources.get(n, 0) for n in demand}
        )
        detail = (
            f"victim #{position.get(allocation.id, '-')}, {place}; putting it back would leave the "
            f"ask short of {amounts(short)} on {chosen}; the ask lacked {amounts(before)} on "
            f"{chosen} before it, {amounts(after)} after"
        )
        if allocation.id in violating:
            budget = state.budgets_by_name[allocation.pdb or ""]
            used_by = ", ".join(spent.get(budget.name, [])) or "none"
            detail += (
                f"; its disruption budget {budget.name} allows {budget.allowed_disruptions} "
                f"disruption(s), used up by more important pods ({used_by})"
            )
        notes[allocation.id] = Note(detail, rank, {scope: before}, {scope: after})
    return notes


def _lacking(demand: Mapping[str, int], room: Mapping[str, int]) -> dict[str, int]:
    return {
        name: value - room.get(name, 0)
        for name, value in demand.items()
        if value > room.get(name, 0)
    }


def _budget_spenders(
    candidates: Sequence[Allocation], violating: frozenset[str], state: ClusterState
) -> dict[str, list[str]]:
    """Per budget, the candidates (importance order) that used its allowed disruptions
    (``priority._budget_violating``'s walk)."""
    spent: dict[str, list[str]] = {}
    for allocation in candidates:
        if allocation.pdb in state.budgets_by_name and allocation.id not in violating:
            spent.setdefault(allocation.pdb, []).append(allocation.id)
    return spent
