"""Whether Q admits J (SPEC 4.5).

**Admission**, per type J requests (seed 004, "Quota Assignment"; Q's ``guaranteed`` plays
"min", its ``max`` "max"; a missing min is 0, a missing max unlimited):

- non-preemptible J: ``nonpreemptible_used + request <= min`` and ``used + request <= max``;
- preemptible J: ``min(min, nonpreemptible_used) + preemptible_used + request <= max``;

where ``used`` is the usage of Q's subtree without the candidates **(ours**: the seed checks
before preemption, which would refuse a job that only needs Q's own preemptible tasks moved**)**,
split by each allocation's ``allow_preemption``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from preemption.model import (
    Allocation,
)


@dataclass
class JobUsage:
    """Usage of Q's subtree on the job's types, split by ``allow_preemption`` (seed 004)."""

    nonpreemptible: dict[str, int]
    preemptible: dict[str, int]


def add_amounts(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


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


def usage_without(
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
