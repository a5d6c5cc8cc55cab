"""Inter-queue preemption under the seven laws (SPEC 4.2, seed 000).

A pending ask A in leaf queue Q that cannot run may take resources from tasks of other queues
that are over their guarantees, so that Q reaches its guarantee. The seed's laws keep this from
turning into a preemption storm or loop:

1. opted-out tasks (``allow_preemption=false``) are never victims here;
2. a victim never takes its queue (or an ancestor below the common ancestor with Q) below a
   guarantee it was at or above;
3. A never preempts its own application;
4. only a queue under its guarantee triggers preemption;
5. only a queue over its guarantee loses tasks;
6. victims have a priority lower than or equal to A's;
7. victims sit inside A's preemption fence.

Steps of ``plan_inter_queue``:

1. Trigger (``not_triggered`` otherwise): A may preempt (policy not ``Never``), has waited Q's own
   ``preemption.delay``, does not fit (no schedulable node has room, or a queue on Q's path would
   exceed its max) and Q is under its guarantee (law 4).
2. Scope: the running allocations in the fence root's subtree (law 7); the rest are explained as
   ``outside_fence``.
3. Static rules per candidate (queue rules, then task rules, first failure gives the reason).
   A task on a node A may not use (SPEC 3.3) is ``node_ineligible``, after the task rules.
4. Per node A may use: walk the node's candidates in victim order, taking each that reduces
   what is still missing (room on the node, headroom of an exceeded queue on Q's path) and
   keeps guarantees (law 2). A node is viable when A then fits it and every queue on Q's path.
5. Choose among viable nodes (fewest victims, lowest highest-victim priority, youngest oldest
   victim, name); reserve it for A; outcome ``complete``, else ``does_not_help``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from preemption import resources
from preemption.eligibility import may_use
from preemption.hierarchy import Hierarchy
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
    Reason,
    explanations_from,
    micros,
)

__all__ = ["plan_inter_queue"]

#: Ask states that still wait to run: ``reserved`` is an ask whose node was reserved by an
#: earlier plan but which does not run yet. ``allocated`` and ``removed`` asks never trigger
#: preemption and hold no reservation (ours: the SPEC only says "pending").
_WAITING = (AskState.PENDING, AskState.RESERVED)


#: Per queue path, by type: what is still missing before A fits under that queue's max.
Shortfall = dict[str, dict[str, int]]


def plan_inter_queue(state: ClusterState, ask_id: str, now: datetime, options: Options) -> Plan:
    """Plan inter-queue preemption for the pending ask ``ask_id`` (SPEC 4.2).

    ``options`` is accepted for the common policy signature; none of its tunables apply here.

    Steps: check the trigger; find the fence root and the allocations in scope; give every one
    of them its static reason or make it a candidate; evaluate each usable node on its own;
    pick the best viable node and explain every allocation in scope from that node's pass (or
    from the first usable node by name when none is viable).
    """
    del options  # no tunable of Options concerns inter-queue preemption
    ask = state.ask(ask_id)
    if not _may_trigger(state, ask, now):
        return Plan(PolicyName.INTER_QUEUE, Outcome.NOT_TRIGGERED)
    used = _used_by_node(state)
    ineligible = frozenset(node.name for node in state.nodes if not may_use(ask, node))
    if _fits_somewhere(state, ask, used, ineligible):
        return Plan(PolicyName.INTER_QUEUE, Outcome.NOT_TRIGGERED)

    hierarchy = state.hierarchy
    fence = hierarchy.fence_root(ask.queue, ask.resources, state.usage)
    # Only the fence root's subtree can hold victims (law 7). Running allocations outside it are
    # still explained, as ``outside_fence``, so an auditor sees why a queue that is over its
    # guarantee elsewhere in the cluster was not touched (the code exists for exactly this).
    reasons: dict[str, Reason] = {}
    candidates: list[Allocation] = []
    queue_reasons: dict[str, Reason | None] = {}
    for allocation in state.running:
        if allocation.queue not in hierarchy.queues:
            continue  # a task of a queue that is not configured belongs to no subtree
        if not hierarchy.is_within(allocation.queue, fence):
            reasons[allocation.id] = Reason.OUTSIDE_FENCE
            continue
        if allocation.queue not in queue_reasons:
            queue_reasons[allocation.queue] = _queue_reason(state, ask, allocation.queue)
        reason = queue_reasons[allocation.queue] or _task_reason(ask, allocation)
        if reason is None and allocation.node in ineligible:
            # SPEC 4.0: after the task rules, a task on a node A may not use (3.3) cannot help.
            reason = Reason.NODE_INELIGIBLE
        if reason is None:
            candidates.append(allocation)
        else:
            reasons[allocation.id] = reason

    candidates.sort(key=_victim_order)
    by_node: dict[str, list[Allocation]] = {}
    for candidate in candidates:
        by_node.setdefault(candidate.node, []).append(candidate)

    context = _Context(state, ask, used, _queue_shortfall(state, ask))
    reserved = _reserved_for_others(state, ask)
    passes = [
        _evaluate_node(context, node, by_node.get(node.name, []))
        for node in sorted(state.nodes, key=lambda node: node.name)
        if node.name not in ineligible and _node_usable(ask, node, reserved)
    ]
    viable = [node_pass for node_pass in passes if node_pass.viable]
    chosen = min(viable, key=_node_choice) if viable else None
    explained = chosen or (passes[0] if passes else None)
    for candidate in candidates:
        reason = explained.reasons.get(candidate.id) if explained else None
        # Acceptable, but the pass that explains the plan ran on another node.
        reasons[candidate.id] = reason or Reason.NOT_ON_NODE

    if chosen is None:
        # Nobody is preempted; candidates taken during the first node's failed pass keep the
        # reason ``victim`` with ``accepted`` false: they passed every rule, but that node could
        # not be freed enough.
        return Plan(
            PolicyName.INTER_QUEUE,
            Outcome.DOES_NOT_HELP,
            explanations=explanations_from(reasons, ()),
        )
    return Plan(
        PolicyName.INTER_QUEUE,
        Outcome.COMPLETE,
        victims=chosen.victims,
        node=chosen.node,
        explanations=explanations_from(reasons, chosen.victims),
    )


# ------------------------------------------------------------------------------------------
# Trigger
# ------------------------------------------------------------------------------------------


def _may_trigger(state: ClusterState, ask: Ask, now: datetime) -> bool:
    """The cheap trigger conditions of SPEC 4.2: A still waits, may preempt (not ``Never``),
    has waited Q's own delay, and Q is under its guarantee (law 4). The fourth, "A does not
    fit", is ``_fits_somewhere``; any failure is ``not_triggered``, whatever the order."""
    if ask.state not in _WAITING:
        return False
    if ask.preemption_policy == PreemptionPolicy.NEVER:
        return False
    delay = state.hierarchy.preemption_delay(ask.queue).value
    assert isinstance(delay, int)
    if now - ask.created_at < timedelta(seconds=delay):
        return False
    return _under_guarantee(state, ask)


