"""Plain words for the engine's reason codes and outcomes, shared by every page that shows a plan
(run detail, change preview, simulator). Each reason names, in words, the rule it comes from
(SPEC section 4; a law of seed 000 with its number and its words, as the glossary introduces it)
and the policies that apply it, and has an entry in the glossary (``/glossary/``,
``web.glossary``): pages link the words to it, so no rule is left for the reader to look up by a
number alone."""

from __future__ import annotations

from typing import NamedTuple

from django.urls import reverse

from preemption.model import Reason


class ReasonText(NamedTuple):
    words: str
    rule: str


REASONS: dict[str, ReasonText] = {
    Reason.VICTIM: ReasonText(
        "Chosen: preempting it moves the plan towards its goal.",
        "Every policy: candidates are taken in the policy's order until its goal is met",
    ),
    Reason.LAW1_OPTED_OUT: ReasonText(
        "The task opted out of preemption (allow_preemption is false).",
        "Law 1, a task may opt out of preemption (inter-queue and job preemption)",
    ),
    Reason.LAW2_BELOW_GUARANTEE: ReasonText(
        "Taking it would push its queue below the queue's guaranteed resources.",
        "Law 2, preemption never leaves a queue below its guarantee (quota and inter-queue "
        "preemption)",
    ),
    Reason.LAW3_SAME_APPLICATION: ReasonText(
        "It belongs to the same application as the task asking for room.",
        "Law 3, a task cannot preempt tasks of its own application (inter-queue preemption)",
    ),
    Reason.LAW5_QUEUE_WITHIN_GUARANTEE: ReasonText(
        "Its queue is not above its guarantee, so nothing may be taken from it.",
        "Law 5, only a queue over its guarantee loses tasks (inter-queue preemption)",
    ),
    Reason.LAW6_HIGHER_PRIORITY: ReasonText(
        "Its priority is too high to be preempted by the task asking for room.",
        "Law 6, a task can only preempt tasks of lower or equal priority (inter-queue, "
        "required-node, priority and job preemption)",
    ),
    Reason.OUTSIDE_FENCE: ReasonText(
        "It runs outside the preemption fence that bounds the asking queue.",
        "Law 7, a task cannot preempt outside its preemption fence (inter-queue preemption)",
    ),
    Reason.QUEUE_PREEMPTION_DISABLED: ReasonText(
        "Its queue has preemption disabled (preemption.policy: disabled).",
        "A queue with preemption disabled gives up no tasks (inter-queue preemption)",
    ),
    Reason.DAEMONSET_EXCLUDED: ReasonText(
        "It is itself a DaemonSet (required-node) task, never a victim of another.",
        "DaemonSet pods are never victims (quota, inter-queue and required-node preemption)",
    ),
    Reason.NO_SHARED_RESOURCE: ReasonText(
        "It uses none of the resource types that are needed.",
        "A victim must free a resource that is needed (quota, inter-queue and required-node "
        "preemption)",
    ),
    Reason.TARGET_MET: ReasonText(
        "Not needed: earlier victims already free enough.",
        "Every policy: no more victims than the goal needs",
    ),
    Reason.NOT_ON_NODE: ReasonText(
        "It runs on a node other than the one the plan chose.",
        "All victims on one node: the one the plan chose (inter-queue and priority preemption)",
    ),
    Reason.DEVIATION_TOO_LARGE: ReasonText(
        "As the single victim its size deviates from the ask by more than deviation_percent.",
        "Required-node preemption, single strategy: one task of about the ask's size",
    ),
    Reason.TOO_MANY_VICTIMS: ReasonText(
        "Making room would need more victims than max_victims allows.",
        "Required-node preemption, multiple strategy: at most max_victims tasks",
    ),
    Reason.NOT_NEEDED_AFTER_REPRIEVE: ReasonText(
        "Reprieved: the goal is met without it once the others are taken.",
        "Priority and job preemption: the fewest victims, the most important kept",
    ),
    Reason.BUDGET_VIOLATION: ReasonText(
        "Preempting it would break a disruption budget.",
        "Priority preemption: disruption budgets are kept where a node allows it",
    ),
}

OUTCOMES: dict[str, str] = {
    "not_triggered": "Nothing to do: the policy's trigger conditions do not hold.",
    "complete": "The goal is met by the victims listed.",
    "best_effort": "The goal is met within the allowed miss tolerance.",
    "short": "Not enough could be freed without breaking a rule: the queue stays over its max.",
    "does_not_help": "Triggered, but no acceptable set of victims exists: nobody is preempted.",
}

#: Outcomes the dashboard raises as alerts.
ALERT_OUTCOMES = frozenset({"short", "does_not_help"})


def reason_text(code: str) -> ReasonText:
    """Words and rule for a reason code; an unknown code (from a newer engine) is shown as is."""
    return REASONS.get(code, ReasonText(code, ""))


def outcome_text(outcome: str) -> str:
    return OUTCOMES.get(outcome, outcome)


def reason_anchor(code: str) -> str:
    """The glossary entry of a reason code (``reason-law6_higher_priority``); "" when the
    glossary does not know the code."""
    return f"reason-{code}" if code in REASONS else ""


def outcome_anchor(outcome: str) -> str:
    """The glossary entry of an outcome (``outcome-short``); "" for an unknown one."""
    return f"outcome-{outcome}" if outcome in OUTCOMES else ""


def glossary_url(anchor: str) -> str:
    """Where an entry of the glossary is (``/glossary/#reason-victim``); "" without an anchor."""
    return f"{reverse('glossary')}#{anchor}" if anchor else ""
