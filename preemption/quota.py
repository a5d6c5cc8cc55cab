"""Quota-decrease enforcement through preemption (SPEC 4.1, seed 001).

When an admin lowers a queue's max below its usage and the queue's quota preemption delay has
passed, this policy picks the running tasks to preempt so that the new max comes into effect:

1. **Trigger**: the partition's ``quota_preemption_enabled`` is on, the queue's effective
   ``quota.preemption.delay`` is > 0, and its usage is over the new max on some type of its own
   max. Otherwise the plan is ``not_triggered`` and nobody is looked at.
2. **Target** of the queue Q: ``min(usage - max, usage - guaranteed)`` per type of Q's own max,
   positive parts only (seed: "Preemptable Resource calculation").
3. **Parent distribution**: a parent's target is split among its children in proportion to their
   releasable usage (usage above guarantee) by the largest-remainder method, down to the leaves.
   Children with no usage or with a run in progress take no part (seed: "Queue selection and
   ordering").
4. **Victims per leaf**, leaves in path order: DaemonSet pods never, tasks sharing a type with the
   leaf's target, in the seed's preference order, taken until the leaf's target is met; no victim
   may take the leaf or any ancestor below a guarantee it was at or above (checked cumulatively
   over the whole plan).
5. **Outcome** from ``freed`` (all victims' resources) against Q's target: ``complete``,
   ``best_effort`` (short by at most ``miss_percent``% on every type), ``short`` or
   ``does_not_help`` (seed: "Preemption does not help" situations).

The policy never reads a clock: ``now`` is part of the signature shared by every policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from operator import attrgetter

from preemption import resources
from preemption.hierarchy import Hierarchy
from preemption.model import (
    Allocation,
    ClusterState,
    Outcome,
    Plan,
    PolicyName,
    Reason,
    explanations_from,
    micros,
)

__all__ = [
    "in_quota_order",
    "leaf_targets",
    "plan_quota",
    "quota_target",
    "quota_triggered",
    "split_largest_remainder",
    "victim_order_key",
]


ResourceMap = dict[str, int]


def plan_quota(state: ClusterState, queue: str, now: datetime) -> Plan:
    """Plan the quota preemption run of ``queue``, whose new max is already in ``state.config``.

    Steps: check the trigger; compute Q's target; split it down to the leaves; choose victims
    leaf by leaf (leaves in path order) with guarantee protection carried across the whole plan;
    judge the outcome on Q's target. Every running allocation in Q's subtree gets an explanation;
    those in leaves that were given no share are ``target_met``.
    """
    del now  # the decision does not depend on the time: the delay was checked by the caller
    if not quota_triggered(state, queue):
        return Plan(PolicyName.QUOTA, Outcome.NOT_TRIGGERED)

    hierarchy = state.hierarchy
    own = hierarchy.queues[queue]
    target = quota_target(state.usage[queue], own.max, own.guaranteed)
    targets = leaf_targets(state, queue, target)

    in_scope = [a for a in state.running if hierarchy.is_within(a.queue, queue)]
    by_leaf: dict[str, list[Allocation]] = {}
    for allocation in in_scope:
        by_leaf.setdefault(allocation.queue, []).append(allocation)

    selection = _Selection(hierarchy, state.usage)
    for leaf in sorted(targets):
        selection.select_in_leaf(leaf, targets[leaf], by_leaf.get(leaf, []))
    # Allocations of leaves without a share (zero usage, a run in progress, nothing releasable
    # or a zero share) are not needed for the target.
    for allocation in in_scope:
        selection.reasons.setdefault(allocation.id, Reason.TARGET_MET)

    victims = tuple(selection.victims)
    return Plan(
        policy=PolicyName.QUOTA,
        outcome=judge_outcome(target, selection.freed, victims, state.settings.miss_percent),
        victims=victims,
        targets=targets,
        freed=dict(sorted(selection.freed.items())),
        explanations=explanations_from(selection.reasons, victims),
    )


# --------------------------------------------------------------------------------------------
# Trigger and target
# --------------------------------------------------------------------------------------------


def quota_triggered(state: ClusterState, queue: str) -> bool:
    """SPEC 4.1 trigger: switch on, effective delay > 0, usage over the queue's own max.

    Only the queue's own max is looked at (not the effective max along its path): the run
    enforces the change that was made to this queue.
    """
    if not state.settings.quota_preemption_enabled:
        return False
    hierarchy = state.hierarchy
    delay = hierarchy.effective_quota_delay(queue).value
    if not isinstance(delay, int) or delay <= 0:
        return False
    return bool(resources.over(state.usage.get(queue, {}), hierarchy.queues[queue].max))


def quota_target(
    usage: Mapping[str, int], new_max: Mapping[str, int], guaranteed: Mapping[str, int]
) -> ResourceMap:
    """Preemptable resources: ``min(usage - max, usage - guaranteed)`` per type of ``new_max``.

    Only the types of the (new) own max count: a type it does not name is unlimited, and the
    seed's ``subOnlyExisting`` keeps exactly the max's types. A type missing from ``guaranteed``
    is guaranteed 0, so ``usage - guaranteed`` is the whole usage. Only positive values remain.
    The previous max plays no part: the seed's table gives the same result for "Nil" and for
    ``{M: 100G}`` as current max.
    """
    target: ResourceMap = {}
    for kind in sorted(new_max):
        used = usage.get(kind, 0)
        amount = min(used - new_max[kind], used - guaranteed.get(kind, 0))
        if amount > 0:
            target[kind] = amount
    return target


# --------------------------------------------------------------------------------------------
# Parent distribution
# --------------------------------------------------------------------------------------------


def leaf_targets(
    state: ClusterState, queue: str, target: Mapping[str, int]
) -> dict[str, ResourceMap]:
    """Split ``target`` of ``queue`` down to its leaves (SPEC 4.1 "Parent queue").

    Returns the leaves given a positive share on some type, with only those positive types; a
    leaf queue given its own target is its only entry.
    """
    shares: dict[str, ResourceMap] = {}
    _distribute(state, queue, resources.positive_part(target), shares)
    return dict(sorted(shares.items()))


def _distribute(
    state: ClusterState, path: str, target: ResourceMap, shares: dict[str, ResourceMap]
) -> None:
    """Recursive step: a leaf keeps its target; a parent splits it among its taking children."""
    if not target:
        return
    hierarchy = state.hierarchy
    if hierarchy.is_leaf(path):
        shares[path] = target
        return
    releasable = {
        child: releasable_of(state.usage[child], hierarchy.queues[child].guaranteed)
        for child in hierarchy.children(path)
        if _takes_part(state, child)
    }
    for child, share in split_largest_remainder(target, releasable).items():
        _distribute(state, child, share, shares)


def _takes_part(state: ClusterState, child: str) -> bool:
    """Seed: "Child Queues with nil usage and queues for which preemption is already in progress
    would be eliminated". A child counts as having a run in progress when the run is on the child
    itself or on any queue in its subtree: the tasks a share would be taken from are the ones that
    run is choosing from, so taking part would let two runs pick from the same tasks (the same
    guard as SPEC 4.1's deferral of timers on descendants)."""
    if resources.is_zero(state.usage.get(child, {})):
        return False
    hierarchy = state.hierarchy
    return not any(hierarchy.is_within(running, child) for running in state.running_runs)


def releasable_of(usage: Mapping[str, int], guaranteed: Mapping[str, int]) -> ResourceMap:
    """Usage above guarantee, positive part; a type without a guarantee releases all its usage."""
    return resources.positive_part(
        {kind: used - guaranteed.get(kind, 0) for kind, used in usage.items()}
    )


def split_largest_remainder(
    target: Mapping[str, int], weights: Mapping[str, Mapping[str, int]]
) -> dict[str, ResourceMap]:
    """Split each type of ``target`` among ``weights``' keys in proportion to their weight.

    Per type: the amount split is ``min(target, total weight)`` so that nobody gets more than its
    weight (its releasable); each share is floored, and the leftover units go one each to the
    largest fractional remainders, ties by key ascending — the shares add up exactly to the
    amount (SPEC 4.1: "differs from YuniKorn, whose rounding can lose or add units"). A type
    whose total weight is 0 gets no shares. Only keys with a positive share appear, each with
    only its positive types. Integer arithmetic only: remainders share the denominator.
    """
    shares: dict[str, ResourceMap] = {key: {} for key in sorted(weights)}
    for kind in sorted(target):
        total = sum(weight.get(kind, 0) for weight in weights.values())
        if total <= 0 or target[kind] <= 0:
            continue
        amount = min(target[kind], total)
        floors: dict[str, int] = {}
        remainders: list[tuple[int, str]] = []
        for key in shares:
            floors[key], remainder = divmod(amount * weights[key].get(kind, 0), total)
            remainders.append((-remainder, key))
        leftover = amount - sum(floors.values())
        for _, key in sorted(remainders)[:leftover]:
            floors[key] += 1
        for key, value in floors.items():
            if value > 0:
                shares[key][kind] = value
    return {key: share for key, share in shares.items() if share}


# --------------------------------------------------------------------------------------------
# Victims
# --------------------------------------------------------------------------------------------


def victim_order_key(allocation: Allocation) -> tuple[bool, int, bool, int, str]:
    """Seed 001 preference order: non-originator first, lower priority first,
    ``allow_preemption=true`` first, newest first, then id."""
    age = micros(allocation.created_at)
    return (
        allocation.originator,
        allocation.priority,
        not allocation.allow_preemption,
        -age,
        allocation.id,
    )


_BY_ID = attrgetter("id")
_BY_CREATED = attrgetter("created_at")
_BY_ALLOWED = attrgetter("allow_preemption")
_BY_ORIGINATOR_PRIORITY = attrgetter("originator", "priority")


def in_quota_order(walk: list[Allocation]) -> None:
    """Sort ``walk`` in place in the order of ``victim_order_key`` (non-originator first, lower
    priority first, preemption allowed first, newest first, then id), by one stable sort per
    part from the last to the first, each on a C-level key: a big plan sorts 100,000
    candidates, and calling the Python key function for each was a third of the walk
    (``tests/unit/test_explain.py`` checks both orders agree)."""
    walk.sort(key=_BY_ID)
    walk.sort(key=_BY_CREATED, reverse=True)  # newest first; ``reverse`` keeps ties stable
    walk.sort(key=_BY_ALLOWED, reverse=True)  # allowed (True) first
    walk.sort(key=_BY_ORIGINATOR_PRIORITY)


class _Selection:
    """Victims chosen so far across all leaves of one plan, with what they took from each queue.

    ``taken`` is per guarded queue (one with a guarantee on the path of a leaf): guarantee
    protection is cumulative over the plan's victims (SPEC 4.0), so a victim in one leaf reduces
    what its siblings may still take from a shared ancestor.
    """

    def __init__(self, hierarchy: Hierarchy, usage: Mapping[str, Mapping[str, int]]) -> None:
        self.hierarchy = hierarchy
        self.usage = usage
        self.victims: list[str] = []
        self.freed: ResourceMap = {}
        self.reasons: dict[str, Reason] = {}
        self.taken: dict[str, ResourceMap] = {}

    def select_in_leaf(
        self, leaf: str, target: Mapping[str, int], allocations: Iterable[Allocation]
    ) -> None:
        """SPEC 4.1 "Victims in a leaf", steps 1-3.

        Static rules in order (``daemonset_excluded``, ``no_shared_resource``), then walk the
        candidates in preference order with ``remaining = target``: once nothing remains the rest
        are ``target_met``; a candidate that uses none of the types still remaining is not needed
        either (``target_met``); one that would break a guarantee is ``law2_below_guarantee``.
        The last victim may free more than remains (seed: "preempted to free up resources until
        we reach the target" — differs from YuniKorn, which skips larger tasks).
        """
        guards = self._guards(leaf)
        wanted = tuple(kind for kind, amount in target.items() if amount > 0)
        reasons = self.reasons
        candidates: list[Allocation] = []
        append = candidates.append
        for allocation in allocations:  # 100,000 times in a big plan: ``_uses_any`` inlined
            if allocation.required_node is not None:
                reasons[allocation.id] = Reason.DAEMONSET_EXCLUDED
                continue
            used = allocation.resources
            for kind in wanted:
                if used.get(kind, 0) > 0:
                    append(allocation)
                    break
            else:
                reasons[allocation.id] = Reason.NO_SHARED_RESOURCE
        in_quota_order(candidates)

        remaining = {kind: target[kind] for kind in wanted}
        for index, allocation in enumerate(candidates):
            if not remaining:
                reasons.update(dict.fromkeys(map(_BY_ID, candidates[index:]), Reason.TARGET_MET))
                break
            if not _uses_any(allocation.resources, remaining):
                self.reasons[allocation.id] = Reason.TARGET_MET
            elif self._breaks_guarantee(allocation, guards):
                self.reasons[allocation.id] = Reason.LAW2_BELOW_GUARANTEE
            else:
                self._take(allocation, guards)
                for kind in list(remaining):
                    left = remaining[kind] - allocation.resources.get(kind, 0)
                    if left > 0:
                        remaining[kind] = left
                    else:
                        del remaining[kind]

    def _guards(self, leaf: str) -> list[tuple[str, Mapping[str, int]]]:
        """The leaf and every ancestor that guarantees something, with its guarantee."""
        guards = []
        for path in [leaf, *self.hierarchy.ancestors(leaf)]:
            guaranteed = self.hierarchy.queues[path].guaranteed
            if guaranteed:
                guards.append((path, guaranteed))
        return guards

    def _breaks_guarantee(
        self, allocation: Allocation, guards: list[tuple[str, Mapping[str, int]]]
    ) -> bool:
        """SPEC 4.0 guarantee protection: only types where the queue was at or above its
        guarantee before the plan started can block; types already below do not."""
        for path, guaranteed in guards:
            before = self.usage.get(path, {})
            taken = self.taken.get(path, {})
            for kind, guarantee in guaranteed.items():
                used = before.get(kind, 0)
                if used < guarantee:
                    continue
                after = used - taken.get(kind, 0) - allocation.resources.get(kind, 0)
                if after < guarantee:
                    return True
        return False

    def _take(self, allocation: Allocation, guards: list[tuple[str, Mapping[str, int]]]) -> None:
        self.victims.append(allocation.id)
        self.reasons[allocation.id] = Reason.VICTIM
        _add_into(self.freed, allocation.resources)
        for path, _ in guards:
            _add_into(self.taken.setdefault(path, {}), allocation.resources)


def _uses_any(used: Mapping[str, int], kinds: Iterable[str]) -> bool:
    """Whether ``used`` has some of one of ``kinds`` (the few types still wanted, so they
    are the side iterated)."""
    return any(used.get(kind, 0) > 0 for kind in kinds)


def _add_into(total: ResourceMap, amount: Mapping[str, int]) -> None:
    for kind, value in amount.items():
        total[kind] = total.get(kind, 0) + value


# --------------------------------------------------------------------------------------------
# Outcome
# --------------------------------------------------------------------------------------------


def judge_outcome(
    target: Mapping[str, int],
    freed: Mapping[str, int],
    victims: tuple[str, ...],
    miss_percent: int,
) -> Outcome:
    """SPEC 4.1 step 4, judged on the changed queue's target.

    No victim is ``does_not_help`` whatever the numbers say: with a target of zero (every
    excess type is protected by the guarantee, possible only in a config the admin console would
    refuse) or a ``miss_percent`` of 100 the queue is still over its max and nothing was done,
    which is what an admin needs to be told.
    """
    if not victims:
        return Outcome.DOES_NOT_HELP
    shortfall = {
        kind: amount - freed.get(kind, 0)
        for kind, amount in target.items()
        if freed.get(kind, 0) < amount
    }
    if not shortfall:
        return Outcome.COMPLETE
    # Integer form of "shortfall <= miss_percent% of the target" on every type.
    if all(missing * 100 <= miss_percent * target[kind] for kind, missing in shortfall.items()):
        return Outcome.BEST_EFFORT
    return Outcome.SHORT