def _fits_somewhere(
    state: ClusterState,
    ask: Ask,
    used: Mapping[str, Mapping[str, int]],
    ineligible: frozenset[str],
) -> bool:
    """A could run as the cluster stands: every queue on Q's path has headroom for it and some
    schedulable node A may use (SPEC 3.3) has room: room on a node A may not use does not let A
    run, as kube-scheduler would not bind it there.

    Reservations for other asks are not looked at here (only during the per-node evaluation):
    the SPEC's "no node has room" is about room, and an ask that fits is not a preemption case.
    """
    if _queue_shortfall(state, ask):
        return False
    return any(
        node.schedulable
        and node.name not in ineligible
        and not _room_missing(node, used.get(node.name, {}), ask.resources)
        for node in state.nodes
    )


def _under_guarantee(state: ClusterState, ask: Ask) -> bool:
    """Law 4 as SPEC 4.2 defines it: Q guarantees at least one type of A, and is below its
    guarantee on every type of A it guarantees.

    A type guaranteed as 0 counts as not guaranteed (a missing guarantee is 0, SPEC 4.0), so
    it neither triggers nor blocks.
    """
    guaranteed = state.hierarchy.queues[ask.queue].guaranteed
    usage = state.usage[ask.queue]
    types = [name for name in _ask_types(ask) if guaranteed.get(name, 0) > 0]
    return bool(types) and all(usage.get(name, 0) < guaranteed[name] for name in types)


# ------------------------------------------------------------------------------------------
# Static rules
# ------------------------------------------------------------------------------------------


def _queue_reason(state: ClusterState, ask: Ask, leaf: str) -> Reason | None:
    """Queue rules, in SPEC order, for the leaf queue of a task in scope.

    1. Leaf Q holds no victims. The SPEC gives no code; we use ``law5_queue_within_guarantee``
       because the seed gives exactly that reason (flow case 3: "Prod is not considered as a
       queue with victims as it is still below its guaranteed resources") — Q triggered, so it
       is under its guarantee (law 4). This also covers A's own application, as queue rules
       come before task rules.
    2. Effective ``preemption.policy`` ``disabled`` (inherited from an ancestor too).
    3. Law 5: usage over guaranteed on some type of A (a missing guarantee is 0).
    """
    if leaf == ask.queue:
        return Reason.LAW5_QUEUE_WITHIN_GUARANTEE
    hierarchy = state.hierarchy
    if hierarchy.effective_policy(leaf).value == "disabled":
        return Reason.QUEUE_PREEMPTION_DISABLED
    guaranteed = hierarchy.queues[leaf].guaranteed
    usage = state.usage[leaf]
    if not any(usage.get(name, 0) > guaranteed.get(name, 0) for name in _ask_types(ask)):
        return Reason.LAW5_QUEUE_WITHIN_GUARANTEE
    return None


