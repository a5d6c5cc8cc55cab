"""Why each candidate of a plan was or was not chosen, with the facts and the numbers.

A plan's explanations give one reason code per candidate. An auditor asking "why this task?" needs
more: the facts the decision used (queue, node, resources, priority, ...) as they were when the
plan was made, where the candidate stood in the policy's order, and the numbers behind its reason
("root.research usage memory 580Gi above guarantee 300Gi", "priority 10 > ask priority 5", "3rd in
the order: non-originator, priority 0, ..."). ``explain`` returns that, one ``CandidateRecord``
per explained candidate, so the services can store it with the run and every page, export and API
answer reads the stored record instead of the cluster as it is now.

This module never decides. The reasons, the victims and their order are the plan's; each policy's
walk is replayed on the same ``ClusterState`` only to say where each candidate stood (its rank in
the walk, what remained of the target before and after it) and which number decided. Its input is
the state the plan was made on (for a quota change: ``policies.with_new_max``), the plan, and the
plan's subject: the queue path of a quota plan, the ask id of an ask plan, the job id (or the id
of one of its asks) of a job plan.

The replays follow the policy modules step by step and use their own helpers where those exist,
so the two cannot drift apart; ``tests/unit/test_explain.py`` pins each reason's text.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

from preemption import resources
from preemption.hierarchy import Hierarchy
from preemption.inter_queue import (
    _below_common_ancestor,
    _node_usable,
    _queue_shortfall,
    _reserved_for_others,
    _room_missing,
    _used_by_node,
    _victim_order,
)
from preemption.job import JobUsage, _job, _usage_without, admits
from preemption.model import (
    Allocation,
    Ask,
    ClusterState,
    Explanations,
    Options,
    Outcome,
    Plan,
    PolicyName,
    Reason,
)
from preemption.priority import (
    _budget_violating,
    _demand,
    _importance_key,
    _reserved_by_node,
    _room,
)
from preemption.quota import (
    _takes_part,
    quota_target,
    releasable_of,
    split_largest_remainder,
    victim_order_key,
)
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

__all__ = [
    "POLICY_ORDERS",
    "CandidateRecord",
    "amounts",
    "explain",
    "ordinal",
    "subject_facts",
]

#: What remained of a plan's goal at one moment, per scope: a leaf queue's path (quota), or
#: ``node <name>`` and the paths of exceeded queues (what an ask still needed).
Remaining = dict[str, dict[str, int]]

#: The order each policy walks its candidates in (SPEC 4.1 to 4.5), for the glossary and the
#: exports; a victim's text gives its rank in this order and its own values of the key.
POLICY_ORDERS: dict[str, str] = {
    PolicyName.QUOTA: "per leaf queue (leaves in path order): non-originator before originator, "
    "lower priority first, allow_preemption true before false, newest first, then id",
    PolicyName.INTER_QUEUE: "per node: lower priority first, non-originator first, newest first, "
    "then id",
    PolicyName.REQUIRED_NODE: "classes regular, originator, opted out; within a class lower "
    "priority first, newest first, smaller size on the node first, then id",
    PolicyName.PRIORITY: "reprieve walk on the chosen node: budget-violating tasks first, then the "
    "others; each group most important first (higher priority, QoS Guaranteed, Burstable, "
    "BestEffort, older first, then id)",
    PolicyName.JOB: "reprieve walk, most important first: higher priority, older first, then id",
}


class CandidateRecord(NamedTuple):
    """One explained candidate: the plan's verdict, the specific reason in words with its
    numbers, and the facts the decision used, as the state had them.

    ``position`` is the 1-based place among the plan's victims (None for the others); ``rank``
    the 1-based place in the walk the policy made over the candidates that passed its static
    rules (None for those stopped by a static rule). ``remaining_before`` and ``remaining_after``
    say what was still to be freed when the walk reached the candidate and after it.

    A named tuple (immutable, read by field name): a big plan has 100,000 records, and a tuple
    is made several times faster than a frozen dataclass, which sets each of its 19 fields
    through ``object.__setattr__`` (issue 14).
    """

    candidate: str
    accepted: bool
    reason: Reason
    detail: str
    position: int | None = None
    rank: int | None = None
    queue: str = ""
    application: str = ""
    node: str = ""
    resources: Mapping[str, int] = MappingProxyType({})
    priority: int | None = None
    qos: str = ""
    created_at: datetime | None = None
    originator: bool | None = None
    allow_preemption: bool | None = None
    budget: str = ""
    required_node: str = ""
    remaining_before: Remaining | None = None
    remaining_after: Remaining | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: canonical integers, ``created_at`` in ISO 8601 UTC."""
        return {
            "candidate": self.candidate,
            "accepted": self.accepted,
            "reason": str(self.reason),
            "detail": self.detail,
            "position": self.position,
            "rank": self.rank,
            "queue": self.queue,
            "application": self.application,
            "node": self.node,
            "resources": dict(sorted(self.resources.items())),
            "priority": self.priority,
            "qos": self.qos,
            "created_at": when(self.created_at) if self.created_at else None,
            "originator": self.originator,
            "allow_preemption": self.allow_preemption,
            "budget": self.budget,
            "required_node": self.required_node,
            "remaining_before": self.remaining_before,
            "remaining_after": self.remaining_after,
        }


