"""Quota preemption (SPEC 4.1): each candidate's place in its leaf's walk, what remained of the
leaf's share of the target before and after it, and why a leaf was given no share."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from preemption import resources
from preemption.explanations.notes import Note, Notes, add_into, only, plan_reasons, subtract_into
from preemption.explanations.task_rules import broken_guarantee_text
from preemption.explanations.wording import amounts, ordinal, when
from preemption.model import Allocation, ClusterState, Options, Plan, Reason
from preemption.quota import (
    _takes_part,
    in_quota_order,
    quota_target,
    releasable_of,
    split_largest_remainder,
)


def _quota_key(allocation: Allocation, stamps: dict[datetime, str] | None = None) -> str:
    """The values of the quota order's key (``quota.victim_order_key``). ``stamps`` remembers
    the times already written (tasks are often created in the same second)."""
    created = allocation.created_at
    stamp = None if stamps is None else stamps.get(created)
    if stamp is None:
        stamp = when(created)
        if stamps is not None:
            stamps[created] = stamp
    return (
        f"{'originator' if allocation.originator else 'non-originator'}, "
        f"priority {allocation.priority}, "
        f"{'preemption allowed' if allocation.allow_preemption else 'opted out of preemption'}, "
        f"created {stamp}"
    )


def describe_quota(
    state: ClusterState,
    plan: Plan,
    queue: str,
    options: Options,
    *,
    only: Collection[str] | None = None,
) -> Notes:
    """Replay ``quota._Selection`` leaf by leaf (leaves in path order): static rules, then the
    walk in the seed's order with ``remaining`` and the guarantees taken so far; candidates of
    leaves given no share are told why their leaf got none.

    ``only``: notes for these candidates alone (``explain``'s ``only``). The walk still goes
    through every candidate, keeping what remains and what the victims took, but the sentences
    (most of the time here) are written for these only."""
    del options  # the quota policy has no tunables
    shown = None if only is None else (only if isinstance(only, set | frozenset) else set(only))
    hierarchy = state.hierarchy
    reasons = plan_reasons(plan)
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    by_leaf: dict[str, list[Allocation]] = {}
    for allocation in state.running:
        if allocation.id in reasons:
            by_leaf.setdefault(allocation.queue, []).append(allocation)

    notes: Notes = {}
    removed: dict[str, dict[str, int]] = {}  # per queue: what the plan's victims take from it
    stamps: dict[datetime, str] = {}
    for leaf in sorted(plan.targets):
        target = plan.targets[leaf]
        wanted = [kind for kind, amount in target.items() if amount > 0]
        paths = [leaf, *hierarchy.ancestors(leaf)]
        # Only a queue with a guarantee can be taken below it (``broken_guarantee_text``).
        guarded = [path for path in paths if hierarchy.queues[path].guaranteed]
        members = by_leaf.get(leaf, [])
        if shown is not None and not any(allocation.id in shown for allocation in members):
            # No note wanted here: only what its victims take matters to the leaves after it.
            for allocation in members:
                if reasons[allocation.id] == Reason.VICTIM:
                    for path in guarded:
                        add_into(removed.setdefault(path, {}), allocation.resources)
            continue
        walk: list[Allocation] = []
        for allocation in members:
            if allocation.required_node is not None:
                notes[allocation.id] = Note(
                    f"DaemonSet pod (required node {allocation.required_node}): never a quota "
                    "victim"
                )
            else:
                used = allocation.resources
                for kind in wanted:
                    if used.get(kind, 0) > 0:
                        walk.append(allocation)
                        break
                else:
                    notes[allocation.id] = Note(
                        f"uses {amounts(used)}; {leaf} has to free {amounts(target)}: no type "
                        "in common"
                    )
        in_quota_order(walk)

        # What remains, as the records show it and in words: made again only when a victim
        # changes it (the records in between share it; nobody changes a record).
        remaining = {kind: target[kind] for kind in wanted}
        before = {leaf: dict(remaining)}
        left_words = amounts(remaining)
        in_order = f" in the order of {leaf}: "
        met = ""  # "target already met ..." once the target is met
        ranked: Iterable[tuple[int, Allocation]] = enumerate(walk, 1)
        if shown is not None:  # the shown candidates, and the victims the numbers depend on
            ranked = [
                (rank, allocation)
                for rank, allocation in ranked
                if allocation.id in shown or allocation.id in position
            ]
        for rank, allocation in ranked:
            reason = reasons[allocation.id]
            if shown is not None and allocation.id not in shown:
                if reason == Reason.VICTIM:  # what the next candidates' notes depend on
                    subtract_into(remaining, allocation.resources)
                    for path in guarded:
                        add_into(removed.setdefault(path, {}), allocation.resources)
                    before = {leaf: dict(remaining)}
                    left_words = amounts(remaining)
                    number = position[allocation.id]
                    met = (
                        f"target already met: {leaf} remaining 0 after the {ordinal(number)} "
                        f"victim ({allocation.id}); "
                    )
                continue
            place = f"{ordinal(rank)}{in_order}{_quota_key(allocation, stamps)}"
            if reason == Reason.VICTIM:
                subtract_into(remaining, allocation.resources)
                for path in guarded:
                    add_into(removed.setdefault(path, {}), allocation.resources)
                had = left_words
                after = {leaf: dict(remaining)}
                left_words = amounts(remaining)
                left = left_words if remaining else f"0 ({leaf}'s target is met)"
                number = position[allocation.id]
                detail = (
                    f"victim #{number}, {place}; {leaf} had {had} left to free before it, "
                    f"{left} after"
                )
                notes[allocation.id] = Note(detail, rank, before, after)
                before = after
                met = (
                    f"target already met: {leaf} remaining 0 after the {ordinal(number)} victim "
                    f"({allocation.id}); "
                )
            elif reason == Reason.LAW2_BELOW_GUARANTEE:
                broken = broken_guarantee_text(
                    hierarchy, paths, state.usage, removed, allocation.resources
                )
                notes[allocation.id] = Note(f"{place}; but it {broken}", rank, before, before)
            elif not remaining and met:
                notes[allocation.id] = Note(f"{met}{place}", rank, before, before)
            else:
                detail = (
                    f"not needed: it uses none of the types {leaf} still has to free "
                    f"(remaining {left_words}); {place}"
                )
                notes[allocation.id] = Note(detail, rank, before, before)

    # Candidates of leaves given no share: one note per leaf, shared by its candidates.
    # (With ``only``: looked for only when a shown candidate has no note yet.)
    if shown is None or any(c in reasons and c not in notes for c in shown):
        unnoted_leaves = by_leaf.items()
    else:
        unnoted_leaves = {}.items()
    for leaf, allocations in unnoted_leaves:
        unnoted = [
            allocation.id
            for allocation in allocations
            if allocation.id not in notes and (shown is None or allocation.id in shown)
        ]
        if unnoted:
            notes.update(dict.fromkeys(unnoted, Note(_why_no_share(state, queue, leaf))))
    wanted = (
        reasons if shown is None else [candidate for candidate in shown if candidate in reasons]
    )
    if len(notes) < len(wanted):  # explained, but not running in this state
        nowhere = Note(_why_no_share(state, queue, ""))
        for candidate in wanted:
            notes.setdefault(candidate, nowhere)
    return notes


def _why_no_share(state: ClusterState, queue: str, leaf: str) -> str:
    """Why ``leaf`` was given no share of ``queue``'s target: ``queue`` has nothing it may free,
    or some queue on the way down takes no part (no usage, a run in progress below it), has
    nothing releasable on the target's types, or its share rounds to 0 (``quota._distribute``)."""
    hierarchy = state.hierarchy
    own = hierarchy.queues[queue]
    usage = state.usage.get(queue, {})
    target = quota_target(usage, own.max, own.guaranteed)
    if not target:
        kinds = sorted(own.max)
        return (
            f"not needed: {queue} has nothing it may free (usage {amounts(only(usage, kinds))}, "
            f"max {amounts(own.max)}, guarantee {amounts(only(own.guaranteed, kinds))}): its "
            "usage is not above both"
        )
    if not leaf or not hierarchy.is_within(leaf, queue):
        return f"not needed for {queue}'s target"
    if leaf not in hierarchy.queues:  # tasks left in a queue since deleted from the config
        return (
            f"not needed: {leaf} is not in the config (removed, its tasks still running), so it "
            f"gets no share of {queue}'s target {amounts(target)}"
        )
    share = resources.positive_part(target)
    parent = queue
    steps = hierarchy.path_from_root(leaf)
    for child in steps[steps.index(queue) + 1 :]:
        prefix = f"not needed: {leaf} got no share of {queue}'s target {amounts(target)}"
        if resources.is_zero(state.usage.get(child, {})):
            return f"{prefix}: {child} has no usage"
        if not _takes_part(state, child):
            busy = sorted(run for run in state.running_runs if hierarchy.is_within(run, child))
            return f"{prefix}: a run is in progress on {', '.join(busy)}, so {child} takes no part"
        releasable = {
            sibling: releasable_of(state.usage[sibling], hierarchy.queues[sibling].guaranteed)
            for sibling in hierarchy.children(parent)
            if _takes_part(state, sibling)
        }
        shares = split_largest_remainder(share, releasable)
        if child not in shares:
            kinds = sorted(share)
            mine = only(releasable[child], kinds)
            if not any(mine.values()):
                return (
                    f"{prefix}: {child} usage {amounts(only(state.usage[child], kinds))} is not "
                    "above its guarantee "
                    f"{amounts(only(hierarchy.queues[child].guaranteed, kinds))}, so it has "
                    "nothing releasable"
                )
            return (
                f"{prefix}: {child}'s share of {parent}'s {amounts(share)} rounds to 0 "
                f"(releasable {amounts(mine)})"
            )
        share, parent = shares[child], child
    return f"not needed for {queue}'s target"
