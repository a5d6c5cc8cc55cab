"""What the glossary says: the seven laws of seed 000, the fences, every reason code, every
outcome and every policy, each with the anchor pages link to (``#law-7``, ``#fence-preemption``,
``#reason-law6_higher_priority``, ``#outcome-short``, ``#policy-quota``).

The short words and the rule of each reason and outcome are those every page shows
(``web.explanations``), and the order each policy walks its candidates in is the engine's own
(``preemption.explain.POLICY_ORDERS``), so the glossary cannot say something else than the pages
that link to it. What is added here is the longer explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

from preemption.explain import POLICY_ORDERS
from preemption.model import Outcome, PolicyName, Reason
from scheduler_admin.web.explanations import (
    OUTCOMES,
    outcome_anchor,
    reason_anchor,
    reason_text,
)
from scheduler_admin.web.plans import POLICY_NAMES


@dataclass(frozen=True)
class Entry:
    """One glossary entry: its anchor, a title, the short words pages show (if any), the rule
    it comes from, the longer text, and the laws it relates to (their anchors)."""

    anchor: str
    title: str
    text: str
    words: str = ""
    rule: str = ""
    laws: tuple[int, ...] = ()
    order: str = ""


LAWS: list[Entry] = [
    Entry(
        "law-1",
        "Law 1: preemption policies are strong suggestions, not guarantees",
        "A task may ask not to be preempted (allow_preemption: false). Inter-queue and job "
        "preemption never take such a task (law1_opted_out); quota enforcement takes it after "
        "the tasks of the same priority that allow preemption; required-node (DaemonSet) "
        "preemption takes it only as a last resort, when nothing else on the node helps.",
    ),
    Entry(
        "law-2",
        "Law 2: preemption never leaves a queue below its guarantee",
        "A victim may not take its queue, or an ancestor, below a guaranteed amount it was at or "
        "above when the plan started; types already below their guarantee do not block. The "
        "check counts every victim the plan took before (law2_below_guarantee). For inter-queue "
        "preemption only the queues below the lowest common ancestor with the asking queue are "
        "protected: above it the ask's usage replaces the victim's.",
    ),
    Entry(
        "law-3",
        "Law 3: a task cannot preempt tasks of its own application",
        "The asking task's own application is never a source of victims (law3_same_application).",
    ),
    Entry(
        "law-4",
        "Law 4: only a queue under its guarantee triggers preemption",
        "An ask triggers inter-queue preemption only when its queue guarantees at least one of "
        "the ask's resource types and is below its guarantee on every such type. Otherwise the "
        "plan is not_triggered: normal scheduling, not preemption, brings a queue from its "
        "guarantee up to its max.",
    ),
    Entry(
        "law-5",
        "Law 5: only a queue over its guarantee loses tasks",
        "Tasks are taken only from queues whose usage is above their guarantee on some type of "
        "the ask (law5_queue_within_guarantee otherwise). The asking queue itself, being under "
        "its guarantee (law 4), never gives up tasks for its own ask.",
    ),
    Entry(
        "law-6",
        "Law 6: a task can only preempt tasks of lower or equal priority",
        "Inter-queue and required-node preemption may take tasks of equal or lower priority. "
        "Priority preemption (Kubernetes style) and job preemption take strictly lower "
        "priorities only (law6_higher_priority otherwise).",
    ),
    Entry(
        "law-7",
        "Law 7: a task cannot preempt outside its preemption fence",
        "Victims of an inter-queue plan must sit inside the subtree of the ask's fence root "
        "(outside_fence otherwise). See preemption fence below.",
    ),
]

FENCES: list[Entry] = [
    Entry(
        "fence-preemption",
        "Preemption fence",
        "A queue with preemption.policy: fence bounds the search for victims of asks inside it: "
        "walking up from the ask's queue, the fence root is the first queue that is a fence, or "
        "whose usage plus the ask would exceed its own max, or root. Only tasks in the fence "
        "root's subtree can be victims. The fence is one-way: it keeps the search from going "
        "out, not other queues' asks from coming in. The Fences page draws every fence.",
        laws=(7,),
    ),
    Entry(
        "fence-disabled",
        "Preemption disabled",
        "A queue with preemption.policy: disabled gives up no tasks to inter-queue preemption, "
        "and neither do its descendants unless they set a policy of their own "
        "(queue_preemption_disabled).",
    ),
    Entry(
        "fence-token",
        "Fencing token (runs)",
        "Unrelated to preemption fences: every claim of a preemption run raises its queue's "
        "fencing token, and every write of the run checks it, so a worker that lost its lease "
        "writes nothing more. The run page's attempt count tells how often a run was claimed.",
    ),
]

#: The longer text of each reason code, and the laws it comes from.
_REASON_TEXTS: dict[str, tuple[str, tuple[int, ...]]] = {
    Reason.VICTIM: (
        "The candidate is preempted: it passed every rule, and taking it moved the plan towards "
        "its goal. Its explanation says its place in the policy's order, the values of the order "
        "that put it there, and what remained of the goal before and after it. In a plan that "
        "does not help, the candidates that would all have had to go keep this reason but are "
        "not taken.",
        (),
    ),
    Reason.LAW1_OPTED_OUT: ("The task set allow_preemption: false.", (1,)),
    Reason.LAW2_BELOW_GUARANTEE: (
        "Taking it would take a queue below a guarantee it was at or above; the explanation "
        "names the queue, the type, the guarantee, the usage, what earlier victims took and the "
        "task's own amount.",
        (2,),
    ),
    Reason.LAW3_SAME_APPLICATION: (
        "It belongs to the application of the asking task.",
        (3,),
    ),
    Reason.LAW5_QUEUE_WITHIN_GUARANTEE: (
        "Its queue's usage is not above its guarantee on any type of the ask, or it is the "
        "asking queue itself.",
        (5,),
    ),
    Reason.LAW6_HIGHER_PRIORITY: (
        "Its priority is above the ask's (or equal, where only strictly lower priorities may "
        "go); the explanation gives both priorities.",
        (6,),
    ),
    Reason.OUTSIDE_FENCE: (
        "Its queue is outside the subtree of the ask's fence root; the explanation says why the "
        "fence root is where it is.",
        (7,),
    ),
    Reason.QUEUE_PREEMPTION_DISABLED: (
        "Its queue, or the ancestor it inherits from, has preemption.policy: disabled.",
        (),
    ),
    Reason.DAEMONSET_EXCLUDED: (
        "A DaemonSet pod (one with a required node) is never the victim of another task's "
        "preemption, nor of quota enforcement.",
        (),
    ),
    Reason.NO_SHARED_RESOURCE: (
        "It uses none of the resource types that must be freed, so taking it would free nothing "
        "useful.",
        (),
    ),
    Reason.TARGET_MET: (
        "Not needed: the goal was already met by earlier victims, the task frees none of the "
        "types still missing, or (quota) its leaf queue was given no share of the target; the "
        "explanation says which, with the numbers.",
        (),
    ),
    Reason.NOT_ON_NODE: (
        "The policy frees one node; this task runs on another one.",
        (),
    ),
    Reason.DEVIATION_TOO_LARGE: (
        "The single strategy of required-node preemption looks for one task close to the ask's "
        "size; this one is too small alone, or deviates from the ask's size by more than "
        "deviation_percent, or another task is closer.",
        (),
    ),
    Reason.TOO_MANY_VICTIMS: (
        "The multiple strategy of required-node preemption would need more than max_victims "
        "tasks to make room; nobody is preempted.",
        (),
    ),
    Reason.NOT_NEEDED_AFTER_REPRIEVE: (
        "Priority and job preemption start with every candidate gone and put them back, most "
        "important first, while the ask still fits: this one could stay.",
        (),
    ),
    Reason.NODE_INELIGIBLE: (
        "It runs on a node the waiting pod may not use (its node selector, required node "
        "affinity or a NoSchedule/NoExecute taint it does not tolerate), so taking it would "
        "free room the pod can never use.",
        (),
    ),
    Reason.BUDGET_VIOLATION: (
        "Taken although its disruption budget has no disruption left (more important pods used "
        "them): priority preemption prefers nodes with fewer such victims, but takes them when "
        "no node does better.",
        (),
    ),
}

_OUTCOME_TEXTS: dict[str, str] = {
    Outcome.NOT_TRIGGERED: "The policy's trigger does not hold (for example a quota change that "
    "only raised the max, an ask that fits, a queue not under its guarantee): no candidate was "
    "looked at.",
    Outcome.COMPLETE: "The goal is met: the quota's target is freed, or the ask (or job) fits.",
    Outcome.BEST_EFFORT: "Quota only: short of the target by at most the partition's "
    "miss_percent on every type; the victims are preempted.",
    Outcome.SHORT: "Quota only: some victims, but rules (usually law 2) kept the rest; the victims "
    "are preempted and the queue stays over its new max. The dashboard raises an alert.",
    Outcome.DOES_NOT_HELP: "Triggered, but no acceptable set of victims reaches the goal, so "
    "nobody is preempted. The dashboard raises an alert; an ask is tried again after its delay.",
}

_POLICY_TEXTS: dict[str, str] = {
    PolicyName.QUOTA: "Runs when a lowered max falls due (the queue's quota.preemption.delay "
    "passed). The target is min(usage - max, usage - guaranteed) per type of the new max, split "
    "among the children by releasable usage down to the leaves; each leaf gives up tasks until "
    "its share is freed.",
    PolicyName.INTER_QUEUE: "For an ask whose queue is under its guarantee and that fits no "
    "node: frees one node with tasks of queues over their guarantee, inside the ask's fence, "
    "under the seven laws; the node with the fewest victims wins.",
    PolicyName.REQUIRED_NODE: "For a DaemonSet ask that must run on one node: frees that node, "
    "with the single strategy (one task of about the ask's size) or the multiple strategy "
    "(tasks in order, at most max_victims).",
    PolicyName.PRIORITY: "Kubernetes style, for an ask that fits no node: per node, tasks of "
    "strictly lower priority, reprieved while the ask still fits; the node with the fewest "
    "budget violations, then the lowest victim priorities, wins.",
    PolicyName.JOB: "For a gang (job) that cannot be placed: all or nothing, tasks of lower "
    "priority anywhere, reprieved while the job still places and its queue still admits it.",
}


def reason_entries() -> list[Entry]:
    entries = []
    for code in Reason:
        text, laws = _REASON_TEXTS[code]
        words, rule = reason_text(code)
        entries.append(
            Entry(reason_anchor(code), str(code), text, words=words, rule=rule, laws=laws)
        )
    return entries


def outcome_entries() -> list[Entry]:
    return [
        Entry(
            outcome_anchor(outcome), str(outcome), _OUTCOME_TEXTS[outcome], words=OUTCOMES[outcome]
        )
        for outcome in Outcome
    ]


def policy_entries() -> list[Entry]:
    return [
        Entry(
            f"policy-{policy}",
            POLICY_NAMES[policy],
            _POLICY_TEXTS[policy],
            rule=str(policy),
            order=POLICY_ORDERS[policy],
        )
        for policy in PolicyName
    ]