def _task_reason(ask: Ask, allocation: Allocation) -> Reason | None:
    """Task rules, in SPEC order: laws 3, 6 (equal priority allowed), 1, DaemonSet pods, and a
    shared resource type (removing a task that uses none of A's types cannot help)."""
    if allocation.app == ask.app:
        return Reason.LAW3_SAME_APPLICATION
    if allocation.priority > ask.priority:
        return Reason.LAW6_HIGHER_PRIORITY
    if not allocation.allow_preemption:
        return Reason.LAW1_OPTED_OUT
    if allocation.required_node is not None:
        return Reason.DAEMONSET_EXCLUDED
    if not resources.shares_type(allocation.resources, ask.resources):
        return Reason.NO_SHARED_RESOURCE
    return None


def _victim_order(allocation: Allocation) -> tuple[int, bool, int, str]:
    """SPEC 4.2 order on a node: lower priority, non-originator, newest first, then id."""
    return (
        allocation.priority,
        allocation.originator,
        -micros(allocation.created_at),
        allocation.id,
    )


# ------------------------------------------------------------------------------------------
# Per-node evaluation
# ------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """What every node's pass shares, computed once per plan (not frozen: ``protected`` is a
    cache filled as leaves come up)."""

    state: ClusterState
    ask: Ask
    used: Mapping[str, Mapping[str, int]]
    shortfall: Shortfall
    #: Per leaf with candidates: the queues law 2 protects (the leaf and every ancestor below
    #: the lowest common ancestor with Q), filled lazily.
    protected: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def protected_queues(self, leaf: str) -> tuple[str, ...]:
        if leaf not in self.protected:
            self.protected[leaf] = _below_common_ancestor(self.state.hierarchy, leaf, self.ask)
        return self.protected[leaf]


@dataclass(frozen=True)
class _NodePass:
    """The result of walking one node's candidates: victims taken and a reason for each."""

    node: str
    victims: tuple[str, ...]
    reasons: Mapping[str, Reason]
    viable: bool
    highest_priority: int
    oldest_start: int  # microseconds since the epoch of the oldest victim's created_at


def _reserved_for_others(state: ClusterState, ask: Ask) -> frozenset[str]:
    """Nodes reserved for another ask that still waits (its ``node``); A's own reservation
    does not keep A off its node."""
    return frozenset(
        other.node
        for other in state.asks
        if other.node is not None and other.id != ask.id and other.state in _WAITING
    )


def _node_usable(ask: Ask, node: Node, reserved: frozenset[str]) -> bool:
    """SPEC 4.2: schedulable, big enough for A when empty, and not reserved for another ask."""
    if not node.schedulable or node.name in reserved:
        return False
    return all(node.capacity.get(name, 0) >= amount for name, amount in ask.resources.items())


def _evaluate_node(context: _Context, node: Node, candidates: Sequence[Allocation]) -> _NodePass:
    """Walk ``node``'s candidates (already in victim order) from the cluster as it stands.

    Steps, per candidate:
    1. nothing is missing any more, or it uses none of the types still missing on the node or
       in an exceeded queue it sits in -> ``target_met`` (not needed);
    2. it would take a protected queue below its guarantee, counting the victims already taken
       on this node (law 2, cumulative) -> ``law2_below_guarantee``;
    3. otherwise it is taken -> ``victim``.
    The node is viable when nothing is missing afterwards.
    """
    state, ask = context.state, context.ask
    room = _room_missing(node, context.used.get(node.name, {}), ask.resources)
    shortfall = {path: dict(missing) for path, missing in context.shortfall.items()}
    removed: dict[str, dict[str, int]] = {}
    victims: list[Allocation] = []
    reasons: dict[str, Reason] = {}
    for candidate in candidates:
        if not (room or shortfall) or not _helps(state.hierarchy, candidate, room, shortfall):
            reasons[candidate.id] = Reason.TARGET_MET
            continue
        protected = context.protected_queues(candidate.queue)
        if not _keeps_guarantees(state, protected, removed, candidate.resources):
            reasons[candidate.id] = Reason.LAW2_BELOW_GUARANTEE
            continue
        reasons[candidate.id] = Reason.VICTIM
        victims.append(candidate)
        _reduce(room, candidate.resources)
        for path in list(shortfall):
            if state.hierarchy.is_within(candidate.queue, path):
                _reduce(shortfall[path], candidate.resources)
                if not shortfall[path]:
                    del shortfall[path]
        for path in protected:
            gone = removed.setdefault(path, {})
            for name, amount in candidate.resources.items():
                gone[name] = gone.get(name, 0) + amount
    return _NodePass(
        node=node.name,
        victims=tuple(victim.id for victim in victims),
        reasons=reasons,
        viable=not room and not shortfall,
        highest_priority=max((victim.priority for victim in victims), default=0),
        oldest_start=min((micros(victim.created_at) for victim in victims), default=0),
    )