class _Note(NamedTuple):
    """What a policy's replay says of one candidate."""

    detail: str
    rank: int | None = None
    before: Remaining | None = None
    after: Remaining | None = None


Notes = dict[str, _Note]


def explain(
    state: ClusterState, plan: Plan, subject: str, options: Options | None = None
) -> list[CandidateRecord]:
    """One record per explanation of ``plan`` (sorted by candidate id, as the plan's are).

    ``state`` is the state the plan was made on; ``subject`` the queue path (quota), the ask id
    (inter-queue, required-node, priority) or the job id or one of its asks' ids (job);
    ``options`` those the plan was made with (the defaults when None). A plan without
    explanations (``not_triggered``) has no records.
    """
    if not plan.explanations:
        return []
    with _collector_paused():
        return _explain(state, plan, subject, options or Options())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the records are made.

    A big plan's 100,000 records (and their notes) all stay alive until the end, and every
    collection their allocation triggers scans all of them again: a quarter of the time here
    (issue 14). Nothing made here forms a reference cycle, so reference counting frees whatever
    is dropped, and the collector's next run after the pause sees the records once. It is
    switched back on only if it was on (a caller, or another thread in here, that switched it
    off keeps it off until it switches it on again).
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _explain(
    state: ClusterState, plan: Plan, subject: str, options: Options
) -> list[CandidateRecord]:
    describe = _DESCRIBERS[plan.policy]
    notes = describe(state, plan, subject, options)
    by_id = {allocation.id: allocation for allocation in state.allocations}
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    records = []
    append = records.append
    for candidate, accepted, reason in _verdicts(plan):
        # Popped: the note is done with once its record is made (fewer objects kept alive).
        note = notes.pop(candidate, None) or _Note(_unexplained(reason))
        place = position.get(candidate) if accepted else None
        allocation = by_id.get(candidate)
        if allocation is None:
            append(
                CandidateRecord(
                    candidate,
                    accepted,
                    reason,
                    note.detail,
                    place,
                    note.rank,
                    remaining_before=note.before,
                    remaining_after=note.after,
                )
            )
            continue
        # The facts the decision used, positionally in field order (one record per candidate:
        # this loop runs 100,000 times for a big plan).
        append(
            CandidateRecord(
                candidate,
                accepted,
                reason,
                note.detail,
                place,
                note.rank,
                allocation.queue,
                allocation.app,
                allocation.node,
                allocation.resources,
                allocation.priority,
                str(allocation.qos) if allocation.qos else "",
                allocation.created_at,
                allocation.originator,
                allocation.allow_preemption,
                allocation.pdb or "",
                allocation.required_node or "",
                note.before,
                note.after,
            )
        )
    return records


def _verdicts(plan: Plan) -> Iterable[tuple[str, bool, Reason]]:
    """(candidate, accepted, reason) of each explanation, by candidate id; from the policy's
    own map when the plan kept it (no ``Explanation`` made per candidate)."""
    explanations = plan.explanations
    if not isinstance(explanations, Explanations):
        return explanations
    reasons, accepted = explanations.reasons, explanations.accepted
    return (
        (candidate, candidate in accepted, reasons[candidate])
        for candidate in explanations.candidates
    )


