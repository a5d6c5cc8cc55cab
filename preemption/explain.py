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
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple

from preemption.explanations.inter_queue import describe_inter_queue
from preemption.explanations.job import describe_job, job_of_subject
from preemption.explanations.notes import Note, Notes, Remaining, plan_verdicts
from preemption.explanations.priority import describe_priority
from preemption.explanations.quota import describe_quota
from preemption.explanations.required_node import describe_required_node
from preemption.explanations.wording import amounts, ordinal, when
from preemption.job.candidates import job_of
from preemption.model import ClusterState, Options, Plan, PolicyName, Reason
from preemption.quota import quota_target

__all__ = [
    "POLICY_ORDERS",
    "CandidateRecord",
    "amounts",
    "explain",
    "explain_lazily",
    "ordinal",
    "subject_facts",
]


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


def explain(
    state: ClusterState,
    plan: Plan,
    subject: str,
    options: Options | None = None,
    *,
    only: Collection[str] | None = None,
) -> list[CandidateRecord]:
    """One record per explanation of ``plan`` (sorted by candidate id, as the plan's are).

    ``state`` is the state the plan was made on; ``subject`` the queue path (quota), the ask id
    (inter-queue, required-node, priority) or the job id or one of its asks' ids (job);
    ``options`` those the plan was made with (the defaults when None). A plan without
    explanations (``not_triggered``) has no records.

    ``only``: the records of just these candidates (others named are ignored), each the same
    as the full list has for it. A preview shows its plan's first candidates, not all 100,000:
    the quota replay then still walks every candidate (the numbers of one depend on those
    before it) but writes the sentences of these alone.
    """
    if not plan.explanations:
        return []
    with collector_paused():
        return list(_records(state, plan, subject, options or Options(), only))


def explain_lazily(
    state: ClusterState, plan: Plan, subject: str, options: Options | None = None
) -> Iterator[CandidateRecord]:
    """``explain``'s records one by one, each made when it is read (the replay runs at the
    first): a run's store writes each to the database as it comes and drops it, so the
    database works on the rows while the next ones are made, and 100,000 records are never all
    alive at once. The collector is paused until the last one is read (or the reader drops
    them), as in ``explain``: the replay's notes for every candidate are alive meanwhile."""
    if not plan.explanations:
        return
    with collector_paused():
        yield from _records(state, plan, subject, options or Options(), None)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the records are made (and, in the services,
    while a big state is loaded and planned: 95,000 allocations made at once set off hundreds
    of collections, a quarter of a big preview's time).

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


def _records(
    state: ClusterState, plan: Plan, subject: str, options: Options, only: Collection[str] | None
) -> Iterator[CandidateRecord]:
    describe = _DESCRIBERS[plan.policy]
    if only is not None and plan.policy == PolicyName.QUOTA:  # the replay that can skip notes
        notes = describe(state, plan, subject, options, only=only)
    else:
        notes = describe(state, plan, subject, options)
    if only is not None:
        wanted = only if isinstance(only, set | frozenset) else set(only)
        verdicts = plan_verdicts(plan, wanted)
        by_id = {
            allocation.id: allocation for allocation in state.allocations if allocation.id in wanted
        }
    else:
        verdicts = plan_verdicts(plan)
        by_id = {allocation.id: allocation for allocation in state.allocations}
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    for candidate, accepted, reason in verdicts:
        # Popped: the note is done with once its record is made (fewer objects kept alive).
        note = notes.pop(candidate, None) or Note(_unexplained(reason))
        place = position.get(candidate) if accepted else None
        allocation = by_id.get(candidate)
        if allocation is None:
            yield CandidateRecord(
                candidate,
                accepted,
                reason,
                note.detail,
                place,
                note.rank,
                remaining_before=note.before,
                remaining_after=note.after,
            )
            continue
        # The facts the decision used, positionally in field order (one record per candidate:
        # this loop runs 100,000 times for a big plan).
        yield CandidateRecord(
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
        job = job_of(state, job_of_subject(state, subject))
        if job is None:
            return {"job": subject}
        return {
            "job": job_of_subject(state, subject),
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


_DESCRIBERS: dict[str, Callable[..., Notes]] = {
    PolicyName.QUOTA: describe_quota,
    PolicyName.INTER_QUEUE: describe_inter_queue,
    PolicyName.PRIORITY: describe_priority,
    PolicyName.REQUIRED_NODE: describe_required_node,
    PolicyName.JOB: describe_job,
}
