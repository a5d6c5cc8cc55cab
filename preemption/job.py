"""Job-level (gang) preemption (SPEC 4.5, seed 004).

A job J -- every waiting ask that shares a ``job`` -- is all or nothing: its pods are placed
together or not at all (seed 004, "AllOrNothing"). When J cannot be placed, lower-priority
preemptible tasks anywhere in the cluster may be preempted for it, but only if that lets *every*
ask of J land; otherwise nobody is preempted (seed 004, story 2).

Steps (``plan_job``):

1. **J**: the asks of the job still waiting (``pending`` or ``reserved``), its queue Q, its
   priority (the highest of its asks') and whether it is preemptible (no ask opted out).
2. **Candidates**: running allocations anywhere with ``allow_preemption`` and a priority lower
   than J's; the others are ``law1_opted_out`` or ``law6_higher_priority``, in that order.
3. **Trigger**: no ask of J has ``preemption_policy: Never``; J cannot be placed on the free
   room of the schedulable nodes as they stand; and J passes admission on Q's usage counted as
   if every candidate in Q's subtree were gone. Otherwise ``not_triggered``.
4. **All or nothing**: remove every candidate and place J; if an ask does not fit,
   ``does_not_help`` and nobody is preempted.
5. **Reprieve**: walk the candidates most important first (higher priority, older, id) and put
   each back if J still places *from scratch* and admission still holds
   (``not_needed_after_reprieve``). The rest are the victims; ``nominations`` (ask id -> node)
   come from the final placement; outcome ``complete``.

**Placement** is a deterministic first fit: asks largest first by ``sum(ask[t] / capacity[t])``
over the types the ask requests (capacity summed over the schedulable nodes), ties by ask id;
each ask goes on the first node in name order with room. The reprieve re-places J from scratch
for every candidate put back, so this is the hot path (up to 100,000 candidates): ``_Room`` keeps
a max-tree per type so that "the first node with room" costs about log(nodes) instead of a scan;
a candidate can only change the placement if its node holds one of J's asks and has no room to
spare for it (first fit passed over every other node for lack of room, and less room there
changes nothing); and then ``_Gang`` replays the placement by runs of equal asks (a gang's pods
are mostly alike, and consecutive in the order), copying every stretch of nodes whose room did
not change and looking only at the changed nodes, the run's last node and the nodes after it, so
a replay costs a few steps rather than one search per ask (issue 14: the reprieve used to cost
46-144x a plain sort of the candidates). Each shortcut gives exactly the placement from scratch
(``tests/unit/test_job.py`` compares the plans with a naive reading of this section).

**Admission**, per type J requests (seed 004, "Quota Assignment"; Q's ``guaranteed`` plays
"min", its ``max`` "max"; a missing min is 0, a missing max unlimited):

- non-preemptible J: ``nonpreemptible_used + request <= min`` and ``used + request <= max``;
- preemptible J: ``min(min, nonpreemptible_used) + preemptible_used + request <= max``;

where ``used`` is the usage of Q's subtree without the candidates **(ours**: the seed checks
before preemption, which would refuse a job that only needs Q's own preemptible tasks moved**)**,
split by each allocation's ``allow_preemption``.

Judgement calls where SPEC 4.5 is silent (each also commented where it is implemented):

- "Pending" asks are those in state ``pending`` or ``reserved``: a reserved ask still waits for
  its node. A job with no such ask is ``not_triggered`` (nothing to place); asks already allocated
  are running allocations and count like any other (usually ``law6_higher_priority``: same
  priority as J).
- A job whose asks span queues (a misconfigured pod group) is planned with the queue of its first
  ask by id, so the answer is deterministic rather than an error in the sweep.
- "Q's max" is Q's own ``max``, as SPEC 4.5 says, not the effective max of its ancestors (the
  ancestors' limits still bind the scheduler when it places the job).
- J's "types" are the types its asks request a positive amount of: a ``gpu: 0`` entry asks for
  nothing, so it neither blocks admission nor the fit, nor makes an ask unplaceable on a cluster
  without GPUs. A requested type with no capacity on any schedulable node makes the ask, and so
  J, unplaceable.
- An ask with ``preemption_policy: Never`` makes the whole job ``not_triggered`` (SPEC 4.5,
  changed 2026-11-24): the gang is placed all or nothing, so any preemption for J is also
  preemption on behalf of that ask, which its policy forbids. Only J's asks count (the waiting
  ones): an ask already allocated or removed is no longer part of J. Like every other
  ``not_triggered`` plan it carries no explanations and so no reason code: SPEC names none for
  it, and no candidate was considered (4.2 and 4.4 treat a ``Never`` ask the same way).
- ``options.soft_eviction`` does not change the plan: it changes how the services evict the
  victims (labelled and handed to the cluster rather than released at once).
- Explanations cover every running allocation of the cluster (candidates may be anywhere). In a
  ``complete`` plan the candidates are ``victim`` or ``not_needed_after_reprieve``; in a
  ``does_not_help`` plan they are ``victim`` with ``accepted`` false (they would all have had to
  go, and even that does not place J). A ``not_triggered`` plan has no explanations: no candidate
  was considered (as in 4.3 and 4.4).
- Victims are listed in the order of the reprieve walk (most important first).
- "Do not plan a job again while its earlier victims are still preempting" (SPEC 4.0, seed 004
  step 7) is the sweep's rule: the engine cannot tell whose victims a preempting task is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from itertools import accumulate, groupby, islice

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
)

__all__ = ["JobUsage", "admits", "first_fit", "placement_order", "plan_job", "reprieve_order_key"]

#: Ask states that still wait to be placed.
_WAITING_STATES = frozenset({AskState.PENDING, AskState.RESERVED})

#: Room of a padding leaf of ``_Room``'s trees: below any positive need.
_NO_NODE = -1

#: How many nodes ``_Room.first_index`` looks at one by one before it searches the trees.
_PROBE = 4

#: What an ask or an allocation takes on the job's types: (type index, positive amount) pairs.
Need = tuple[tuple[int, int], ...]


@dataclass
class JobUsage:
    """Usage of Q's subtree on the job's types, split by ``allow_preemption`` (seed 004)."""

    nonpreemptible: dict[str, int]
    preemptible: dict[str, int]


@dataclass(frozen=True)
class _Job:
    """J as SPEC 4.5 sees it."""

    asks: tuple[Ask, ...]
    queue: str
    priority: int
    preemptible: bool
    request: dict[str, int]


def plan_job(state: ClusterState, job: str, now: datetime, options: Options) -> Plan:
    """Plan preemption for the whole job ``job`` (SPEC 4.5).

    ``now`` is not needed (4.5 has no delay) and ``options.soft_eviction`` only changes how the
    services evict; both are taken so every policy has the same signature.

    Steps:
    1. Collect J; if any of its asks has ``preemption_policy: Never``, ``not_triggered``.
    2. Give every running allocation its static reason or make it a candidate. Trigger: J does
       not place as the cluster stands, and admission holds with the candidates of Q's subtree
       gone; else ``not_triggered``.
    3. Remove every candidate and place J; if it does not place, ``does_not_help``.
    4. Reprieve the candidates most important first; the rest are the victims.
    """
    found = _job(state, job)
    if found is None:
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)
    # SPEC 4.5 trigger: one ask that may not preempt keeps the whole gang from preempting.
    if any(ask.preemption_policy == PreemptionPolicy.NEVER for ask in found.asks):
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)
    candidates, kept, reasons = _candidates(state.running, found.priority)
    types = tuple(sorted(found.request))
    order = placement_order(found.asks, state.nodes)
    needs = None if order is None else _needs(order, types)
    # One pass over the running allocations gives both rooms: with every candidate gone, and
    # as the cluster stands (the candidates' share taken as well).
    names, free, held, moves = _rooms(state.nodes, kept, candidates, types)
    if needs is not None:
        standing = [
            [f - h for f, h in zip(a, b, strict=True)] for a, b in zip(free, held, strict=True)
        ]
        if _Room(names, standing).place(needs) is not None:
            return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)

    # SPEC 4.5 "Q's max": Q's own max, not the effective max of its ancestors (judgement call).
    queue = state.hierarchy.queues[found.queue]
    in_queue = _in_queue(state, found.queue)
    usage = _usage_without(kept, in_queue, set(), types)
    if not admits(found.request, queue.guaranteed, queue.max, found.preemptible, usage):
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)

    room = _Room(names, free)
    placement = None if needs is None else room.place(needs)
    if needs is None or placement is None:
        # All or nothing (seed 004, story 2): J does not place even with every candidate gone.
        # Every candidate would have had to go: reason ``victim``, but nobody is accepted.
        for allocation in candidates:
            reasons[allocation.id] = Reason.VICTIM
        return Plan(
            PolicyName.JOB, Outcome.DOES_NOT_HELP, explanations=explanations_from(reasons, ())
        )

    gang = _Gang(room, needs, placement)
    walk = _Reprieve(found, queue.guaranteed, queue.max, in_queue, usage, gang)
    victims = _reprieve(candidates, moves, walk)
    reasons.update(dict.fromkeys([a.id for a in candidates], Reason.NOT_NEEDED_AFTER_REPRIEVE))
    reasons.update(dict.fromkeys(victims, Reason.VICTIM))
    return Plan(
        PolicyName.JOB,
        Outcome.COMPLETE,
        victims=victims,
        nominations=gang.nominations(),
        explanations=explanations_from(reasons, victims),
    )


def _in_queue(state: ClusterState, queue: str) -> set[str]:
    """Ids of the running allocations of ``queue``'s subtree (one test per leaf queue)."""
    within: dict[str, bool] = {}
    ids = set()
    for allocation in state.running:
        inside = within.get(allocation.queue)
        if inside is None:
            inside = within[allocation.queue] = state.hierarchy.is_within(allocation.queue, queue)
        if inside:
            ids.add(allocation.id)
    return ids