def _helps(
    hierarchy: Hierarchy,
    candidate: Allocation,
    room: Mapping[str, int],
    shortfall: Shortfall,
) -> bool:
    """The candidate frees some type still missing: room on its node, or headroom of an
    exceeded queue on Q's path that it sits inside."""
    if any(candidate.resources.get(name, 0) > 0 for name in room):
        return True
    return any(
        hierarchy.is_within(candidate.queue, path)
        and any(candidate.resources.get(name, 0) > 0 for name in missing)
        for path, missing in shortfall.items()
    )


def _keeps_guarantees(
    state: ClusterState,
    protected: Sequence[str],
    removed: Mapping[str, Mapping[str, int]],
    amount: Mapping[str, int],
) -> bool:
    """Guarantee protection (SPEC 4.0, law 2), cumulative over the victims already taken.

    A queue may not drop below its guarantee on a type where it was at or above it before the
    plan; a type already below its guarantee does not block.
    """
    for path in protected:
        guaranteed = state.hierarchy.queues[path].guaranteed
        usage = state.usage[path]
        gone = removed.get(path, {})
        for name, floor in guaranteed.items():
            before = usage.get(name, 0)
            if before < floor:
                continue
            if before - gone.get(name, 0) - amount.get(name, 0) < floor:
                return False
    return True


def _node_choice(node_pass: _NodePass) -> tuple[int, int, int, str]:
    """SPEC 4.2 node choice: fewest victims; lowest highest-victim priority; the node whose
    oldest victim started most recently (less work lost); node name."""
    return (
        len(node_pass.victims),
        node_pass.highest_priority,
        -node_pass.oldest_start,
        node_pass.node,
    )


# ------------------------------------------------------------------------------------------
# Quantities
# ------------------------------------------------------------------------------------------


def _ask_types(ask: Ask) -> list[str]:
    """The types A actually requests (a 0 amount requests nothing)."""
    return sorted(name for name, amount in ask.resources.items() if amount > 0)


def _used_by_node(state: ClusterState) -> dict[str, dict[str, int]]:
    """What the live allocations use on each node (one pass; preempting ones count as gone)."""
    used: dict[str, dict[str, int]] = {}
    for allocation in state.running:
        on_node = used.setdefault(allocation.node, {})
        for name, amount in allocation.resources.items():
            on_node[name] = on_node.get(name, 0) + amount
    return used


def _room_missing(node: Node, used: Mapping[str, int], ask: Mapping[str, int]) -> dict[str, int]:
    """Per type of A, how much free room the node lacks (a capacity missing a type has 0)."""
    missing: dict[str, int] = {}
    for name, amount in ask.items():
        free = node.capacity.get(name, 0) - used.get(name, 0)
        if amount > free:
            missing[name] = amount - free
    return missing


def _queue_shortfall(state: ClusterState, ask: Ask) -> Shortfall:
    """Every queue on Q's path whose own max ``usage + A`` would exceed, with the excess.

    Each queue is checked against its own max on its own usage, as ``Hierarchy.fence_root``
    does, so the fence root is always at or below the lowest exceeded queue.
    """
    hierarchy = state.hierarchy
    shortfall: Shortfall = {}
    for path in hierarchy.path_from_root(ask.queue):
        limit = hierarchy.queues[path].max
        excess = resources.over(resources.add(state.usage[path], ask.resources), limit)
        if excess:
            shortfall[path] = excess
    return shortfall


def _reduce(missing: dict[str, int], freed: Mapping[str, int]) -> None:
    """Subtract what a victim frees from what is missing, dropping types that are covered."""
    for name in list(missing):
        left = missing[name] - freed.get(name, 0)
        if left > 0:
            missing[name] = left
        else:
            del missing[name]


def _below_common_ancestor(hierarchy: Hierarchy, leaf: str, ask: Ask) -> tuple[str, ...]:
    """The victim's leaf and its ancestors strictly below the lowest common ancestor with Q:
    at and above that ancestor A's usage replaces the victim's, so law 2 does not apply."""
    protected: list[str] = []
    for step in [leaf, *hierarchy.ancestors(leaf)]:
        if hierarchy.is_within(ask.queue, step):
            break
        protected.append(step)
    return tuple(protected)
