"""Job-level (gang) preemption (SPEC 4.5, seed 004): the plan, step by step.

A job J -- every waiting ask that shares a ``job`` -- is all or nothing: its pods are placed
together or not at all (seed 004, "AllOrNothing"). When J cannot be placed, lower-priority
preemptible tasks anywhere in the cluster may be preempted for it, but only if that lets *every*
ask of J land; otherwise nobody is preempted (seed 004, story 2).

Steps (``plan_job``):

1. **J**: the asks of the job still waiting (``pending`` or ``reserved``), its queue Q, its
   priority (the highest of its asks') and whether it is preemptible (no ask opted out).
2. **Candidates**: running allocations anywhere with ``allow_preemption`` and a priority lower
   than J's; the others are ``law1_opted_out`` or ``law6_higher_priority``, in that order,
   then ``node_ineligible`` for a task on a node no ask of J may use (SPEC 3.3).
3. **Trigger**: no ask of J has ``preemption_policy: Never``; J cannot be placed on the free
   room of the schedulable nodes as they stand; and J passes admission on Q's usage counted as
   if every candidate in Q's subtree were gone. Otherwise ``not_triggered``.
4. **All or nothing**: remove every candidate and place J; if an ask does not fit,
   ``does_not_help`` and nobody is preempted.
5. **Reprieve**: walk the candidates most important first (higher priority, older, id) and put
   each back if J still places *from scratch* and admission still holds
   (``not_needed_after_reprieve``). The rest are the victims; ``nominations`` (ask id -> node)
   come from the final placement; outcome ``complete``.

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

J and its candidates are found in ``job.candidates``, placed by ``job.placement`` (and replayed
by ``job.replay`` during the reprieve), and admitted by ``job.admission``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from preemption.eligibility import Usable, usable_nodes
from preemption.job.admission import JobUsage, admits, usage_without
from preemption.job.candidates import Job, candidates_of, in_queue_ids, job_of
from preemption.job.placement import (
    Need,
    Room,
    allowed_nodes,
    needs_of,
    node_rooms,
    placement_order,
)
from preemption.job.replay import ConstrainedGang, Gang
from preemption.model import (
    Allocation,
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

__all__ = ["plan_job"]


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
    found = job_of(state, job)
    if found is None:
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)
    # SPEC 4.5 trigger: one ask that may not preempt keeps the whole gang from preempting.
    if any(ask.preemption_policy == PreemptionPolicy.NEVER for ask in found.asks):
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)
    usable = usable_nodes(found.asks, state.nodes)
    ineligible = _unused(usable, state.nodes)
    candidates, kept, reasons = candidates_of(state.running, found.priority, ineligible)
    types = tuple(sorted(found.request))
    order = placement_order(found.asks, state.nodes)
    needs = None if order is None else needs_of(order, types)
    # One pass over the running allocations gives both rooms: with every candidate gone, and
    # as the cluster stands (the candidates' share taken as well).
    names, free, held, moves = node_rooms(state.nodes, kept, candidates, types)
    allowed = allowed_nodes(state.nodes, names, usable)
    if needs is not None:
        standing = [
            [f - h for f, h in zip(a, b, strict=True)] for a, b in zip(free, held, strict=True)
        ]
        if Room(names, standing).place(needs, allowed) is not None:
            return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)

    # SPEC 4.5 "Q's max": Q's own max, not the effective max of its ancestors (judgement call).
    queue = state.hierarchy.queues[found.queue]
    in_queue = in_queue_ids(state, found.queue)
    usage = usage_without(kept, in_queue, set(), types)
    if not admits(found.request, queue.guaranteed, queue.max, found.preemptible, usage):
        return Plan(PolicyName.JOB, Outcome.NOT_TRIGGERED)

    room = Room(names, free)
    placement = None if needs is None else room.place(needs, allowed)
    if needs is None or placement is None:
        # All or nothing (seed 004, story 2): J does not place even with every candidate gone.
        # Every candidate would have had to go: reason ``victim``, but nobody is accepted.
        for allocation in candidates:
            reasons[allocation.id] = Reason.VICTIM
        return Plan(
            PolicyName.JOB, Outcome.DOES_NOT_HELP, explanations=explanations_from(reasons, ())
        )

    # The fast replay needs asks that may use every node; otherwise J is placed again.
    gang = (
        ConstrainedGang(room, needs, allowed, placement)
        if allowed
        else Gang(room, needs, placement)
    )
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


def _unused(usable: Usable, nodes: Sequence[Node]) -> frozenset[str]:
    """The names of the nodes no ask of J may use (SPEC 3.3), looking at each group of asks
    once; when one group may use every node (the usual case), none is unused."""
    if any(all(verdicts) for _, verdicts in usable):
        return frozenset()
    return frozenset(
        node.name
        for index, node in enumerate(nodes)
        if not any(verdicts[index] for _, verdicts in usable)
    )


@dataclass(frozen=True)
class _Reprieve:
    """What the reprieve walk keeps up to date: Q's usage and J's placement (both mutable)."""

    job: Job
    guaranteed: Mapping[str, int]
    maximum: Mapping[str, int]
    in_queue: set[str]
    usage: JobUsage
    gang: Gang | ConstrainedGang


def _reprieve(
    candidates: Sequence[Allocation], moves: Sequence[tuple[int, Need]], walk: _Reprieve
) -> tuple[str, ...]:
    """Put candidates back, most important first, while J still places from scratch and
    admission still holds (SPEC 4.5); the rest are the victims, in walk order. Admission is
    checked first: it is cheap, and it only changes for candidates of Q's subtree. ``moves``
    gives each candidate's node index and need (``node_rooms``)."""
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


def _admits_with(walk: _Reprieve, allocation: Allocation) -> bool:
    """Admission if ``allocation`` (a preemptible candidate of Q's subtree) were put back."""
    preemptible = {
        name: value + allocation.resources.get(name, 0)
        for name, value in walk.usage.preemptible.items()
    }
    usage = JobUsage(walk.usage.nonpreemptible, preemptible)
    return admits(walk.job.request, walk.guaranteed, walk.maximum, walk.job.preemptible, usage)
