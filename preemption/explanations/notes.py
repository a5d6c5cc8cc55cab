"""What a policy's replay says of each candidate (``Note``), what remained of the plan's goal
(``Remaining``), and the small sums the replays make on it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import NamedTuple

from preemption.model import Explanations, Plan, Reason

#: What remained of a plan's goal at one moment, per scope: a leaf queue's path (quota), or
#: ``node <name>`` and the paths of exceeded queues (what an ask still needed).
Remaining = dict[str, dict[str, int]]


class Note(NamedTuple):
    """What a policy's replay says of one candidate."""

    detail: str
    rank: int | None = None
    before: Remaining | None = None
    after: Remaining | None = None


Notes = dict[str, Note]


def plan_verdicts(plan: Plan, only: Set[str] | None = None) -> Iterable[tuple[str, bool, Reason]]:
    """(candidate, accepted, reason) of each explanation, by candidate id; from the policy's
    own map when the plan kept it (no ``Explanation`` made per candidate). ``only``: just
    those of these candidates (others named are ignored), found by id rather than by reading
    all 100,000 of a big plan."""
    explanations = plan.explanations
    if not isinstance(explanations, Explanations):
        if only is None:
            return explanations
        return [verdict for verdict in explanations if verdict[0] in only]
    reasons, accepted = explanations.reasons, explanations.accepted
    if only is not None:
        return [
            (candidate, candidate in accepted, reasons[candidate])
            for candidate in sorted(only)
            if candidate in reasons
        ]
    return (
        (candidate, candidate in accepted, reasons[candidate])
        for candidate in explanations.candidates
    )


def plan_reasons(plan: Plan) -> Mapping[str, Reason]:
    """Candidate -> reason of ``plan`` (the policy's own map when the plan kept it)."""
    if isinstance(plan.explanations, Explanations):
        return plan.explanations.reasons
    return {explanation.candidate: explanation.reason for explanation in plan.explanations}


def only(values: Mapping[str, int], kinds: Iterable[str]) -> dict[str, int]:
    return {kind: values.get(kind, 0) for kind in kinds}


def positive(values: Mapping[str, int]) -> dict[str, int]:
    return {kind: value for kind, value in sorted(values.items()) if value > 0}


def subtract_into(remaining: dict[str, int], freed: Mapping[str, int]) -> None:
    """What a victim leaves of ``remaining``: types it covers are dropped (the policies'
    own bookkeeping: a remaining amount is always positive)."""
    for kind in list(remaining):
        left = remaining[kind] - freed.get(kind, 0)
        if left > 0:
            remaining[kind] = left
        else:
            del remaining[kind]


def add_into(total: dict[str, int], amount: Mapping[str, int]) -> None:
    for kind, value in amount.items():
        total[kind] = total.get(kind, 0) + value
