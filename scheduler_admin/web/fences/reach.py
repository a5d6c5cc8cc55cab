"""Who may preempt whom across the fences of one partition (SPEC 4.2, law 7), for the fences page.

The engine's ``Hierarchy.fence_root`` bounds an ask's victim search at the first queue (walking
up from the ask's leaf) that is a fence, or whose usage plus the ask would exceed its max, or at
root. The second stop depends on one ask and the cluster at that moment, so this page shows the
*static* bound: ``fence_root(leaf, {}, {})`` (an empty ask fits every max). That is the widest
scope a task of the leaf can ever search; a concrete ask may find a narrower one.

Definitions (leaves hold tasks and asks; parents only group them):

- ``scope(L)``: the subtree of the static fence root of leaf L.
- ``victims(L)``: leaves in ``scope(L)`` other than L whose effective policy is not ``disabled``
  (SPEC 4.2 queue rules: the asking leaf holds no victims; a disabled queue is never a source).
- Picking queue X means its leaves S (X itself when it is a leaf). "Tasks of X may preempt in"
  = the union of ``victims(l)`` for l in S; "preemption may reach X from" = the leaves L with
  ``victims(L)`` meeting S.

Everything is one pass over the tree plus the ancestors of each leaf, so a partition of a few
thousand queues is answered per request without caching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from preemption.hierarchy import Hierarchy

DISABLED = "disabled"


@dataclass
class Reach:
    """What picking one queue highlights. Sets hold queue paths; lists keep configured order."""

    selected: str
    #: Static fence roots of the picked queue's leaves (one, unless fences lie inside it).
    fence_roots: list[str]
    #: Every queue inside a fence root's subtree: where the search may look.
    in_scope: set[str]
    #: Leaves that may hold victims, and the queues within scope that contain one of them.
    may_preempt: set[str]
    victim_leaves: list[str]
    #: Queues in scope that hold no victims because their policy is (or inherits) disabled.
    no_victims: set[str]
    #: Leaves whose tasks may preempt in the picked queue.
    reachable_from: list[str] = field(default_factory=list)

    @cached_property
    def reaches(self) -> set[str]:
        """``reachable_from`` as a set, for per-row lookups in a big tree."""
        return set(self.reachable_from)


class FenceMap:
    """The static fence root and the disabled flag of every queue of one partition."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self.order = [queue.path for queue in hierarchy.config.queues]
        self.disabled = {
            path for path in self.order if hierarchy.effective_policy(path).value == DISABLED
        }
        self.leaves = [path for path in self.order if hierarchy.is_leaf(path)]
        self.fence_of = {leaf: hierarchy.fence_root(leaf, {}, {}) for leaf in self.leaves}
        # Victim-eligible leaves per subtree, rolled up children before parents.
        self.eligible_count = dict.fromkeys(self.order, 0)
        for leaf in self.leaves:
            if leaf not in self.disabled:
                self.eligible_count[leaf] = 1
        for queue in reversed(hierarchy.config.queues):
            if queue.parent is not None:
                self.eligible_count[queue.parent] += self.eligible_count[queue.path]

    def is_fence(self, path: str) -> bool:
        """The queue sets ``preemption.policy: fence`` itself (fences are never inherited)."""
        policy = self.hierarchy.effective_policy(path)
        return policy.value == "fence" and policy.source == path

    def reach(self, selected: str) -> Reach:
        """The highlights for picking ``selected`` (a path that exists in the hierarchy)."""
        h = self.hierarchy
        picked = h.leaves_under(selected)
        picked_set = set(picked)
        groups: dict[str, set[str]] = {}
        for leaf in picked:
            groups.setdefault(self.fence_of[leaf], set()).add(leaf)
        roots = [path for path in self.order if path in groups]

        in_scope: set[str] = set()
        victims: set[str] = set()
        for root, askers in groups.items():
            subtree = self._subtree(root)
            in_scope.update(subtree)
            for path in subtree:
                eligible = h.is_leaf(path) and path not in self.disabled
                # A leaf is a victim source for some other picked leaf in this scope.
                if eligible and (len(askers) > 1 or path not in askers):
                    victims.add(path)

        may_preempt = set(victims)
        for leaf in victims:
            for ancestor in h.ancestors(leaf):
                if ancestor not in in_scope or ancestor in may_preempt:
                    break
                may_preempt.add(ancestor)

        eligible_in_picked = self.eligible_count[selected]
        reachable = []
        for leaf in self.leaves:
            root = self.fence_of[leaf]
            if h.is_within(selected, root):  # the leaf's scope covers all of the picked queue
                others = eligible_in_picked - (
                    1 if leaf in picked_set and leaf not in self.disabled else 0
                )
            elif h.is_within(root, selected):  # the scope lies inside the picked queue
                others = self.eligible_count[root] - (0 if leaf in self.disabled else 1)
            else:
                continue
            if others > 0:
                reachable.append(leaf)

        return Reach(
            selected=selected,
            fence_roots=roots,
            in_scope=in_scope,
            may_preempt=may_preempt,
            victim_leaves=[path for path in self.leaves if path in victims],
            no_victims={path for path in in_scope if path in self.disabled},
            reachable_from=reachable,
        )

    def _subtree(self, root: str) -> list[str]:
        return [path for path in self.order if self.hierarchy.is_within(path, root)]