def _rooms(
    nodes: Sequence[Node],
    kept: Iterable[Allocation],
    candidates: Iterable[Allocation],
    types: tuple[str, ...],
) -> tuple[list[str], list[list[int]], list[list[int]], list[tuple[int, Need]]]:
    """The schedulable nodes by name; per type, their room with every candidate gone (capacity,
    a missing type 0, minus the ``kept`` allocations) and what the candidates hold there; and
    for each candidate, in order, its node's index (-1 when not schedulable) and its need."""
    schedulable = sorted((node for node in nodes if node.schedulable), key=lambda n: n.name)
    names = [node.name for node in schedulable]
    free = [[node.capacity.get(name, 0) for node in schedulable] for name in types]
    held = [[0] * len(names) for _ in types]
    index = {name: position for position, name in enumerate(names)}
    kinds = tuple(enumerate(types))
    for allocation in kept:
        position = index.get(allocation.node)
        if position is not None:
            amounts = allocation.resources
            for type_index, name in kinds:
                free[type_index][position] -= amounts.get(name, 0)
    moves: list[tuple[int, Need]] = []
    for allocation in candidates:
        position = index.get(allocation.node)
        if position is None:
            moves.append((-1, ()))
            continue
        amounts = allocation.resources
        need = []
        for type_index, name in kinds:
            amount = amounts.get(name, 0)
            held[type_index][position] += amount
            if amount > 0:
                need.append((type_index, amount))
        moves.append((position, tuple(need)))
    return names, free, held, moves


