"""Label and field selectors, as the API server parses and applies them.

Label selectors (``labelSelector=`` and ``metav1.LabelSelector`` in a PodDisruptionBudget):
``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a``, ``!a``, ``a>1``, ``a<1``,
comma-separated (all must hold). ``!=`` and ``notin`` also match objects without the label, as in
Kubernetes. Keys and values are checked against the label syntax; a malformed selector is an
error the server answers with 400 BadRequest.

Field selectors (``fieldSelector=``): ``field=value``, ``field==value``, ``field!=value``,
comma-separated, on the fields each resource supports (the lists are the real ones for these
kinds, from their ``GetAttrs``/field label conversion functions); any other field is the real
error ``field label not supported: <field>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_KEY = rf"(?:{_PREFIX}/)?{_NAME}"
_VALUE = rf"(?:{_NAME})?"
_EXISTS = re.compile(rf"^(?P<not>!)?\s*(?P<key>{_KEY})$")
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_COMPARE = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s]*)$")
_VALUE_ONLY = re.compile(rf"^{_VALUE}$")


class SelectorError(ValueError):
    """A selector the API server would reject (400 BadRequest)."""


@dataclass(frozen=True)
class Requirement:
    """One requirement of a label selector (operator as in labels.Requirement)."""

    key: str
    operator: str  # in, notin, exists, doesnotexist, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "in":
            return present and labels[self.key] in self.values
        if self.operator == "notin":
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "doesnotexist":
            return not present
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.operator == "gt" else have < want


Selector = tuple[Requirement, ...]


def _split_terms(text: str) -> list[str]:
    """Split on the commas that are not inside a value set."""
    terms, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t.strip() for t in terms]


def _checked_value(value: str, term: str) -> str:
    if not _VALUE_ONLY.match(value):
        raise SelectorError(
            f"unable to parse requirement: invalid label value: {value!r} in {term!r}"
        )
    return value


def parse_label_selector(text: str | None) -> Selector:
    """The requirements of a ``labelSelector`` query value (empty: everything matches)."""
    if text is None or not text.strip():
        return ()
    requirements = []
    for term in _split_terms(text):
        if not term:
            raise SelectorError(
                f"unable to parse requirement: found '', expected: identifier in {text!r}"
            )
        if match := _SET.match(term):
            values = tuple(_checked_value(v.strip(), term) for v in match["values"].split(","))
            if values == ("",):
                raise SelectorError(
                    "unable to parse requirement: for 'in', 'notin' operators, "
                    "values set can't be empty"
                )
            requirements.append(Requirement(match["key"], match["op"], values))
        elif match := _COMPARE.match(term):
            op, value = match["op"], match["value"]
            if op in ("=", "=="):
                requirements.append(Requirement(match["key"], "in", (_checked_value(value, term),)))
            elif op == "!=":
                requirements.append(
                    Requirement(match["key"], "notin", (_checked_value(value, term),))
                )
            else:
                if not re.fullmatch(r"-?\d+", value):
                    raise SelectorError(
                        "unable to parse requirement: for 'Gt', 'Lt' operators, "
                        f"the value must be an integer: {term!r}"
                    )
                requirements.append(
                    Requirement(match["key"], "gt" if op == ">" else "lt", (value,))
                )
        elif match := _EXISTS.match(term):
            requirements.append(
                Requirement(match["key"], "doesnotexist" if match["not"] else "exists")
            )
        else:
            raise SelectorError(
                f"unable to parse requirement: {term!r} is not a valid label requirement"
            )
    return tuple(requirements)


def matches(selector: Selector, labels: Mapping[str, str] | None) -> bool:
    """True when every requirement holds for ``labels``."""
    present = labels or {}
    return all(requirement.matches(present) for requirement in selector)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "doesnotexist"}


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector | None:
    """A ``metav1.LabelSelector`` (e.g. a PDB's ``spec.selector``) as requirements.

    None (no selector) selects nothing, as ``LabelSelectorAsSelector(nil)`` does; ``{}`` selects
    everything. An invalid selector also selects nothing (the eviction code skips such budgets).
    """
    if selector is None:
        return None
    requirements = [
        Requirement(k, "in", (v,)) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        operator = _OPERATORS.get(expression.get("operator", ""))
        if operator is None:
            return None
        requirements.append(
            Requirement(expression["key"], operator, tuple(expression.get("values") or ()))
        )
    return tuple(requirements)


# --- field selectors ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool


def _pod_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    spec, status, meta = obj.get("spec", {}), obj.get("status", {}), obj["metadata"]
    return {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "spec.schedulerName": spec.get("schedulerName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
        "status.nominatedNodeName": status.get("nominatedNodeName", ""),
    }


def _node_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    return {
        "metadata.name": obj["metadata"]["name"],
        "spec.unschedulable": "true" if obj.get("spec", {}).get("unschedulable") else "false",
    }


def _meta_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    return {
        "metadata.name": obj["metadata"]["name"],
        "metadata.namespace": obj["metadata"].get("namespace", ""),
    }


_FIELD_FUNCTIONS = {"pods": _pod_fields, "nodes": _node_fields}
SUPPORTED_FIELDS = {
    "pods": frozenset(_pod_fields({"metadata": {"name": ""}})),
    "nodes": frozenset(_node_fields({"metadata": {"name": ""}})),
    "configmaps": frozenset(_meta_fields({"metadata": {"name": ""}})),
    "poddisruptionbudgets": frozenset(_meta_fields({"metadata": {"name": ""}})),
}


def parse_field_selector(text: str | None, plural: str) -> tuple[FieldRequirement, ...]:
    """The requirements of a ``fieldSelector`` query value for resource ``plural``."""
    if text is None or not text.strip():
        return ()
    requirements = []
    for term in text.split(","):
        term = term.strip()
        for op in ("!=", "==", "="):
            if op in term:
                field, _, value = term.partition(op)
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field = field.strip()
        if field not in SUPPORTED_FIELDS[plural]:
            raise SelectorError(f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, value.strip(), op == "!="))
    return tuple(requirements)


def fields_match(
    requirements: Sequence[FieldRequirement], plural: str, obj: Mapping[str, Any]
) -> bool:
    if not requirements:
        return True
    values = _FIELD_FUNCTIONS.get(plural, _meta_fields)(obj)
    return all((values[r.field] == r.value) != r.negated for r in requirements)
