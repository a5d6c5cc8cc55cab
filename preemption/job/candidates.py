"""J and its candidates (SPEC 4.5, steps 1 and 2): the job's waiting asks, its queue, priority,
kind and request; the running allocations that may make room for it, and the order the reprieve
walks them in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from preemption.job.admission import add_amounts
from preemption.model import (
    Allocation,
    Ask,
    AskState,
    ClusterState,
    Reason,
)

#: Ask states that still wait to be placed.
_WAITING_STATES = frozenset({AskState.PENDING, AskState.RESERVED})


@dataclass(frozen=True)
class Job:
    """J as SPEC 4.5 sees it."""

    asks: tuple[Ask, ...]
    queue: str
    priority: int
    preemptible: bool
    request: dict[str, int]


def job_of(state: ClusterState, job: str) -> Job | None:
    """J's waiting asks (by id), queue, priority, kind and positive request; None if none wait."""
    asks = sorted(
        (ask for ask in state.asks if ask.job == job and ask.state in _WAITING_STATES),
        key=lambda ask: ask.id,
    )
    if not asks:
        return None
    request: dict[str, int] = {}
    for ask in asks:
        add_amounts(request, ask.resources)
    return Job(
        asks=tuple(asks),
        # Judgement call: a job spanning queues is planned with its first ask's queue (by id).
        queue=asks[0].queue,
        priority=max(ask.priority for ask in asks),
        preemptible=all(ask.allow_preemption for ask in asks),
        # Only positive amounts: a ``gpu: 0`` entry requests nothing (module docstring).
        request={name: value for name, value in sorted(request.items()) if value > 0},
    )


def candidates_of(
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


def in_queue_ids(state: ClusterState, queue: str) -> set[str]:
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