@dataclass(frozen=True)
class _Reprieve:
    """What the reprieve walk keeps up to date: Q's usage and J's placement (both mutable)."""

    job: _Job
    guaranteed: Mapping[str, int]
    maximum: Mapping[str, int]
    in_queue: set[str]
    usage: JobUsage
    gang: _Gang


def _reprieve(
    candidates: Sequence[Allocation], moves: Sequence[tuple[int, Need]], walk: _Reprieve
) -> tuple[str, ...]:
    """Put candidates back, most important first, while J still places from scratch and
    admission still holds (SPEC 4.5); the rest are the victims, in walk order. Admission is
    checked first: it is cheap, and it only changes for candidates of Q's subtree. ``moves``
    gives each candidate's node index and need (``_rooms``)."""
    types = tuple(sorted(walk.job.request))
    put_back = walk.gang.put_back
    in_queue = walk.in_queue
    victims: list[str] = []
    for allocation, (index, need) in zip(candidates, moves, strict=True):
        own = allocation.id in in_queue
        if own and not _admits_with(walk, allocation):
            victims.append(allocation.id)
            continue
        if not put_back(index, need):
            victims.append(allocation.id)
            continue
        if own:
            for name in types:
                walk.usage.preemptible[name] += allocation.resources.get(name, 0)
    return tuple(victims)


# --------------------------------------------------------------------------------------------
# The job and its candidates
# --------------------------------------------------------------------------------------------


