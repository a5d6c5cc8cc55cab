"""Where a task may run, in words for the console (SPEC 3.3): a node's labels and taints, an
ask's node selector, required node affinity and tolerations, as stored (the JSON form of
``preemption.eligibility_fields``, checked on ingest).

Kept short: a page lists many tasks; the API has every field in full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_admin.cluster.models import Node
from scheduler_admin.queues.models import Partition

#: Labels shown per node before "and N more" (a node carries dozens of well-known labels).
LABELS_SHOWN = 6


def labels_text(labels: Mapping[str, str], shown: int = LABELS_SHOWN) -> str:
    items = [f"{key}={value}" for key, value in sorted(labels.items())]
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")


def taints_text(taints: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(
        f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}" for t in taints
    )


def node_text(labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]]) -> str:
    """``labels: zone=a, gpu=true · taints: nvidia.com/gpu:NoSchedule`` (empty parts left out)."""
    parts = []
    if labels:
        parts.append(f"labels: {labels_text(labels)}")
    if taints:
        parts.append(f"taints: {taints_text(taints)}")
    return " · ".join(parts)


def node_facts(partition: Partition, names: set[str]) -> dict[str, str]:
    """``node_text`` of the named nodes of ``partition`` (one query), by name."""
    rows = Node.objects.filter(partition=partition, name__in=sorted(names)).values_list(
        "name", "labels", "taints"
    )
    return {name: node_text(labels, taints) for name, labels, taints in rows}


def _expression(term: Mapping[str, Any]) -> str:
    values = term.get("values") or []
    operator = term["operator"]
    if operator in ("Exists", "DoesNotExist"):
        return f"{term['key']} {operator}"
    return f"{term['key']} {operator} {','.join(values)}"


def _toleration(item: Mapping[str, Any]) -> str:
    key = item.get("key") or "every key"
    if item.get("operator") == "Exists":
        what = f"{key} (any value)"
    else:
        what = f"{key}={item.get('value', '')}"
    return f"{what}:{item.get('effect') or 'every effect'}"


def ask_text(
    selector: Mapping[str, str],
    affinity: Sequence[Sequence[Mapping[str, Any]]],
    tolerations: Sequence[Mapping[str, Any]],
) -> str:
    """``selector: gpu=true · affinity: zone In b,c or rack Gt 3 · tolerates: ...``; empty
    when the ask may use any node without taints."""
    parts = []
    if selector:
        parts.append(f"selector: {labels_text(selector, shown=len(selector))}")
    if affinity:
        terms = [" and ".join(_expression(e) for e in term) or "(nothing)" for term in affinity]
        parts.append(f"affinity: {' or '.join(terms)}")
    if tolerations:
        parts.append(f"tolerates: {', '.join(_toleration(t) for t in tolerations)}")
    return " · ".join(parts)
