"""An engine plan turned into rows for ``templates/web/queue_pages/_plan.html``.

Shared by the change preview (queue page) and the simulator, which plan on the cluster as it is
now; the run page shows a stored run's candidates in the same rows (``CandidateRow``), read from
its ``RunCandidate`` rows. Each candidate comes with the specific reason and the facts that
``preemption.explain`` gives for the plan, on the state the plan was made on, so a preview, a
simulation and a run say the same thing in the same words; the plain words of each reason link to
its glossary entry.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from preemption import resources
from preemption.explain import CandidateRecord
from preemption.model import Explanations, Plan
from scheduler_admin.web.explanations import (
    ALERT_OUTCOMES,
    glossary_url,
    outcome_anchor,
    outcome_text,
    reason_anchor,
    reason_text,
)

#: At most this many candidates are listed (victims always are); a big cluster's plan explains
#: every task in scope, and a page of 100,000 rows helps nobody. The rest are counted by reason.
CANDIDATE_LIMIT = 300

#: The policies' names as pages show them (SPEC 4.1 to 4.5, in that order).
POLICY_NAMES = {
    "quota": "Quota enforcement",
    "inter_queue": "Inter-queue preemption",
    "required_node": "Required-node (DaemonSet) preemption",
    "priority": "Priority preemption (Kubernetes style)",
    "job": "Job (gang) preemption",
}


@dataclass(frozen=True)
class CandidateRow:
    """One explained candidate: the engine's verdict in plain words (linked to the glossary),
    the specific reason with its numbers, and the facts of the task when the plan was made."""

    id: str
    accepted: bool
    reason: str
    words: str
    rule: str
    #: 1-based position in the victim list (the order taken), None for non-victims.
    order: int | None
    detail: str = ""
    link: str = ""
    rank: int | None = None
    queue: str = ""
    application: str = ""
    node: str = ""
    resources: Mapping[str, int] = field(default_factory=dict)
    priority: int | None = None
    qos: str = ""
    created_at: datetime | None = None
    originator: bool | None = None
    allow_preemption: bool | None = None
    budget: str = ""
    required_node: str = ""


def candidate_row(candidate: str, accepted: bool, reason: str, **facts: Any) -> CandidateRow:
    """A row with the reason's plain words, the rule it cites and its glossary link."""
    text = reason_text(reason)
    return CandidateRow(
        id=candidate,
        accepted=accepted,
        reason=reason,
        words=text.words,
        rule=text.rule,
        link=glossary_url(reason_anchor(reason)),
        **facts,
    )


#: The facts a row shows besides the verdict, named as ``CandidateRecord`` (and ``CandidateRow``)
#: name them.
FACTS = (
    "detail", "rank", "queue", "application", "node", "resources", "priority", "qos",
    "created_at", "originator", "allow_preemption", "budget", "required_node",
)  # fmt: skip


def record_row(record: CandidateRecord) -> CandidateRow:
    """The row of one ``preemption.explain`` record."""
    facts = {name: getattr(record, name) for name in FACTS}
    return candidate_row(
        record.candidate, record.accepted, str(record.reason), order=record.position, **facts
    )


@dataclass(frozen=True)
class TargetRow:
    """A leaf's share of the quota target against what the plan's victims in it free."""

    queue: str
    target: dict[str, int]
    freed: dict[str, int]

    @property
    def met(self) -> bool:
        return all(self.freed.get(name, 0) >= value for name, value in self.target.items())


@dataclass(frozen=True)
class ReasonCount:
    reason: str
    words: str
    count: int
    link: str = ""


@dataclass(frozen=True)
class PlanView:
    """Everything ``_plan.html`` renders for one plan."""

    policy: str
    policy_name: str
    outcome: str
    outcome_words: str
    outcome_link: str
    alert: bool
    node: str
    nominations: list[tuple[str, str]]
    victims: list[CandidateRow]
    targets: list[TargetRow]
    freed: dict[str, int]
    candidates: list[CandidateRow]
    hidden: list[ReasonCount]
    explained: int
    title: str = ""

    @property
    def hidden_total(self) -> int:
        return sum(item.count for item in self.hidden)


#: ``describe(only)``: the records of a plan's candidates, just those of ``only`` when given
#: (``preemption.explain``'s ``only``), every one when None.
Describe = Callable[[Collection[str] | None], Sequence[CandidateRecord]]


def plan_view(
    plan: Plan,
    describe: Describe,
    *,
    title: str = "",
    limit: int = CANDIDATE_LIMIT,
) -> PlanView:
    """Rows for one plan: victims in the order taken, per-leaf targets against freed, and the
    explained candidates (victims first, then by id), at most ``limit`` of them besides the
    victims; the rest are counted by reason from the plan's own verdicts. Only the listed
    candidates are described (``describe``): a big tenant's plan has 95,000 candidates, and
    writing a sentence for each of them took most of a preview page's time."""
    reasons = _reasons(plan)
    position = {victim: index for index, victim in enumerate(plan.victims, 1)}
    ordered = sorted(reasons, key=lambda c: (position.get(c, len(position) + 1), c))
    listed = ordered[: max(limit, len(plan.victims))]
    records = describe(listed if len(listed) < len(ordered) else None)
    by_candidate = {record.candidate: record for record in records}
    rows = [record_row(by_candidate[c]) for c in listed if c in by_candidate]
    hidden_counts: dict[str, int] = {}
    for candidate in ordered[len(listed) :]:
        reason = reasons[candidate]
        hidden_counts[reason] = hidden_counts.get(reason, 0) + 1
    outcome, policy = str(plan.outcome), str(plan.policy)
    victim_rows = [row for row in rows if row.order is not None]
    return PlanView(
        policy=policy,
        policy_name=POLICY_NAMES.get(policy, policy),
        outcome=outcome,
        outcome_words=outcome_text(outcome),
        outcome_link=glossary_url(outcome_anchor(outcome)),
        alert=outcome in ALERT_OUTCOMES,
        node=plan.node or "",
        nominations=sorted(plan.nominations.items()),
        victims=victim_rows,
        targets=target_rows(plan.targets, victim_rows),
        freed=dict(plan.freed),
        candidates=rows,
        hidden=[
            ReasonCount(
                reason, reason_text(reason).words, count, glossary_url(reason_anchor(reason))
            )
            for reason, count in sorted(hidden_counts.items())
        ],
        explained=len(ordered),
        title=title,
    )


def _reasons(plan: Plan) -> dict[str, str]:
    """Candidate -> reason of every explanation of ``plan`` (what the records say too)."""
    explanations = plan.explanations
    if isinstance(explanations, Explanations):
        return {candidate: str(reason) for candidate, reason in explanations.reasons.items()}
    return {item.candidate: str(item.reason) for item in explanations}


def target_rows(
    targets: Mapping[str, Mapping[str, int]], victims: Sequence[CandidateRow]
) -> list[TargetRow]:
    """Each leaf's target with the sum of the victims taken in that leaf."""
    freed: dict[str, dict[str, int]] = {}
    for victim in victims:
        freed[victim.queue] = resources.add(freed.get(victim.queue, {}), victim.resources)
    return [
        TargetRow(queue=path, target=dict(amounts), freed=freed.get(path, {}))
        for path, amounts in sorted(targets.items())
    ]