def _job(state: ClusterState, job: str) -> _Job | None:
    """J's waiting asks (by id), queue, priority, kind and positive request; None if none wait."""
    asks = sorted(
        (ask for ask in state.asks if ask.job == job and ask.state in _WAITING_STATES),
        key=lambda ask: ask.id,
    )
    if not asks:
        return None
    request: dict[str, int] = {}
    for ask in asks:
        _add(request, ask.resources)
    return _Job(
        asks=tuple(asks),
        # Judgement call: a job spanning queues is planned with its first ask's queue (by id).
        queue=asks[0].queue,
        priority=max(ask.priority for ask in asks),
        preemptible=all(ask.allow_preemption for ask in asks),
        # Only positive amounts: a ``gpu: 0`` entry requests nothing (module docstring).
        request={name: value for name, value in sorted(request.items()) if value > 0},
    )


def _candidates(
    running: Sequence[Allocation], priority: int
) -> tuple[list[Allocation], list[Allocation], dict[str, Reason]]:
    """The candidates, most important first (SPEC 4.5: higher priority, then older, then id);
    the other running allocations; and the static reason of each of those."""
    reasons: dict[str, Reason] = {}
    candidates: list[Allocation] = []
    kept: list[Allocation] = []
    for allocation in running:
        # The candidate rules of SPEC 4.5, in the order listed there.
        if not allocation.allow_preemption:
            kept.append(allocation)
            reasons[allocation.id] = Reason.LAW1_OPTED_OUT
        elif allocation.priority >= priority:
            kept.append(allocation)
            reasons[allocation.id] = Reason.LAW6_HIGHER_PRIORITY
        else:
            candidates.append(allocation)
    candidates.sort(key=reprieve_order_key)
    return candidates, kept, reasons


def reprieve_order_key(allocation: Allocation) -> tuple[int, datetime, str]:
    """The reprieve walk's order, most important first (SPEC 4.5): higher priority, then older,
    then id."""
    return (-allocation.priority, allocation.created_at, allocation.id)


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


# --------------------------------------------------------------------------------------------
# Admission (seed 004, "Quota Assignment" and PostFilter step 1)
# --------------------------------------------------------------------------------------------


def admits(
    request: Mapping[str, int],
    guaranteed: Mapping[str, int],
    maximum: Mapping[str, int],
    preemptible: bool,
    usage: JobUsage,
) -> bool:
    """Whether a job requesting ``request`` is admitted to a queue with these min and max.

    Checked per type of the request; a type missing from ``guaranteed`` is 0, from ``maximum``
    unlimited (SPEC 4.0). Non-preemptible: ``nonpreemptible_used + request <= min`` and
    ``used + request <= max``. Preemptible: ``min(min, nonpreemptible_used) + preemptible_used +
    request <= max`` -- only the part of the non-preemptible usage within min is held against
    it, the rest was already counted against the guarantee.
    """
    for name, amount in request.items():
        low = guaranteed.get(name, 0)
        high = maximum.get(name)
        held = usage.nonpreemptible.get(name, 0)
        shared = usage.preemptible.get(name, 0)
        if preemptible:
            if high is not None and min(low, held) + shared + amount > high:
                return False
            continue
        if held + amount > low:
            return False
        if high is not None and held + shared + amount > high:
            return False
    return True


def _usage_without(
    running: Sequence[Allocation],
    in_queue: set[str],
    removed: set[str],
    types: tuple[str, ...],
) -> JobUsage:
    """Q's usage on the job's types with the ``removed`` allocations gone (SPEC 4.5, ours)."""
    usage = JobUsage(dict.fromkeys(types, 0), dict.fromkeys(types, 0))
    for allocation in running:
        if allocation.id not in in_queue or allocation.id in removed:
            continue
        part = usage.preemptible if allocation.allow_preemption else usage.nonpreemptible
        for name in types:
            part[name] += allocation.resources.get(name, 0)
    return usage


def _admits_with(walk: _Reprieve, allocation: Allocation) -> bool:
    """Admission if ``allocation`` (a preemptible candidate of Q's subtree) were put back."""
    preemptible = {
        name: value + allocation.resources.get(name, 0)
        for name, value in walk.usage.preemptible.items()
    }
    usage = JobUsage(walk.usage.nonpreemptible, preemptible)
    return admits(walk.job.request, walk.guaranteed, walk.maximum, walk.job.preemptible, usage)


# --------------------------------------------------------------------------------------------
# Placement (SPEC 4.5: deterministic first fit)
# --------------------------------------------------------------------------------------------


