"""Inter-queue preemption (SPEC 4.2): the queue and task rules with their numbers, then the
replay of the node pass: what the ask still needed on the node and under each exceeded queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from preemption import resources
from preemption.explanations.notes import (
    Note,
    Notes,
    Remaining,
    add_into,
    only,
    plan_reasons,
    subtract_into,
)
from preemption.explanations.task_rules import (
    broken_guarantee_text,
    daemonset_text,
    higher_priority_text,
    no_shared_text,
    opted_out_text,
)
from preemption.explanations.wording import amounts, ordinal, quantity, when
from preemption.inter_queue import (
    _below_common_ancestor,
    _node_usable,
    _queue_shortfall,
    _reserved_for_others,
    _room_missing,
    _used_by_node,
    _victim_order,
)
from preemption.model import Allocation, Ask, ClusterState, Options, Plan, Reason


def describe_inter_queue(state: ClusterState, plan: Plan, ask_id: str, options: Options) -> Notes:
    """Queue and task rules with their numbers, then a replay of the node pass that explains the
    plan (the chosen node, else the first usable one by name): what the ask still needed on the
    node and under each exceeded queue, before and after each candidate."""
    del options
    ask = state.ask(ask_id)
    hierarchy = state.hierarchy
    reasons = plan_reasons(plan)
    fence = hierarchy.fence_root(ask.queue, ask.resources, state.usage)
    types = sorted(name for name, amount in ask.resources.items() if amount > 0)
    notes: Notes = {}
    walked: list[Allocation] = []
    queue_facts: dict[str, str] = {}
    for allocation in state.running:
        reason = reasons.get(allocation.id)
        if reason is None:
            continue
        text = _inter_queue_static(state, ask, allocation, reason, fence, types)
        if text is None:
            walked.append(allocation)
            if allocation.queue not in queue_facts:
                queue_facts[allocation.queue] = _above_guarantee(state, allocation.queue, types)
        else:
            notes[allocation.id] = Note(text)

    used = _used_by_node(state)
    reserved = _reserved_for_others(state, ask)
    usable = [
        node
        for node in sorted(state.nodes, key=lambda node: node.name)
        if _node_usable(ask, node, reserved)
    ]
    explained = plan.node or (usable[0].name if usable else None)
    on_node = sorted(
        (allocation for allocation in walked if allocation.node == explained), key=_victim_order
    )
    for allocation in walked:
        if allocation.node == explained:
            continue
        if explained is None:
            why = (
                "no node is usable for the ask (schedulable, big enough for it when empty and "
                "not reserved for another ask)"
            )
        elif plan.node:
            why = f"the plan chose {plan.node}"
        else:
            why = f"no node could be freed enough; the first usable node, {explained}, explains"
        notes[allocation.id] = Note(f"runs on {allocation.node}; {why}")
    if explained is None:
        return notes

    node = state.nodes_by_name[explained]
    room = _room_missing(node, used.get(node.name, {}), ask.resources)
    shortfall = _queue_shortfall(state, ask)
    removed: dict[str, dict[str, int]] = {}
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    last: Allocation | None = None
    final: list[tuple[str, int, Remaining]] = []
    for rank, allocation in enumerate(on_node, 1):
        before = _still_needed(explained, room, shortfall)
        key = (
            f"priority {allocation.priority}, "
            f"{'originator' if allocation.originator else 'non-originator'}, "
            f"created {when(allocation.created_at)}"
        )
        place = f"{ordinal(rank)} on {explained} in the order: {key}"
        reason = reasons[allocation.id]
        protected = _below_common_ancestor(hierarchy, allocation.queue, ask)
        if reason == Reason.VICTIM:
            subtract_into(room, allocation.resources)
            for path in list(shortfall):
                if hierarchy.is_within(allocation.queue, path):
                    subtract_into(shortfall[path], allocation.resources)
                    if not shortfall[path]:
                        del shortfall[path]
            for path in protected:
                add_into(removed.setdefault(path, {}), allocation.resources)
            after = _still_needed(explained, room, shortfall)
            last = allocation
            if allocation.id in position:
                detail = (
                    f"victim #{position[allocation.id]}, {place}; {queue_facts[allocation.queue]}; "
                    f"the ask still needed {_needs_text(before)} before it, "
                    f"{_needs_text(after)} after"
                )
                notes[allocation.id] = Note(detail, rank, before, after)
            else:
                final.append((allocation.id, rank, before))
                queue_fact = queue_facts[allocation.queue]
                notes[allocation.id] = Note(f"{place}; {queue_fact}", rank, before)
        elif reason == Reason.LAW2_BELOW_GUARANTEE:
            broken = broken_guarantee_text(
                hierarchy, protected, state.usage, removed, allocation.resources
            )
            notes[allocation.id] = Note(f"{place}; but it {broken}", rank, before, before)
        elif not (room or shortfall) and last is not None:
            detail = (
                f"not needed: the ask fits {explained} after victim #{position.get(last.id, '-')} "
                f"({last.id}); {place}"
            )
            notes[allocation.id] = Note(detail, rank, before, before)
        else:
            detail = (
                f"not needed: it frees none of what the ask still needs "
                f"({_needs_text(before)}); {place}"
            )
            notes[allocation.id] = Note(detail, rank, before, before)
    left = _still_needed(explained, room, shortfall)
    for candidate, rank, before in final:
        # does_not_help: the pass took it, but the node could not be freed enough.
        detail = (
            f"{notes[candidate].detail}; it would have been taken, but even then the ask would "
            f"still need {_needs_text(left)}: nobody is preempted"
        )
        notes[candidate] = Note(detail, rank, before, left)
    return notes


def _inter_queue_static(
    state: ClusterState,
    ask: Ask,
    allocation: Allocation,
    reason: Reason,
    fence: str,
    types: Sequence[str],
) -> str | None:
    """The words of a queue or task rule (``inter_queue._queue_reason``, ``_task_reason``);
    None for a candidate that passed them all."""
    hierarchy = state.hierarchy
    if reason == Reason.OUTSIDE_FENCE:
        why = _fence_why(state, ask, fence)
        return f"{allocation.queue} is outside the ask's fence root {fence} ({why})"
    if reason == Reason.LAW5_QUEUE_WITHIN_GUARANTEE:
        queue = allocation.queue
        usage, guaranteed = state.usage[queue], hierarchy.queues[queue].guaranteed
        if queue == ask.queue:
            below = [kind for kind in types if guaranteed.get(kind, 0) > 0]
            return (
                f"in the ask's own queue {queue}, which is under its guarantee (usage "
                f"{_against(usage, guaranteed, below, 'below guarantee')})"
            )
        return (
            f"{queue} usage {_against(usage, guaranteed, types, 'not above guarantee')}: not "
            "above its guarantee on any type of the ask"
        )
    if reason == Reason.QUEUE_PREEMPTION_DISABLED:
        source = hierarchy.effective_policy(allocation.queue).source
        inherited = f" (inherited from {source})" if source != allocation.queue else ""
        return f"{allocation.queue} has preemption.policy disabled{inherited}"
    if reason == Reason.LAW3_SAME_APPLICATION:
        return f"same application {allocation.app} as the ask {ask.id}"
    if reason == Reason.LAW6_HIGHER_PRIORITY:
        return higher_priority_text(allocation, ask.priority, "ask", equal_may_go=True)
    if reason == Reason.LAW1_OPTED_OUT:
        return opted_out_text()
    if reason == Reason.DAEMONSET_EXCLUDED:
        return daemonset_text(allocation)
    if reason == Reason.NO_SHARED_RESOURCE:
        return no_shared_text(allocation, ask.resources)
    return None


def _fence_why(state: ClusterState, ask: Ask, fence: str) -> str:
    """Why the walk up from the ask's queue stopped at ``fence`` (``Hierarchy.fence_root``)."""
    hierarchy = state.hierarchy
    policy = hierarchy.effective_policy(fence)
    if policy.value == "fence" and policy.source == fence:
        return f"{fence} has preemption.policy fence"
    queue = hierarchy.queues[fence]
    with_ask = resources.add(state.usage.get(fence, {}), ask.resources)
    over = resources.over(with_ask, queue.max)
    if over:
        kinds = sorted(over)
        return (
            f"usage {amounts(only(state.usage.get(fence, {}), kinds))} plus the ask "
            f"{amounts(only(ask.resources, kinds))} would exceed {fence}'s max "
            f"{amounts(only(queue.max, kinds))}"
        )
    return "no fence or exceeded max on the way up to root"


