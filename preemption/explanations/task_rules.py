"""The words of the rules several policies share: a guarantee the victim's queue would break,
a priority too high, a DaemonSet pod, no type in common with the ask, a task that opted out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from preemption.explanations.wording import amounts, quantity
from preemption.hierarchy import Hierarchy
from preemption.model import Allocation


def broken_guarantee_text(
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
            earlier = f", earlier victims {quantity(kind, gone[kind])}" if gone.get(kind, 0) else ""
            return (
                f"would take {path} below its guarantee of {kind} {quantity(kind, floor)} "
                f"(usage {quantity(kind, used)}{earlier}, "
                f"task {quantity(kind, amount.get(kind, 0))})"
            )
    return "would take a queue below its guarantee"


def higher_priority_text(
    allocation: Allocation, priority: int, whose: str, equal_may_go: bool
) -> str:
    relation = ">" if allocation.priority > priority else "="
    rule = (
        "only lower or equal priorities may go" if equal_may_go else "only lower priorities may go"
    )
    return f"priority {allocation.priority} {relation} {whose} priority {priority}: {rule}"


def daemonset_text(allocation: Allocation) -> str:
    return (
        f"DaemonSet pod itself (required node {allocation.required_node}): never a victim of "
        "another ask"
    )


def no_shared_text(allocation: Allocation, needed: Mapping[str, int]) -> str:
    return (
        f"uses {amounts(allocation.resources)}; the ask needs {amounts(needed)}: no type in common"
    )


def opted_out_text() -> str:
    return "allow_preemption is false: the task opted out of preemption"