def _reasons(plan: Plan) -> Mapping[str, Reason]:
    """Candidate -> reason of ``plan`` (the policy's own map when the plan kept it)."""
    if isinstance(plan.explanations, Explanations):
        return plan.explanations.reasons
    return {explanation.candidate: explanation.reason for explanation in plan.explanations}


def _unexplained(reason: Reason) -> str:
    """Only for a candidate the replay did not reach (it should reach every one)."""
    return f"reason {reason}"


def subject_facts(state: ClusterState, plan: Plan, subject: str) -> dict[str, Any]:
    """What the plan was for, as the state had it (JSON; canonical integers): the queue with its
    usage, max, guarantee and target (quota); the ask (inter-queue, required-node, priority,
    with the fence root for inter-queue); the job with its asks, priority and request (job)."""
    if plan.policy == PolicyName.QUOTA:
        queue = state.hierarchy.queues[subject]
        usage = dict(sorted(state.usage.get(subject, {}).items()))
        return {
            "queue": subject,
            "usage": usage,
            "max": dict(sorted(queue.max.items())),
            "guaranteed": dict(sorted(queue.guaranteed.items())),
            "target": quota_target(usage, queue.max, queue.guaranteed),
        }
    if plan.policy == PolicyName.JOB:
        job = _job(state, _job_id(state, subject))
        if job is None:
            return {"job": subject}
        return {
            "job": _job_id(state, subject),
            "queue": job.queue,
            "priority": job.priority,
            "preemptible": job.preemptible,
            "request": dict(job.request),
            "asks": [ask.id for ask in job.asks],
        }
    ask = state.ask(subject)
    facts: dict[str, Any] = {
        "ask": ask.id,
        "application": ask.app,
        "queue": ask.queue,
        "priority": ask.priority,
        "resources": dict(sorted(ask.resources.items())),
        "created_at": when(ask.created_at),
        "preemption_policy": str(ask.preemption_policy),
        "required_node": ask.required_node or "",
    }
    if plan.policy == PolicyName.INTER_QUEUE:
        facts["fence"] = state.hierarchy.fence_root(ask.queue, ask.resources, state.usage)
    return facts


# --------------------------------------------------------------------------------------------
# Words and numbers
# --------------------------------------------------------------------------------------------


_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{_SUFFIXES.get(number % 10, 'th')}"


def amounts(values: Mapping[str, int]) -> str:
    """``memory 580Gi, vcore 1500m``: exact quantities, types by name; ``nothing`` when empty."""
    parts = [f"{name} {_quantity(name, values[name])}" for name in sorted(values)]
    return ", ".join(parts) if parts else "nothing"


@lru_cache(maxsize=65_536)
def _quantity(kind: str, value: int) -> str:
    """``resources.format_quantity``, remembered: a big plan repeats the same few sizes and
    remaining amounts many thousands of times."""
    return resources.format_quantity(value, resource=kind)


