"""An engine plan turned into rows for ``templates/web/queue_pages/_plan.html``.

Shared by the change preview (queue page), the simulator and, later, the run-detail page: they
all hold either a ``preemption.model.Plan`` or its ``to_json()`` form (which is also what a
stored ``PreemptionRun`` keeps: canonical integers, explanations as dicts). The candidates' task
details (queue, node, resources, priority) are not in a plan, so they are read from the
partition's allocations, only for the rows that are shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from preemption import resources
from preemption.model import Plan
from scheduler_admin.cluster.models import Allocation
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.explanations import ALERT_OUTCOMES, outcome_text, reason_text

#: At most this many candidates are listed (victims always are); a big cluster's plan explains
#: every task in scope, and a page of 100,000 rows helps nobody. The rest are counted by reason.
CANDIDATE_LIMIT = 300

POLICY_NAMES = {
    "quota": "Quota enforcement (SPEC 4.1)",
    "inter_queue": "Inter-queue preemption (SPEC 4.2)",
    "required_node": "Required-node (DaemonSet) preemption (SPEC 4.3)",
    "priority": "Priority preemption (SPEC 4.4)",
    "job": "Job (gang) preemption (SPEC 4.5)",
}


@dataclass(frozen=True)
class CandidateRow:
    """One explained candidate: the engine's verdict in plain words, with the task's details."""

    id: str
    accepted: bool
    reason: str
    words: str
    rule: str
    #: 1-based position in the victim list (the order taken), None for non-victims.
    order: int | None
    queue: str = ""
    node: str = ""
    resources: Mapping[str, int] = field(default_factory=dict)
    priority: int | None = None
    state: str = ""


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


@dataclass(frozen=True)
class PlanView:
    """Everything ``_plan.html`` renders for one plan."""

    policy: str
    policy_name: str
    outcome: str
    outcome_words: str
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


def plan_view(
    plan: Plan | Mapping[str, Any],
    partition: Partition,
    *,
    title: str = "",
    limit: int = CANDIDATE_LIMIT,
) -> PlanView:
    """Rows for one plan: victims in the order taken, per-leaf targets against freed, and the
    explained candidates (victims first, then by id), at most ``limit`` of them."""
    body = plan.to_json() if isinstance(plan, Plan) else dict(plan)
    victims: list[str] = list(body.get("victims") or [])
    explanations: list[Mapping[str, Any]] = list(body.get("explanations") or [])
    position = {victim: index + 1 for index, victim in enumerate(victims)}
    by_id = {str(item["candidate"]): item for item in explanations}

    ordered = victims + sorted(c for c in by_id if c not in position)
    shown_ids = ordered[: max(limit, len(victims))]
    shown = [
        by_id.get(candidate, {"candidate": candidate, "accepted": True, "reason": "victim"})
        for candidate in shown_ids
    ]
    rows = candidate_rows(shown, victims, allocation_details(partition, shown_ids))
    hidden_counts: dict[str, int] = {}
    for candidate in ordered[len(shown_ids) :]:
        reason = str(by_id[candidate]["reason"])
        hidden_counts[reason] = hidden_counts.get(reason, 0) + 1
    outcome = str(body.get("outcome", ""))
    policy = str(body.get("policy", ""))
    victim_rows = [r for r in rows if r.order is not None]
    return PlanView(
        policy=policy,
        policy_name=POLICY_NAMES.get(policy, policy),
        outcome=outcome,
        outcome_words=outcome_text(outcome),
        alert=outcome in ALERT_OUTCOMES,
        node=str(body.get("node") or ""),
        nominations=sorted((body.get("nominations") or {}).items()),
        victims=victim_rows,
        targets=target_rows(body.get("targets") or {}, victim_rows),
        freed=dict(body.get("freed") or {}),
        candidates=rows,
        hidden=[
            ReasonCount(reason, reason_text(reason).words, count)
            for reason, count in sorted(hidden_counts.items())
        ],
        explained=len(ordered),
        title=title,
    )


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


def candidate_rows(
    items: Iterable[Mapping[str, Any]],
    victim_order: Sequence[str],
    details: Mapping[str, Mapping[str, Any]],
) -> list[CandidateRow]:
    """Rows for explanations (``{"candidate", "accepted", "reason"}``): the reason in plain
    words with the rule it cites, the victim's position in the order taken, and the task's
    details where the allocation is known (``allocation_details``; a released task has none)."""
    position = {candidate: index + 1 for index, candidate in enumerate(victim_order)}
    rows = []
    for item in items:
        candidate = str(item["candidate"])
        text = reason_text(str(item["reason"]))
        rows.append(
            CandidateRow(
                id=candidate,
                accepted=bool(item["accepted"]),
                reason=str(item["reason"]),
                words=text.words,
                rule=text.rule,
                order=position.get(candidate),
                **details.get(candidate, {}),
            )
        )
    return rows


def allocation_details(partition: Partition, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Queue, node, resources, priority and state of the given allocations, by id (one query)."""
    if not ids:
        return {}
    rows = Allocation.objects.filter(partition=partition, external_id__in=ids).values_list(
        "external_id", "queue_path", "node_name", "resources", "priority", "state"
    )
    return {
        external_id: {
            "queue": queue,
            "node": node,
            "resources": amounts,
            "priority": priority,
            "state": state,
        }
        for external_id, queue, node, amounts, priority, state in rows
    }