def placement_order(asks: Sequence[Ask], nodes: Sequence[Node]) -> list[Ask] | None:
    """J's asks largest first, ties by id; None when an ask can never be placed.

    The size of an ask is ``sum(ask[t] / capacity[t])`` over the types it requests a positive
    amount of, capacity summed over the schedulable nodes (exact fractions). A requested type
    with no capacity at all makes the ask unplaceable, whatever is preempted.
    """
    schedulable = [node.capacity for node in nodes if node.schedulable]
    requested = {name for ask in asks for name, amount in ask.resources.items() if amount > 0}
    capacity = {name: sum(room.get(name, 0) for room in schedulable) for name in requested}
    sized: list[tuple[Fraction, str, Ask]] = []
    sizes: dict[frozenset[tuple[str, int]], Fraction] = {}  # a gang's asks are mostly alike
    for ask in asks:
        shape = frozenset(ask.resources.items())
        size = sizes.get(shape)
        if size is None:
            size = Fraction(0)
            for name, amount in ask.resources.items():
                if amount <= 0:
                    continue
                total = capacity.get(name, 0)
                if total <= 0:
                    return None
                size += Fraction(amount, total)
            sizes[shape] = size
        sized.append((-size, ask.id, ask))
    sized.sort(key=lambda entry: (entry[0], entry[1]))
    return [ask for _, _, ask in sized]


def first_fit(
    order: Sequence[Ask], nodes: Sequence[Node], running: Sequence[Allocation]
) -> dict[str, str] | None:
    """Place ``order`` on the free room of the schedulable ``nodes`` (capacity minus
    ``running``): each ask on the first node by name with room. Ask id -> node name, or None
    when some ask does not fit (all or nothing)."""
    types = tuple(sorted({name for ask in order for name, v in ask.resources.items() if v > 0}))
    room = _Room.build(nodes, running, types)
    placement = room.place(_needs(order, types))
    if placement is None:
        return None
    return {ask_id: room.names[index] for ask_id, index in placement.items()}


def _need(amounts: Mapping[str, int], types: tuple[str, ...]) -> Need:
    return tuple(
        (index, amounts.get(name, 0))
        for index, name in enumerate(types)
        if amounts.get(name, 0) > 0
    )


def _needs(order: Sequence[Ask], types: tuple[str, ...]) -> list[tuple[str, Need]]:
    return [(ask.id, _need(ask.resources, types)) for ask in order]


class _Run:
    """Consecutive asks of J's placement order that request exactly the same amounts, and where
    first fit put them: ``counts[i]`` asks on node ``nodes[i]`` (ascending), the first
    ``counts[0]`` ids on the first node, and so on.

    First fit places identical asks greedily: each goes to the first node with room for it, and
    a node that had no room for one of them has none for the next (room only shrinks while a
    placement goes on), so a run fills its nodes in name order, every node but the last as far
    as it holds. That is what lets ``_Gang.replay`` skip every node whose room did not change.
    """

    __slots__ = ("amounts", "counts", "ids", "need", "nodes", "where")

    def __init__(
        self, need: Need, amounts: list[int], ids: list[str], nodes: list[int], counts: list[int]
    ) -> None:
        self.need = need
        self.amounts = amounts  # the need per type index, 0 for the types it does not request
        self.ids = ids
        self.nodes = nodes
        self.counts = counts
        self.where = dict(zip(nodes, counts, strict=True))


