"""The reprieve's fast replay of J's placement (``Gang``): by runs of equal asks, copying every
stretch of nodes whose room did not change, so putting a candidate back costs a few steps rather
than one search per ask. It gives exactly the placement from scratch (``job.placement``)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate, groupby, islice

from preemption.job.placement import Need, Room


class _Run:
    """Consecutive asks of J's placement order that request exactly the same amounts, and where
    first fit put them: ``counts[i]`` asks on node ``nodes[i]`` (ascending), the first
    ``counts[0]`` ids on the first node, and so on.

    First fit places identical asks greedily: each goes to the first node with room for it, and
    a node that had no room for one of them has none for the next (room only shrinks while a
    placement goes on), so a run fills its nodes in name order, every node but the last as far
    as it holds. That is what lets ``Gang.replay`` skip every node whose room did not change.
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


class Gang:
    """J's placement from scratch on a room that only shrinks, as candidates are put back.

    The placement is kept as runs of identical asks (``_Run``); ``load`` is what J's asks take
    on each node the placement uses, per type.
    """

    def __init__(
        self, room: Room, needs: list[tuple[str, Need]], placement: dict[str, int]
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
