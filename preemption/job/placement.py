"""Where J's asks go: a deterministic first fit (SPEC 4.5).

**Placement** is a deterministic first fit: asks largest first by ``sum(ask[t] / capacity[t])``
over the types the ask requests (capacity summed over the schedulable nodes), ties by ask id;
each ask goes on the first node in name order that it may use (SPEC 3.3) with room. The
reprieve re-places J from scratch
for every candidate put back, so this is the hot path (up to 100,000 candidates): ``Room`` keeps
a max-tree per type so that "the first node with room" costs about log(nodes) instead of a scan;
a candidate can only change the placement if its node holds one of J's asks and has no room to
spare for it (first fit passed over every other node for lack of room, and less room there
changes nothing); and then ``Gang`` replays the placement by runs of equal asks (a gang's pods
are mostly alike, and consecutive in the order), copying every stretch of nodes whose room did
not change and looking only at the changed nodes, the run's last node and the nodes after it, so
a replay costs a few steps rather than one search per ask (issue 14: the reprieve used to cost
46-144x a plain sort of the candidates). Each shortcut gives exactly the placement from scratch
(``tests/unit/test_job.py`` compares the plans with a naive reading of this section).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from preemption.eligibility import Usable, usable_nodes
from preemption.model import (
    Allocation,
    Ask,
    Node,
)

#: Room of a padding leaf of ``Room``'s trees: below any positive need.
_NO_NODE = -1
#: How many nodes ``Room.first_index`` looks at one by one before it searches the trees.
_PROBE = 4
#: What an ask or an allocation takes on the job's types: (type index, positive amount) pairs.
Need = tuple[tuple[int, int], ...]
#: Ask id -> indices of the nodes it may use, for the asks that may not use every node.
Allowed = Mapping[str, frozenset[int]]


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
    ``running``): each ask on the first node by name that it may use (SPEC 3.3) with room. Ask
    id -> node name, or None when some ask does not fit (all or nothing)."""
    types = tuple(sorted({name for ask in order for name, v in ask.resources.items() if v > 0}))
    room = Room.build(nodes, running, types)
    allowed = allowed_nodes(nodes, room.names, usable_nodes(order, nodes))
    placement = room.place(needs_of(order, types), allowed)
    if placement is None:
        return None
    return {ask_id: room.names[index] for ask_id, index in placement.items()}


def allowed_nodes(nodes: Sequence[Node], names: Sequence[str], usable: Usable) -> Allowed:
    """For each ask that may not use every one of the nodes ``names`` (in that order), the
    indices of those it may use (SPEC 3.3); empty when every ask may use every node.
    ``usable`` is ``usable_nodes(asks, nodes)``: each group of asks is looked at once."""
    position = {node.name: index for index, node in enumerate(nodes)}
    placed = [position[name] for name in names]
    allowed: dict[str, frozenset[int]] = {}
    for ids, verdicts in usable:
        if all(verdicts):  # the usual case: no set to build
            continue
        indices = frozenset(index for index, at in enumerate(placed) if verdicts[at])
        if len(indices) < len(placed):
            allowed.update(dict.fromkeys(ids, indices))
    return allowed


def _need(amounts: Mapping[str, int], types: tuple[str, ...]) -> Need:
    return tuple(
        (index, amounts.get(name, 0))
        for index, name in enumerate(types)
        if amounts.get(name, 0) > 0
    )


def needs_of(order: Sequence[Ask], types: tuple[str, ...]) -> list[tuple[str, Need]]:
    return [(ask.id, _need(ask.resources, types)) for ask in order]


def node_rooms(
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


class Room:
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
    ) -> Room:
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

    def place(
        self, needs: Sequence[tuple[str, Need]], allowed: Allowed | None = None
    ) -> dict[str, int] | None:
        """First fit of every ask, in the given order, from the current room (left unchanged).
        Ask id -> node index, or None when some ask does not fit. ``allowed`` gives, for an ask
        that may not use every node (SPEC 3.3), the indices of the nodes it may use."""
        taken: list[tuple[int, Need]] = []
        placement: dict[str, int] = {}
        complete = True
        for ask_id, need in needs:
            usable = None if allowed is None else allowed.get(ask_id)
            index = self.first_index(need)
            while index is not None and usable is not None and index not in usable:
                index = self.first_index(need, index + 1)
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