def _above_guarantee(state: ClusterState, queue: str, types: Sequence[str]) -> str:
    """Law 5 passed: ``root.research usage memory 580Gi above guarantee 300Gi`` (the ask's
    types the queue uses more of than it is guaranteed)."""
    usage = state.usage[queue]
    guaranteed = state.hierarchy.queues[queue].guaranteed
    over = [name for name in types if usage.get(name, 0) > guaranteed.get(name, 0)]
    return f"{queue} usage {_against(usage, guaranteed, over, 'above guarantee')}"


def _against(
    usage: Mapping[str, int], guaranteed: Mapping[str, int], kinds: Iterable[str], relation: str
) -> str:
    """``memory 580Gi above guarantee 300Gi, vcore 8 above guarantee 2``: per type, the usage
    and the guarantee it is compared with."""
    return ", ".join(
        f"{kind} {quantity(kind, usage.get(kind, 0))} {relation} "
        f"{quantity(kind, guaranteed.get(kind, 0))}"
        for kind in sorted(kinds)
    )


def _still_needed(
    node: str, room: Mapping[str, int], shortfall: Mapping[str, Mapping[str, int]]
) -> Remaining:
    needed: Remaining = {}
    if room:
        needed[f"node {node}"] = dict(sorted(room.items()))
    for path, missing in sorted(shortfall.items()):
        needed[path] = dict(sorted(missing.items()))
    return needed


def _needs_text(needed: Remaining) -> str:
    if not needed:
        return "nothing"
    parts = []
    for scope, missing in needed.items():
        where = f"on {scope[5:]}" if scope.startswith("node ") else f"under {scope}'s max"
        parts.append(f"{amounts(missing)} {where}")
    return "; ".join(parts)