def when(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, as the API writes times."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def _only(values: Mapping[str, int], kinds: Iterable[str]) -> dict[str, int]:
    return {kind: values.get(kind, 0) for kind in kinds}


def _positive(values: Mapping[str, int]) -> dict[str, int]:
    return {kind: value for kind, value in sorted(values.items()) if value > 0}


def _percent(value: Fraction) -> str:
    """An exact percentage: ``25%``, or one decimal (``33.3%``) when it is not whole."""
    hundred = value * 100
    if hundred.denominator == 1:
        return f"{hundred.numerator}%"
    return f"{float(hundred):.1f}%"


def _subtract_into(remaining: dict[str, int], freed: Mapping[str, int]) -> None:
    """What a victim leaves of ``remaining``: types it covers are dropped (the policies'
    own bookkeeping: a remaining amount is always positive)."""
    for kind in list(remaining):
        left = remaining[kind] - freed.get(kind, 0)
        if left > 0:
            remaining[kind] = left
        else:
            del remaining[kind]


def _add_into(total: dict[str, int], amount: Mapping[str, int]) -> None:
    for kind, value in amount.items():
        total[kind] = total.get(kind, 0) + value


def _broken_guarantee(
    hierarchy: Hierarchy,
    paths: Iterable[str],
    usage: Mapping[str, Mapping[str, int]],
    removed: Mapping[str, Mapping[str, int]],
    amount: Mapping[str, int],
) -> str:
    """Law 2 in numbers: the first queue and type (in the policies' own order) whose guarantee
    the task would break, counting what earlier victims of the plan already take from it."""
    for path in paths:
        before = usage.get(path, {})
        gone = removed.get(path, {})
        for kind, floor in hierarchy.queues[path].guaranteed.items():
            used = before.get(kind, 0)
            if used < floor or used - gone.get(kind, 0) - amount.get(kind, 0) >= floor:
                continue
            earlier = (
                f", earlier victims {_quantity(kind, gone[kind])}" if gone.get(kind, 0) else ""
            )
            return (
                f"would take {path} below its guarantee of {kind} {_quantity(kind, floor)} "
                f"(usage {_quantity(kind, used)}{earlier}, "
                f"task {_quantity(kind, amount.get(kind, 0))})"
            )
    return "would take a queue below its guarantee"


# --------------------------------------------------------------------------------------------
# Quota (SPEC 4.1)
# --------------------------------------------------------------------------------------------


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


def _describe_quota(state: ClusterState, plan: Plan, queue: str, options: Options) -> Notes:
    """Replay ``quota._Selection`` leaf by leaf (leaves in path order): static rules, then the
    walk in the seed's order with ``remaining`` and the guarantees taken so far; candidates of
    leaves given no share are told why their leaf got none."""
    del options  # the quota policy has no tunables
    hierarchy = state.hierarchy
    reasons = _reasons(plan)
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
        # Only a queue with a guarantee can be taken below it (``_broken_guarantee``).
        guarded = [path for path in paths if hierarchy.queues[path].guaranteed]
        walk: list[Allocation] = []
        for allocation in by_leaf.get(leaf, []):
            if allocation.required_node is not None:
                notes[allocation.id] = _Note(
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
                    notes[allocation.id] = _Note(
                        f"uses {amounts(used)}; {leaf} has to free {amounts(target)}: no type "
                        "in common"
                    )
        walk.sort(key=victim_order_key)

        # What remains, as the records show it and in words: made again only when a victim
        # changes it (the records in between share it; nobody changes a record).
        remaining = {kind: target[kind] for kind in wanted}
        before = {leaf: dict(remaining)}
        left_words = amounts(remaining)
        in_order = f" in the order of {leaf}: "
        met = ""  # "target already met ..." once the target is met
        for rank, allocation in enumerate(walk, 1):
            place = f"{ordinal(rank)}{in_order}{_quota_key(allocation, stamps)}"
            reason = reasons[allocation.id]
            if reason == Reason.VICTIM:
                _subtract_into(remaining, allocation.resources)
                for path in guarded:
                    _add_into(removed.setdefault(path, {}), allocation.resources)
                had = left_words
                after = {leaf: dict(remaining)}
                left_words = amounts(remaining)
                left = left_words if remaining else f"0 ({leaf}'s target is met)"
                number = position[allocation.id]
                detail = (
                    f"victim #{number}, {place}; {leaf} had {had} left to free before it, "
                    f"{left} after"
                )
                notes[allocation.id] = _Note(detail, rank, before, after)
                before = after
                met = (
                    f"target already met: {leaf} remaining 0 after the {ordinal(number)} victim "
                    f"({allocation.id}); "
                )
            elif reason == Reason.LAW2_BELOW_GUARANTEE:
                broken = _broken_guarantee(
                    hierarchy, paths, state.usage, removed, allocation.resources
                )
                notes[allocation.id] = _Note(f"{place}; but it {broken}", rank, before, before)
            elif not remaining and met:
                notes[allocation.id] = _Note(f"{met}{place}", rank, before, before)
            else:
                detail = (
                    f"not needed: it uses none of the types {leaf} still has to free "
                    f"(remaining {left_words}); {place}"
                )
                notes[allocation.id] = _Note(detail, rank, before, before)

    # Candidates of leaves given no share: one note per leaf, shared by its candidates.
    for leaf, allocations in by_leaf.items():
        unnoted = [allocation.id for allocation in allocations if allocation.id not in notes]
        if unnoted:
            notes.update(dict.fromkeys(unnoted, _Note(_why_no_share(state, queue, leaf))))
    if len(notes) < len(reasons):  # explained, but not running in this state
        nowhere = _Note(_why_no_share(state, queue, ""))
        for candidate in reasons:
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
            f"not needed: {queue} has nothing it may free (usage {amounts(_only(usage, kinds))}, "
            f"max {amounts(own.max)}, guarantee {amounts(_only(own.guaranteed, kinds))}): its "
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
            mine = _only(releasable[child], kinds)
            if not any(mine.values()):
                return (
                    f"{prefix}: {child} usage {amounts(_only(state.usage[child], kinds))} is not "
                    "above its guarantee "
                    f"{amounts(_only(hierarchy.queues[child].guaranteed, kinds))}, so it has "
                    "nothing releasable"
                )
            return (
                f"{prefix}: {child}'s share of {parent}'s {amounts(share)} rounds to 0 "
                f"(releasable {amounts(mine)})"
            )
        share, parent = shares[child], child
    return f"not needed for {queue}'s target"


# --------------------------------------------------------------------------------------------
# Task rules shared by the ask policies
# --------------------------------------------------------------------------------------------


def _higher_priority(allocation: Allocation, priority: int, whose: str, equal_may_go: bool) -> str:
    relation = ">" if allocation.priority > priority else "="
    rule = (
        "only lower or equal priorities may go" if equal_may_go else "only lower priorities may go"
    )
    return f"priority {allocation.priority} {relation} {whose} priority {priority}: {rule}"


def _daemonset(allocation: Allocation) -> str:
    return (
        f"DaemonSet pod itself (required node {allocation.required_node}): never a victim of "
        "another ask"
    )


def _no_shared(allocation: Allocation, needed: Mapping[str, int]) -> str:
    return (
        f"uses {amounts(allocation.resources)}; the ask needs {amounts(needed)}: no type in common"
    )


def _opted_out() -> str:
    return "allow_preemption is false: the task opted out of preemption"


# --------------------------------------------------------------------------------------------
# Inter-queue (SPEC 4.2)
# --------------------------------------------------------------------------------------------


def _describe_inter_queue(state: ClusterState, plan: Plan, ask_id: str, options: Options) -> Notes:
    """Queue and task rules with their numbers, then a replay of the node pass that explains the
    plan (the chosen node, else the first usable one by name): what the ask still needed on the
    node and under each exceeded queue, before and after each candidate."""
    del options
    ask = state.ask(ask_id)
    hierarchy = state.hierarchy
    reasons = _reasons(plan)
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
            notes[allocation.id] = _Note(text)

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
        notes[allocation.id] = _Note(f"runs on {allocation.node}; {why}")
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
            _subtract_into(room, allocation.resources)
            for path in list(shortfall):
                if hierarchy.is_within(allocation.queue, path):
                    _subtract_into(shortfall[path], allocation.resources)
                    if not shortfall[path]:
                        del shortfall[path]
            for path in protected:
                _add_into(removed.setdefault(path, {}), allocation.resources)
            after = _still_needed(explained, room, shortfall)
            last = allocation
            if allocation.id in position:
                detail = (
                    f"victim #{position[allocation.id]}, {place}; {queue_facts[allocation.queue]}; "
                    f"the ask still needed {_needs_text(before)} before it, "
                    f"{_needs_text(after)} after"
                )
                notes[allocation.id] = _Note(detail, rank, before, after)
            else:
                final.append((allocation.id, rank, before))
                queue_fact = queue_facts[allocation.queue]
                notes[allocation.id] = _Note(f"{place}; {queue_fact}", rank, before)
        elif reason == Reason.LAW2_BELOW_GUARANTEE:
            broken = _broken_guarantee(
                hierarchy, protected, state.usage, removed, allocation.resources
            )
            notes[allocation.id] = _Note(f"{place}; but it {broken}", rank, before, before)
        elif not (room or shortfall) and last is not None:
            detail = (
                f"not needed: the ask fits {explained} after victim #{position.get(last.id, '-')} "
                f"({last.id}); {place}"
            )
            notes[allocation.id] = _Note(detail, rank, before, before)
        else:
            detail = (
                f"not needed: it frees none of what the ask still needs "
                f"({_needs_text(before)}); {place}"
            )
            notes[allocation.id] = _Note(detail, rank, before, before)
    left = _still_needed(explained, room, shortfall)
    for candidate, rank, before in final:
        # does_not_help: the pass took it, but the node could not be freed enough.
        detail = (
            f"{notes[candidate].detail}; it would have been taken, but even then the ask would "
            f"still need {_needs_text(left)}: nobody is preempted"
        )
        notes[candidate] = _Note(detail, rank, before, left)
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
        return _higher_priority(allocation, ask.priority, "ask", equal_may_go=True)
    if reason == Reason.LAW1_OPTED_OUT:
        return _opted_out()
    if reason == Reason.DAEMONSET_EXCLUDED:
        return _daemonset(allocation)
    if reason == Reason.NO_SHARED_RESOURCE:
        return _no_shared(allocation, ask.resources)
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
            f"usage {amounts(_only(state.usage.get(fence, {}), kinds))} plus the ask "
            f"{amounts(_only(ask.resources, kinds))} would exceed {fence}'s max "
            f"{amounts(_only(queue.max, kinds))}"
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
        f"{kind} {_quantity(kind, usage.get(kind, 0))} {relation} "
        f"{_quantity(kind, guaranteed.get(kind, 0))}"
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


# --------------------------------------------------------------------------------------------
# Priority (SPEC 4.4)
# --------------------------------------------------------------------------------------------


def _importance(allocation: Allocation) -> str:
    qos = str(allocation.qos) if allocation.qos else "Burstable (unset)"
    return f"priority {allocation.priority}, QoS {qos}, created {when(allocation.created_at)}"


def _describe_priority(state: ClusterState, plan: Plan, ask_id: str, options: Options) -> Notes:
    """Reasons off the chosen node (equal or higher priority, another node), then a replay of
    the chosen node's budgets and reprieve walk: what the ask still lacked on the node before
    and after each victim, and why each reprieved task could stay."""
    del options
    ask = state.ask(ask_id)
    reasons = _reasons(plan)
    demand = _demand(ask)
    notes: Notes = {}
    chosen = plan.node
    for allocation in state.running:
        reason = reasons.get(allocation.id)
        if reason is None or allocation.node == chosen:
            continue
        if reason == Reason.LAW6_HIGHER_PRIORITY:
            notes[allocation.id] = _Note(
                _higher_priority(allocation, ask.priority, "ask", equal_may_go=False)
            )
        elif chosen:
            notes[allocation.id] = _Note(f"runs on {allocation.node}; the plan chose {chosen}")
        else:
            node = state.nodes_by_name.get(allocation.node)
            why = (
                f"{allocation.node} is not schedulable"
                if node is None or not node.schedulable
                else f"even with every lower-priority task gone the ask would not fit "
                f"{allocation.node}"
            )
            notes[allocation.id] = _Note(
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
        notes[allocation.id] = _Note(
            _higher_priority(allocation, ask.priority, "ask", equal_may_go=False)
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
            room_before = _positive(free)
            for name, value in allocation.resources.items():
                free[name] = free.get(name, 0) - value
            detail = (
                f"reprieved, {place}; with it kept the ask still fits {chosen} (free room "
                f"{amounts(_only(room_before, demand))} before putting it back, "
                f"{amounts(_only(free, demand))} after; the ask needs {amounts(demand)})"
            )
            notes[allocation.id] = _Note(detail, rank)
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
        notes[allocation.id] = _Note(detail, rank, {scope: before}, {scope: after})
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


# --------------------------------------------------------------------------------------------
# Required node (SPEC 4.3)
# --------------------------------------------------------------------------------------------

_CLASS_NAMES = {0: "regular", CLASS_ORIGINATOR: "originator", CLASS_OPTED_OUT: "opted out"}


def _describe_required_node(
    state: ClusterState, plan: Plan, ask_id: str, options: Options
) -> Notes:
    """Static rules, then the strategy that decided (the first in ``victim_strategy`` that
    found victims, else the last): ``single`` says how each candidate compares as the one
    victim; ``multiple`` replays the walk with what the node still lacked."""
    ask = state.ask(ask_id)
    node_name = ask.required_node or ""
    reasons = _reasons(plan)
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
            notes[allocation.id] = _Note(_daemonset(allocation))
        elif reason == Reason.LAW6_HIGHER_PRIORITY:
            notes[allocation.id] = _Note(
                _higher_priority(allocation, ask.priority, "ask", equal_may_go=True)
            )
        elif reason == Reason.NO_SHARED_RESOURCE:
            notes[allocation.id] = _Note(_no_shared(allocation, demand))
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
            f"{_percent(candidate.key[3])} of {node_name}"
        )
        reason = reasons[allocation.id]
        before = _positive(remaining)
        if strategy == SINGLE:
            notes[allocation.id] = _single_note(
                candidate, candidates, reason, plan, demand, missing, options, place, rank
            )
        elif reason == Reason.TOO_MANY_VICTIMS:
            notes[allocation.id] = _Note(
                f"{place}; making room on {node_name} ({amounts(before)} lacking) would need "
                f"more than max_victims {options.max_victims} victims: nobody is preempted",
                rank,
            )
        elif reason == Reason.VICTIM:
            for name in remaining:
                remaining[name] -= allocation.resources.get(name, 0)
            after = _positive(remaining)
            last = allocation.id
            notes[allocation.id] = _Note(
                f"victim #{position[allocation.id]} (multiple strategy), {place}; {node_name} "
                f"lacked {amounts(before)} before it, {amounts(after)} after",
                rank,
                {scope: before},
                {scope: after},
            )
        elif not before and last:
            notes[allocation.id] = _Note(
                f"not needed: the ask fits {node_name} after victim #{position[last]} ({last}); "
                f"{place}",
                rank,
                {scope: before},
                {scope: before},
            )
        else:
            notes[allocation.id] = _Note(
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
) -> _Note:
    """A candidate of the ``single`` pass: the victim, or why it was not the one."""
    allocation = candidate.allocation
    node = allocation.node
    lacks = _positive(missing)
    distance = deviation(allocation.resources, demand)
    limit = f"{options.deviation_percent}%"
    if reason == Reason.VICTIM:
        after = _positive({n: v - allocation.resources.get(n, 0) for n, v in missing.items()})
        return _Note(
            f"victim #1, the single victim: alone it frees what {node} lacks ({amounts(lacks)}) "
            f"and its size deviates {_percent(distance)} from the ask's (limit {limit}); {place}",
            rank,
            {f"node {node}": lacks},
            {f"node {node}": after},
        )
    if reason == Reason.TARGET_MET:
        victim = next(c for c in candidates if plan.victims and c.id == plan.victims[0])
        return _Note(
            f"not needed: its class {_CLASS_NAMES[candidate.klass]} comes after the single "
            f"victim's class {_CLASS_NAMES[victim.klass]}; {place}",
            rank,
        )
    if not all(allocation.resources.get(n, 0) >= need for n, need in missing.items()):
        return _Note(
            f"as the single victim it is too small: {node} lacks {amounts(lacks)} and it frees "
            f"{amounts(_only(allocation.resources, lacks))}; {place}",
            rank,
        )
    if distance * 100 > options.deviation_percent:
        return _Note(
            f"as the single victim its size deviates {_percent(distance)} from the ask's, above "
            f"deviation_percent {limit}; {place}",
            rank,
        )
    victim = plan.victims[0] if plan.victims else ""
    victim_distance = next(
        (deviation(c.allocation.resources, demand) for c in candidates if c.id == victim),
        Fraction(0),
    )
    return _Note(
        f"the single victim {victim} deviates less from the ask ({_percent(victim_distance)} "
        f"against {_percent(distance)}) or comes first in the order; {place}",
        rank,
    )


# --------------------------------------------------------------------------------------------
# Job (SPEC 4.5)
# --------------------------------------------------------------------------------------------


def _job_id(state: ClusterState, subject: str) -> str:
    """The job of a job plan: ``subject`` itself when some ask belongs to a job of that name,
    else the job of the ask ``subject``."""
    if any(ask.job == subject for ask in state.asks):
        return subject
    ask = state.asks_by_id.get(subject)
    return ask.job if ask is not None and ask.job else subject


def _describe_job(state: ClusterState, plan: Plan, subject: str, options: Options) -> Notes:
    """Static rules against the job's priority, then a replay of the reprieve walk (most
    important first) with the queue's admission numbers; a victim whose return keeps admission
    was kept out because the job's asks would no longer all place."""
    del options
    job = _job(state, _job_id(state, subject))
    reasons = _reasons(plan)
    notes: Notes = {}
    if job is None:
        return notes
    walk = []
    for allocation in state.running:
        reason = reasons.get(allocation.id)
        if reason == Reason.LAW1_OPTED_OUT:
            notes[allocation.id] = _Note(_opted_out())
        elif reason == Reason.LAW6_HIGHER_PRIORITY:
            relation = ">" if allocation.priority > job.priority else "="
            notes[allocation.id] = _Note(
                f"priority {allocation.priority} {relation} job priority {job.priority}: only "
                "lower priorities may go"
            )
        elif reason is not None:
            walk.append(allocation)
    walk.sort(key=lambda a: (-a.priority, a.created_at, a.id))
    if plan.outcome == Outcome.DOES_NOT_HELP:
        for rank, allocation in enumerate(walk, 1):
            notes[allocation.id] = _Note(
                f"{ordinal(rank)} candidate (priority {allocation.priority}, created "
                f"{when(allocation.created_at)}): even with every candidate gone the job's asks "
                "do not all place, so nobody is preempted (all or nothing)",
                rank,
            )
        return notes

    hierarchy = state.hierarchy
    queue = hierarchy.queues[job.queue]
    types = tuple(sorted(job.request))
    in_queue = {a.id for a in state.running if hierarchy.is_within(a.queue, job.queue)}
    usage = _usage_without(state.running, in_queue, {a.id for a in walk}, types)
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    for rank, allocation in enumerate(walk, 1):
        place = (
            f"{ordinal(rank)} in the reprieve walk: priority {allocation.priority}, created "
            f"{when(allocation.created_at)}"
        )
        own = allocation.id in in_queue
        back = JobUsage(
            dict(usage.nonpreemptible),
            {
                n: v + (allocation.resources.get(n, 0) if own else 0)
                for n, v in usage.preemptible.items()
            },
        )
        if reasons[allocation.id] == Reason.NOT_NEEDED_AFTER_REPRIEVE:
            usage = back
            notes[allocation.id] = _Note(
                f"reprieved, {place}; with it kept the job still places and {job.queue} still "
                "admits it",
                rank,
            )
            continue
        if own and not admits(job.request, queue.guaranteed, queue.max, job.preemptible, back):
            why = f"{job.queue} would no longer admit the job ({_admission(job, queue, back)})"
        else:
            why = "the job's asks would no longer all place (first fit, largest first)"
        notes[allocation.id] = _Note(
            f"victim #{position.get(allocation.id, '-')}, {place}; with it kept {why}", rank
        )
    return notes


def _admission(job: Any, queue: Any, usage: JobUsage) -> str:
    """The first admission inequality that fails (``job.admits``), in numbers."""
    for name, amount in job.request.items():
        low = queue.guaranteed.get(name, 0)
        high = queue.max.get(name)
        held = usage.nonpreemptible.get(name, 0)
        shared = usage.preemptible.get(name, 0)
        if job.preemptible:
            if high is not None and min(low, held) + shared + amount > high:
                return (
                    f"{name}: min(guarantee {_quantity(name, low)}, non-preemptible usage "
                    f"{_quantity(name, held)}) + preemptible usage {_quantity(name, shared)} + "
                    f"request {_quantity(name, amount)} > max {_quantity(name, high)}"
                )
            continue
        if held + amount > low:
            return (
                f"{name}: non-preemptible usage {_quantity(name, held)} + request "
                f"{_quantity(name, amount)} > guarantee {_quantity(name, low)}"
            )
        if high is not None and held + shared + amount > high:
            return (
                f"{name}: usage {_quantity(name, held + shared)} + request "
                f"{_quantity(name, amount)} > max {_quantity(name, high)}"
            )
    return "admission fails"


_DESCRIBERS: dict[str, Callable[[ClusterState, Plan, str, Options], Notes]] = {
    PolicyName.QUOTA: _describe_quota,
    PolicyName.INTER_QUEUE: _describe_inter_queue,
    PolicyName.PRIORITY: _describe_priority,
    PolicyName.REQUIRED_NODE: _describe_required_node,
    PolicyName.JOB: _describe_job,
}
