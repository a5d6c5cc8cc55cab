"""Plain words for the engine's reason codes and outcomes, shared by every page that shows a plan
(run detail, change preview, simulator). Each reason cites the rule of SPEC section 4 (and the law
of seed 000) it comes from, and has an entry in the glossary (``/glossary/``, ``web.glossary``):
pages link the words to it, so "Law 7" is never left for the reader to look up."""

from __future__ import annotations

from typing import NamedTuple

from django.urls import reverse

from preemption.model import Reason


class ReasonText(NamedTuple):
    words: str
    rule: str


REASONS: dict[str, ReasonText] = {
    Reason.VICTIM: ReasonText("Chosen: preempting it moves the plan towards its goal.", "SPEC 4.0"),
    Reason.LAW1_OPTED_OUT: ReasonText(
        "The task opted out of preemption (allow_preemption is false).", "Law 1, SPEC 4.2 and 4.3"
    ),
    Reason.LAW2_BELOW_GUARANTEE: ReasonText(
        "Taking it would push its queue below the queue's guaranteed resources.", "Law 2, SPEC 4.0"
    ),
    Reason.LAW3_SAME_APPLICATION: ReasonText(
        "It belongs to the same application as the task asking for room.", "Law 3, SPEC 4.2"
    ),
    Reason.LAW5_QUEUE_WITHIN_GUARANTEE: ReasonText(
        "Its queue is not above its guarantee, so nothing may be taken from it.", "Law 5, SPEC 4.2"
    ),
    Reason.LAW6_HIGHER_PRIORITY: ReasonText(
        "Its priority is too high to be preempted by the task asking for room.",
        "Law 6, SPEC 4.2 to 4.5",
    ),
    Reason.OUTSIDE_FENCE: ReasonText(
        "It runs outside the preemption fence that bounds the asking queue.", "Law 7, SPEC 4.2"
    ),
    Reason.QUEUE_PREEMPTION_DISABLED: ReasonText(
        "Its queue has preemption disabled (preemption.policy: disabled).", "SPEC 4.2"
    ),
    Reason.DAEMONSET_EXCLUDED: ReasonText(
        "It is itself a DaemonSet (required-node) task, never a victim of another.", "SPEC 4.3"
    ),
    Reason.NO_SHARED_RESOURCE: ReasonText(
        "It uses none of the resource types that are needed.", "SPEC 4.1 to 4.3"
    ),
    Reason.TARGET_MET: ReasonText("Not needed: earlier victims already free enough.", "SPEC 4.0"),
    Reason.NOT_ON_NODE: ReasonText(
        "It runs on a node other than the one the plan chose.", "SPEC 4.0"
    ),
    Reason.DEVIATION_TOO_LARGE: ReasonText(
        "As the single victim its size deviates from the ask by more than deviation_percent.",
        "SPEC 4.3 (single strategy)",
    ),
    Reason.TOO_MANY_VICTIMS: ReasonText(
        "Making room would need more victims than max_victims allows.",
        "SPEC 4.3 (multiple strategy)",
    ),
    Reason.NOT_NEEDED_AFTER_REPRIEVE: ReasonText(
        "Reprieved: the goal is met without it once the others are taken.", "SPEC 4.4"
    ),
    Reason.BUDGET_VIOLATION: ReasonText(
        "Preempting it would break a disruption budget.", "SPEC 4.4"
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
