"""Where an ask may run (SPEC 3.3 "Eligibility", added 2026-11-29).

Kubernetes' own rules for a pod's ``nodeSelector``, required node affinity and tolerations,
down to the details (``k8s.io/component-helpers/scheduling/corev1``: ``nodeaffinity`` and
``v1helper.TolerationsTolerateTaint``):

- every ``node_selector`` pair is a label of the node with that value;
- when ``node_affinity`` has terms, at least one term has every expression true on the node's
  labels (terms are ORed, expressions ANDed); a term with no expressions matches no node;
- every ``NoSchedule`` or ``NoExecute`` taint of the node is tolerated by one of the ask's
  tolerations; ``PreferNoSchedule`` taints never exclude a node.

Inter-queue (4.2), priority (4.4) and job (4.5) preemption look only at nodes the ask may use,
and explain a candidate on any other node as ``node_ineligible``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from preemption.model import (
    Ask,
    Node,
    NodeSelectorRequirement,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)

__all__ = [
    "Usable",
    "Verdicts",
    "may_use",
    "requirement_matches",
    "tolerates",
    "unconstrained",
    "usable_nodes",
    "why_not",
]

#: Taint effects a pod must tolerate to be scheduled on the node.
_EXCLUDING = frozenset({TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
#: What Go's ``strconv.ParseInt(s, 10, 64)`` accepts: an optional sign and decimal digits.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def may_use(ask: Ask, node: Node) -> bool:
    """Ask ``ask`` may run on ``node`` as far as labels and taints go (SPEC 3.3)."""
    labels = node.labels
    if any(labels.get(key) != value for key, value in ask.node_selector.items()):
        return False
    if ask.node_affinity and not any(_term_matches(term, labels) for term in ask.node_affinity):
        return False
    return all(
        taint.effect not in _EXCLUDING or any(tolerates(t, taint) for t in ask.tolerations)
        for taint in node.taints
    )


#: For each node of a list, in order, whether an ask may use it.
Verdicts = tuple[bool, ...]
#: Asks that read nodes alike (their ids) and the verdicts they share.
Usable = list[tuple[tuple[str, ...], Verdicts]]


def usable_nodes(asks: Sequence[Ask], nodes: Sequence[Node]) -> Usable:
    """``may_use(ask, node)`` for every ask and each of ``nodes`` (in order), grouped: for each
    distinct node selector, affinity and tolerations, the ids of the asks that have them and
    their verdicts.

    A plan asks this of every ask and node (a 64-pod gang on 2,000 nodes is 128,000 questions),
    but the answer depends only on those three fields and on what of the node they read. So
    each group is answered once (a gang's pods are mostly alike), and within it ``may_use``
    runs once per distinct node shape (``_verdicts``). Callers work per group, too.
    """
    groups: dict[tuple[object, ...], tuple[list[str], Ask]] = {}
    for ask in asks:
        fields = (tuple(sorted(ask.node_selector.items())), ask.node_affinity, ask.tolerations)
        group = groups.get(fields)
        if group is None:
            groups[fields] = ([ask.id], ask)
        else:
            group[0].append(ask.id)
    return [(tuple(ids), _verdicts(ask, nodes)) for ids, ask in groups.values()]


def _verdicts(ask: Ask, nodes: Sequence[Node]) -> Verdicts:
    """``may_use(ask, node)`` per node, computed once per distinct node shape: the values (or
    absence) of the labels that the ask's selector and affinity name, and the taints. That is
    all ``may_use`` reads of a node, so nodes of one shape get one verdict; usually every node
    has the same shape (no label named, no taint), and the answer costs one call."""
    keys = sorted({*ask.node_selector, *(r.key for term in ask.node_affinity for r in term)})
    seen: dict[tuple[tuple[str | None, ...], tuple[Taint, ...]], bool] = {}
    verdicts: list[bool] = []
    for node in nodes:
        shape = (tuple(map(node.labels.get, keys)), node.taints)
        verdict = seen.get(shape)
        if verdict is None:
            verdict = seen[shape] = may_use(ask, node)
        verdicts.append(verdict)
    return tuple(verdicts)


def why_not(ask: Ask, node: Node) -> str | None:
    """The first rule of SPEC 3.3 that keeps ``ask`` off ``node``, in words (None: it may use
    it), for the explanations of ``node_ineligible``."""
    labels = node.labels
    for key, value in ask.node_selector.items():
        if labels.get(key) != value:
            has = "no such label" if key not in labels else f"{key}={labels[key]}"
            return f"the ask's node selector needs {key}={value}, {node.name} has {has}"
    if ask.node_affinity and not any(_term_matches(term, labels) for term in ask.node_affinity):
        return f"{node.name}'s labels match no term of the ask's required node affinity"
    for taint in node.taints:
        if taint.effect in _EXCLUDING and not any(tolerates(t, taint) for t in ask.tolerations):
            shown = f"{taint.key}={taint.value}" if taint.value else taint.key
            return f"the ask does not tolerate {node.name}'s taint {shown}:{taint.effect}"
    return None


def unconstrained(ask: Ask, nodes: Sequence[Node]) -> bool:
    """``ask`` may use every one of ``nodes`` (the common case, which needs no filtering)."""
    return all(may_use(ask, node) for node in nodes)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``: the same effect (or an empty one), the same key
    (or an empty key with ``Exists``), and for ``Equal`` the same value (``Exists`` ignores it)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    exists = toleration.operator == TolerationOperator.EXISTS
    if toleration.key != taint.key and not (exists and not toleration.key):
        return False
    return exists or toleration.value == taint.value


def _term_matches(term: Sequence[NodeSelectorRequirement], labels: Mapping[str, str]) -> bool:
    """A node selector term: every expression holds; an empty term matches nothing."""
    return bool(term) and all(requirement_matches(r, labels) for r in term)


def requirement_matches(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` entry on a node's labels, as Kubernetes' label selector reads it."""
    operator = requirement.operator
    value = labels.get(requirement.key)
    if operator == SelectorOperator.EXISTS:
        return value is not None
    if operator == SelectorOperator.DOES_NOT_EXIST:
        return value is None
    if operator == SelectorOperator.IN:
        return value is not None and value in requirement.values
    if operator == SelectorOperator.NOT_IN:
        return value is None or value not in requirement.values
    # Gt / Lt: the label and the single value both read as 64-bit integers; else no match.
    if value is None or len(requirement.values) != 1:
        return False
    mine, theirs = parse_int64(value), parse_int64(requirement.values[0])
    if mine is None or theirs is None:
        return False
    return mine > theirs if operator == SelectorOperator.GT else mine < theirs


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: None where Go returns an error."""
    if not _INTEGER.fullmatch(text):
        return None
    number = int(text)
    return number if number in _INT64 else None
