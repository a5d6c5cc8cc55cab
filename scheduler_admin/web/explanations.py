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
    # The second text is the rule, short enough for a table cell: its name in words (laws with
    # their number, as the glossary introduces them); the glossary entry the page links to
    # says which policies apply it and why.
    Reason.VICTIM: ReasonText(
        "Chosen: preempting it moves the plan towards its goal.", "Taken in the policy's order"
    ),
    Reason.LAW1_OPTED_OUT: ReasonText(
        "The task opted out of preemption (allow_preemption is false).",
        "Law 1: tasks may opt out",
    ),
    Reason.LAW2_BELOW_GUARANTEE: ReasonText(
        "Taking it would push its queue below the queue's guaranteed resources.",
        "Law 2: guarantees are kept",
    ),
    Reason.LAW3_SAME_APPLICATION: ReasonText(
        "It belongs to the same application as the task asking for room.",
        "Law 3: not its own application",
    ),
    Reason.LAW5_QUEUE_WITHIN_GUARANTEE: ReasonText(
        "Its queue is not above its guarantee, so nothing may be taken from it.",
        "Law 5: only queues over guarantee",
    ),
    Reason.LAW6_HIGHER_PRIORITY: ReasonText(
        "Its priority is too high to be preempted by the task asking for room.",
        "Law 6: lower priority only",
    ),
    Reason.OUTSIDE_FENCE: ReasonText(
        "It runs outside the preemption fence that bounds the asking queue.",
        "Law 7: inside the fence",
    ),
    Reason.QUEUE_PREEMPTION_DISABLED: ReasonText(
        "Its queue has preemption disabled (preemption.policy: disabled).",
        "Queue opted out of preemption",
    ),
    Reason.DAEMONSET_EXCLUDED: ReasonText(
        "It is itself a DaemonSet (required-node) task, never a victim of another.",
        "DaemonSet pods are kept",
    ),
    Reason.NO_SHARED_RESOURCE: ReasonText(
        "It uses none of the resource types that are needed.", "Must free what is needed"
    ),
    Reason.TARGET_MET: ReasonText(
        "Not needed: earlier victims already free enough.", "No more than the goal needs"
    ),
    Reason.NOT_ON_NODE: ReasonText(
        "It runs on a node other than the one the plan chose.", "All victims on one node"
    ),
    Reason.DEVIATION_TOO_LARGE: ReasonText(
        "As the single victim its size deviates from the ask by more than deviation_percent.",
        "One victim of about the ask's size",
    ),
    Reason.TOO_MANY_VICTIMS: ReasonText(
        "Making room would need more victims than max_victims allows.",
        "At most max_victims victims",
    ),
    Reason.NOT_NEEDED_AFTER_REPRIEVE: ReasonText(
        "Reprieved: the goal is met without it once the others are taken.",
        "Fewest victims, most important kept",
    ),
    Reason.NODE_INELIGIBLE: ReasonText(
        "It runs on a node the ask may not use (node selector, node affinity or taints).",
        "Only nodes the ask may use",
    ),
    Reason.BUDGET_VIOLATION: ReasonText(
        "Preempting it would break a disruption budget.", "Disruption budgets kept if possible"
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