class _Gang:
    """J's placement from scratch on a room that only shrinks, as candidates are put back.

    The placement is kept as runs of identical asks (``_Run``); ``load`` is what J's asks take
    on each node the placement uses, per type.
    """

    def __init__(
        self, room: _Room, needs: list[tuple[str, Need]], placement: dict[str, int]
    ) -> None:
        self.room = room
        self.runs: list[_Run] = []
        for need, group in groupby(needs, key=lambda entry: entry[1]):
            ids = [ask_id for ask_id, _ in group]
            nodes: list[int] = []
            counts: list[int] = []
            for index, same in groupby(placement[ask_id] for ask_id in ids):
                nodes.append(index)
                counts.append(len(list(same)))
            amounts = [0] * room.types
            for type_index, amount in need:
                amounts[type_index] = amount
            self.runs.append(_Run(need, amounts, ids, nodes, counts))
        self.load: dict[int, list[int]] = {}
        self._update_load({index for run in self.runs for index in run.nodes})

    def put_back(self, index: int, need: Need) -> bool:
        """Take ``need`` from node ``index``'s room (-1: a node that is not schedulable) if J
        still places from scratch (True), else leave everything as it was (False).

        Only a node the placement uses can change it: first fit passed over every other node
        for lack of room, and less room there changes nothing. Nor does it change when the
        node's room, less what J's asks take there, still covers the allocation on every type
        those asks request: each of them still fits where it was. An allocation on a node that
        is not schedulable, or that takes none of J's types, does not touch the room at all.
        This runs once per candidate, so it does the room's ``take`` itself.
        """
        if index < 0 or not need:
            return True
        room = self.room
        trees = room.trees
        leaf = room.size + index
        stale = False
        for type_index, amount in need:
            tree = trees[type_index]
            value = tree[leaf]
            tree[leaf] = value - amount
            if tree[leaf ^ 1] < value:
                stale = True
        if stale:
            room.stale.add(leaf >> 1)
        load = self.load.get(index)
        if load is None:
            return True
        for type_index, _ in need:
            if load[type_index] and trees[type_index][leaf] < load[type_index]:
                break
        else:
            return True
        placed = self._replay_one_run(index) if len(self.runs) == 1 else self.replay(index)
        if not placed:
            room.give(index, need)
            return False
        return True

    def _replay_one_run(self, shrunk: int) -> bool:
        """``replay`` for a gang of equal asks (one run), in place: node ``shrunk`` of the run
        now holds fewer of its asks; the nodes before and after it up to the last are full and
        unchanged, so the asks it lost go on the last node as far as it has room, then on the
        next nodes with room. False (and nothing changed) when they do not all place."""
        run = self.runs[0]
        nodes, counts = run.nodes, run.counts
        at = bisect_left(nodes, shrunk)
        held = self._holds(shrunk, run, [], counts[at])
        lost = counts[at] - held
        last = nodes[-1]
        spare = 0 if last == shrunk else self._holds(last, run, [], counts[-1] + lost) - counts[-1]
        remaining = lost - spare
        tail: list[tuple[int, int]] = []
        after = last + 1
        while remaining:
            index = self.room.first_index(run.need, after)
            if index is None:
                return False
            count = self._holds(index, run, [], remaining)
            if count:
                tail.append((index, count))
                remaining -= count
            after = index + 1
        changed = [shrunk]
        if spare:
            counts[-1] += spare
            run.where[last] += spare
            changed.append(last)
        if held:
            counts[at] = held
            run.where[shrunk] = held
        else:
            del nodes[at], counts[at]
            del run.where[shrunk]
        for index, count in tail:
            nodes.append(index)
            counts.append(count)
            run.where[index] = count
            changed.append(index)
        load = self.load
        for index in changed:
            count = run.where.get(index)
            if count:
                load[index] = [count * amount for amount in run.amounts]
            else:
                del load[index]
        return True

    def replay(self, shrunk: int) -> bool:
        """Make the placement the one from scratch -- first fit of every ask in order --
        knowing that the current runs were the placement from scratch before the room of node
        ``shrunk`` (only) shrank. False (and nothing changed) when some ask no longer places.

        ``changed`` holds the nodes whose room, when the next run starts, may differ from what
        it was then in the earlier placement: ``shrunk``, and every node where an earlier run
        now puts a different number of asks. A run with no changed node up to its last node is
        placed exactly as before. Otherwise, walking its nodes in name order: a node of the run
        whose room did not change still holds as many asks as before (it was filled as far as
        it held), so whole stretches of them are copied at once; a node that is not one of the
        run's and did not change still has no room (first fit passed over it); a changed node
        and the run's last node (which may have had room to spare) are looked at; and what
        remains after the last node goes, through the room's trees, to the next nodes with
        room.
        """
        changed = {shrunk}
        runs: list[_Run] = []
        for run in self.runs:
            last = run.nodes[-1]
            events = sorted(index for index in changed if index <= last)
            if not events:
                runs.append(run)
                continue
            if events[-1] != last:
                events.append(last)
            placed = self._place_run(run, events, runs, changed)
            if placed is None:
                return False
            runs.append(placed)
        self.runs = runs
        self._update_load(changed)
        return True

    def _place_run(
        self, run: _Run, events: list[int], earlier: list[_Run], changed: set[int]
    ) -> _Run | None:
        """``run`` placed afresh after the ``earlier`` runs (already placed afresh), where only
        the nodes in ``events`` (ascending, ending with the run's last node) may hold a
        different number of its asks than before; the nodes where it does are added to
        ``changed``. The run itself when nothing changed, None when it does not place."""
        nodes, counts, where = run.nodes, run.counts, run.where
        cumulative = list(accumulate(counts))
        remaining = len(run.ids)
        new_nodes: list[int] = []
        new_counts: list[int] = []
        moved = False
        start = 0  # the first of the run's nodes not dealt with yet
        for event in events:
            stop = bisect_left(nodes, event, start)
            if stop > start:
                # Nodes start..stop-1 of the run come before the event and did not change.
                base = cumulative[start - 1] if start else 0
                block = cumulative[stop - 1] - base
                if remaining < block:
                    # The run now ends inside the stretch, at node ``end``.
                    end = bisect_left(cumulative, base + remaining, start, stop)
                    new_nodes += nodes[start:end]
                    new_counts += counts[start:end]
                    held = base + remaining - (cumulative[end - 1] if end > start else base)
                    new_nodes.append(nodes[end])
                    new_counts.append(held)
                    if held != counts[end]:
                        changed.add(nodes[end])
                        moved = True
                    start = end + 1
                    remaining = 0
                    break
                new_nodes += nodes[start:stop]
                new_counts += counts[start:stop]
                remaining -= block
            start = stop
            if not remaining:
                break
            held = self._holds(event, run, earlier, remaining)
            if held:
                new_nodes.append(event)
                new_counts.append(held)
                remaining -= held
            if held != where.get(event, 0):
                changed.add(event)
                moved = True
            if start < len(nodes) and nodes[start] == event:
                start += 1
            if not remaining:
                break
        if start < len(nodes):
            # The run now ends before its old last node: the nodes after hold none of it.
            changed.update(nodes[start:])
            moved = True
        after = nodes[-1] + 1
        while remaining:
            index = self.room.first_index(run.need, after)
            if index is None:
                return None
            held = self._holds(index, run, earlier, remaining)
            if held:
                new_nodes.append(index)
                new_counts.append(held)
                remaining -= held
                changed.add(index)
                moved = True
            after = index + 1
        if not moved:
            return run
        return _Run(run.need, run.amounts, run.ids, new_nodes, new_counts)

    def _holds(self, index: int, run: _Run, earlier: list[_Run], remaining: int) -> int:
        """How many of ``run``'s ``remaining`` asks node ``index`` holds once the ``earlier``
        runs took their share of its room."""
        room = self.room
        leaf = room.size + index
        held = remaining
        for type_index, amount in run.need:
            free = room.trees[type_index][leaf]
            for other in earlier:
                count = other.where.get(index)
                if count:
                    free -= count * other.amounts[type_index]
            if free < amount:
                return 0
            held = min(held, free // amount)
        return held

    def _update_load(self, changed: Iterable[int]) -> None:
        for index in changed:
            total: list[int] | None = None
            for run in self.runs:
                count = run.where.get(index)
                if count:
                    if total is None:
                        total = [0] * self.room.types
                    for type_index, amount in run.need:
                        total[type_index] += count * amount
            if total is None:
                self.load.pop(index, None)
            else:
                self.load[index] = total

    def nominations(self) -> dict[str, str]:
        names = self.room.names
        placement: dict[str, str] = {}
        for run in self.runs:
            ids = iter(run.ids)
            for index, count in zip(run.nodes, run.counts, strict=True):
                for ask_id in islice(ids, count):
                    placement[ask_id] = names[index]
        return dict(sorted(placement.items()))


class _Room:
    """Free room of the schedulable nodes, in name order, on the job's types.

    One max-tree per type (a binary tree over the nodes whose every inner entry is the largest
    room below it) lets ``first_index`` skip whole ranges of nodes that cannot hold an ask, so a
    first-fit placement costs about ``asks * log(nodes)`` instead of ``asks * nodes``. Leaves are
    always current; inner entries are brought up to date lazily, just before a search, so that
    the many small changes of a reprieve walk cost one pass over the changed paths.
    """

    def __init__(self, names: list[str], rooms: list[list[int]]) -> None:
        self.names = names
        self.index = {name: index for index, name in enumerate(names)}
        self.count = len(names)
        self.types = len(rooms)
        self.size = 1
        while self.size < self.count:
            self.size *= 2
        self.trees: list[list[int]] = []
        for room in rooms:
            tree = [_NO_NODE] * (2 * self.size)
            tree[self.size : self.size + self.count] = room
            for position in range(self.size - 1, 0, -1):
                tree[position] = max(tree[2 * position], tree[2 * position + 1])
            self.trees.append(tree)
        self.stale: set[int] = set()

    @classmethod
    def build(
        cls, nodes: Sequence[Node], running: Iterable[Allocation], types: tuple[str, ...]
    ) -> _Room:
        """Room = capacity (a missing type is 0) minus the given allocations on the node."""
        schedulable = sorted((node for node in nodes if node.schedulable), key=lambda n: n.name)
        names = [node.name for node in schedulable]
        rooms = [[node.capacity.get(name, 0) for node in schedulable] for name in types]
        index = {name: position for position, name in enumerate(names)}
        for allocation in running:
            position = index.get(allocation.node)
            if position is None:
                continue
            for type_index, name in enumerate(types):
                rooms[type_index][position] -= allocation.resources.get(name, 0)
        return cls(names, rooms)

    def first_index(self, need: Need, start: int = 0) -> int | None:
        """The first node (by name) from index ``start`` on whose room holds ``need`` on every
        type it lists.

        Walks the subtrees to the right of ``start``'s leaf in order, from that leaf up: a
        subtree whose largest room on some type is too small holds no fitting node and is
        skipped whole (to its right neighbour, climbing while it is a right child); one that
        passes is entered by its left child. With several types a subtree can pass without
        holding a fitting node (the largest rooms come from different nodes); the walk then
        simply moves on to the right. The answer is usually near ``start``, so starting from
        there rather than from the root keeps the walk short.
        """
        if start >= self.count:
            return None
        trees = self.trees
        size = self.size
        # The next few nodes first: leaves are always current, so no refresh is needed for
        # them, and the answer is often right there.
        for index in range(start, min(start + _PROBE, self.count)):
            for type_index, amount in need:
                if trees[type_index][size + index] < amount:
                    break
            else:
                return index
        start += _PROBE
        if start >= self.count:
            return None
        self._refresh()
        position = size + start
        while True:
            for type_index, amount in need:
                if trees[type_index][position] < amount:
                    break
            else:
                if position >= size:
                    index = position - size
                    return index if index < self.count else None
                position *= 2
                continue
            while position & 1:
                position >>= 1
            if not position:
                return None
            position += 1

    def take(self, index: int, need: Need) -> None:
        """Less room on node ``index``. Its parent entry goes stale only if the node may have
        been the larger of the two below it on some type: when its neighbour has at least the
        node's old room, the parent already holds the neighbour's and keeps it."""
        leaf = self.size + index
        trees = self.trees
        stale = False
        for type_index, amount in need:
            tree = trees[type_index]
            value = tree[leaf]
            tree[leaf] = value - amount
            if tree[leaf ^ 1] < value:
                stale = True
        if stale:
            self.stale.add(leaf >> 1)

    def give(self, index: int, need: Need) -> None:
        self._change(index, need, 1)

    def place(self, needs: Sequence[tuple[str, Need]]) -> dict[str, int] | None:
        """First fit of every ask, in the given order, from the current room (left unchanged).
        Ask id -> node index, or None when some ask does not fit."""
        taken: list[tuple[int, Need]] = []
        placement: dict[str, int] = {}
        complete = True
        for ask_id, need in needs:
            index = self.first_index(need)
            if index is None:
                complete = False
                break
            self.take(index, need)
            taken.append((index, need))
            placement[ask_id] = index
        for index, need in taken:
            self.give(index, need)
        return placement if complete else None

    def _change(self, index: int, need: Need, sign: int) -> None:
        leaf = self.size + index
        for type_index, amount in need:
            self.trees[type_index][leaf] += sign * amount
        self.stale.add(leaf // 2)

    def _refresh(self) -> None:
        """Bring the inner entries above the leaves changed since the last search up to date.

        Each changed path is walked up until an entry keeps its value: the entries above it
        depend on the changed leaf only through it. A walk that stops early may have used a
        sibling entry still to be refreshed; that sibling's own walk then passes this way again.
        """
        trees = self.trees
        for start in self.stale:
            position = start
            while position:
                changed = False
                for tree in trees:
                    left, right = tree[2 * position], tree[2 * position + 1]
                    best = left if left >= right else right
                    if tree[position] != best:
                        tree[position] = best
                        changed = True
                if not changed:
                    break
                position //= 2
        self.stale.clear()
