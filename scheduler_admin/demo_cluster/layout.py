"""The queue tree as the demo cluster sees it, and where a task fits.

``Layout`` reads a partition's config once: leaves, tenants (root's children), the fenced
tenants, the leaves that may use GPUs, the leaf that holds the DaemonSet pods and the chain of
limits above every leaf. ``Placer`` counts free room per node and usage per queue, so the
builder (``build``) and the churn (``churn``) place a task only where both the node and every
queue on its path have room.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from preemption.config import ROOT, PartitionConfig
from preemption.hierarchy import Hierarchy

VCORE = "vcore"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"
MI = 1024**2
GI = 1024**3

#: Leaf names that look like a home for cluster-wide system pods.
SYSTEM_LEAF_NAMES = frozenset(
    {"system", "kube-system", "infra", "infrastructure", "platform", "daemonset", "daemonsets"}
)


class SimulatorError(ValueError):
    """The partition cannot be simulated (e.g. it has no queue under root)."""


class Layout:
    """Leaves, tenants (root's children), the fenced tenants, the leaves that may use GPUs, the
    DaemonSet leaf, and the chain of limits above every leaf."""

    def __init__(self, config: PartitionConfig) -> None:
        self.config = config
        self.hierarchy = h = Hierarchy(config)
        if ROOT not in h.queues or not h.children(ROOT):
            raise SimulatorError(f"partition {config.name!r} has no queue under root")
        self.tenants: list[str] = list(h.children(ROOT))
        self.leaves: list[str] = h.leaves_under(ROOT)
        self.tenant_of = {
            leaf: next(t for t in self.tenants if h.is_within(leaf, t)) for leaf in self.leaves
        }
        self.fenced = [t for t in self.tenants if h.effective_policy(t).value == "fence"]
        self.gpu_leaves = [
            leaf
            for leaf in self.leaves
            if any(
                GPU in h.queues[q].guaranteed or GPU in h.queues[q].max
                for q in h.path_from_root(leaf)
            )
        ]
        self.chain = {path: h.path_from_root(path) for path in h.queues}
        #: Per leaf: (queue path, max) for every queue on its path that sets a max.
        self.limits = {
            leaf: [(q, dict(h.queues[q].max)) for q in self.chain[leaf] if h.queues[q].max]
            for leaf in self.leaves
        }
        system = [
            leaf
            for leaf in self.leaves
            if h.queues[leaf].name.lower() in SYSTEM_LEAF_NAMES or "system" in leaf.lower()
        ]
        self.daemonset_leaf = system[0] if system else h.leaves_under(self.tenants[-1])[0]
        first_leaves = {h.leaves_under(t)[0] for t in self.tenants}
        self.hot = [leaf for leaf in self.leaves if leaf in first_leaves]

    def slug(self, path: str) -> str:
        """The path without ``root.``, dots as dashes (``prod-web``): the start of the ids of
        the queue's applications, unique where leaf names repeat under different parents."""
        return path.removeprefix(ROOT + ".").replace(".", "-")

    def guaranteed(self, path: str) -> Mapping[str, int]:
        return self.hierarchy.queues[path].guaranteed

    def max(self, path: str) -> Mapping[str, int]:
        return self.hierarchy.queues[path].max


class Placer:
    """Free room per node and usage per queue, so a task is placed only where it fits both."""

    def __init__(self, layout: Layout, capacity: Mapping[str, Mapping[str, int]]) -> None:
        self.layout = layout
        self.free = {name: dict(cap) for name, cap in capacity.items()}
        self.usage: dict[str, dict[str, int]] = {path: {} for path in layout.hierarchy.queues}

    def fits_queue(self, queue: str, amount: Mapping[str, int]) -> bool:
        for path, limit in self.layout.limits.get(queue, ()):
            used = self.usage[path]
            for name, cap in limit.items():
                if used.get(name, 0) + amount.get(name, 0) > cap:
                    return False
        return queue in self.layout.limits

    def fits_node(self, node: str, amount: Mapping[str, int]) -> bool:
        free = self.free.get(node)
        return free is not None and all(
            value <= free.get(name, 0) for name, value in amount.items() if value
        )

    def take(self, queue: str, node: str, amount: Mapping[str, int], sign: int = 1) -> None:
        """Count ``amount`` on the node and on the queue's path (``sign=-1`` gives it back)."""
        for path in self.layout.chain.get(queue, ()):
            used = self.usage[path]
            for name, value in amount.items():
                used[name] = used.get(name, 0) + sign * value
        free = self.free.get(node)
        if free is not None:
            for name, value in amount.items():
                free[name] = free.get(name, 0) - sign * value

    def place(
        self, queue: str, amount: Mapping[str, int], nodes: Sequence[str], rng: random.Random
    ) -> str | None:
        """First node that fits, scanning from a random one (spreads the load); None if the
        queue's limits or every node refuse."""
        if not nodes or not self.fits_queue(queue, amount):
            return None
        start = rng.randrange(len(nodes))
        for offset in range(len(nodes)):
            node = nodes[(start + offset) % len(nodes)]
            if self.fits_node(node, amount):
                self.take(queue, node, amount)
                return node
        return None
