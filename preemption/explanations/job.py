"""Job (gang) preemption (SPEC 4.5): the static rules against the job's priority, then the
replay of the reprieve walk with the queue's admission numbers."""

from __future__ import annotations

from typing import Any

from preemption.explanations.notes import Note, Notes, plan_reasons
from preemption.explanations.task_rules import opted_out_text
from preemption.explanations.wording import ordinal, quantity, when
from preemption.job.admission import JobUsage, admits, usage_without
from preemption.job.candidates import job_of
from preemption.model import ClusterState, Options, Outcome, Plan, Reason


def job_of_subject(state: ClusterState, subject: str) -> str:
    """The job of a job plan: ``subject`` itself when some ask belongs to a job of that name,
    else the job of the ask ``subject``."""
    if any(ask.job == subject for ask in state.asks):
        return subject
    ask = state.asks_by_id.get(subject)
    return ask.job if ask is not None and ask.job else subject


def describe_job(state: ClusterState, plan: Plan, subject: str, options: Options) -> Notes:
    """Static rules against the job's priority, then a replay of the reprieve walk (most
    important first) with the queue's admission numbers; a victim whose return keeps admission
    was kept out because the job's asks would no longer all place."""
    del options
    job = job_of(state, job_of_subject(state, subject))
    reasons = plan_reasons(plan)
    notes: Notes = {}
    if job is None:
        return notes
    walk = []
    for allocation in state.running:
        reason = reasons.get(allocation.id)
        if reason == Reason.LAW1_OPTED_OUT:
            notes[allocation.id] = Note(opted_out_text())
        elif reason == Reason.LAW6_HIGHER_PRIORITY:
            relation = ">" if allocation.priority > job.priority else "="
            notes[allocation.id] = Note(
                f"priority {allocation.priority} {relation} job priority {job.priority}: only "
                "lower priorities may go"
            )
        elif reason is not None:
            walk.append(allocation)
    walk.sort(key=lambda a: (-a.priority, a.created_at, a.id))
    if plan.outcome == Outcome.DOES_NOT_HELP:
        for rank, allocation in enumerate(walk, 1):
            notes[allocation.id] = Note(
                f"{ordinal(rank)} candidate (priority {allocation.priority}, created "
                f"{when(allocation.created_at)}): even with every candidate gone the job's asks "
                "do not all place, so nobody is preempted (all or nothing)",
                rank,
            )
        return notes

    hierarchy = state.hierarchy
    queue = hierarchy.queues[job.queue]
    types = tuple(sorted(job.request))
    in_queue = {a.id for a in state.running if hierarchy.is_within(a.queue, job.queue)}
    usage = usage_without(state.running, in_queue, {a.id for a in walk}, types)
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    for rank, allocation in enumerate(walk, 1):
        place = (
            f"{ordinal(rank)} in the reprieve walk: priority {allocation.priority}, created "
            f"{when(allocation.created_at)}"
        )
        own = allocation.id in in_queue
        back = JobUsage(
            dict(usage.nonpreemptible),
            {
                n: v + (allocation.resources.get(n, 0) if own else 0)
                for n, v in usage.preemptible.items()
            },
        )
        if reasons[allocation.id] == Reason.NOT_NEEDED_AFTER_REPRIEVE:
            usage = back
            notes[allocation.id] = Note(
                f"reprieved, {place}; with it kept the job still places and {job.queue} still "
                "admits it",
                rank,
            )
            continue
        if own and not admits(job.request, queue.guaranteed, queue.max, job.preemptible, back):
            why = f"{job.queue} would no longer admit the job ({_admission(job, queue, back)})"
        else:
            why = "the job's asks would no longer all place (first fit, largest first)"
        notes[allocation.id] = Note(
            f"victim #{position.get(allocation.id, '-')}, {place}; with it kept {why}", rank
        )
    return notes


def _admission(job: Any, queue: Any, usage: JobUsage) -> str:
    """The first admission inequality that fails (``job.admits``), in numbers."""
    for name, amount in job.request.items():
        low = queue.guaranteed.get(name, 0)
        high = queue.max.get(name)
        held = usage.nonpreemptible.get(name, 0)
        shared = usage.preemptible.get(name, 0)
        if job.preemptible:
            if high is not None and min(low, held) + shared + amount > high:
                return (
                    f"{name}: min(guarantee {quantity(name, low)}, non-preemptible usage "
                    f"{quantity(name, held)}) + preemptible usage {quantity(name, shared)} + "
                    f"request {quantity(name, amount)} > max {quantity(name, high)}"
                )
            continue
        if held + amount > low:
            return (
                f"{name}: non-preemptible usage {quantity(name, held)} + request "
                f"{quantity(name, amount)} > guarantee {quantity(name, low)}"
            )
        if high is not None and held + shared + amount > high:
            return (
                f"{name}: usage {quantity(name, held + shared)} + request "
                f"{quantity(name, amount)} > max {quantity(name, high)}"
            )
    return "admission fails"
