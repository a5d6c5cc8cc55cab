"""Reading the eligibility fields of SPEC 3.3 from plain data (a scenario's YAML, the
cluster-state API's JSON, the agent's pods): node ``labels`` and ``taints``, an ask's
``node_selector``, ``node_affinity`` and ``tolerations``.

One reader for every entry point, so that a field refused by the API is refused by the scenario
runner with the same words. The rules are the Kubernetes API server's for these fields (label
keys are qualified names, values at most 63 characters; ``Exists`` takes no values, ``Gt``/``Lt``
one integer; a toleration with an empty key must use ``Exists``, one with ``Exists`` has no
value). ``FieldError`` names the field (dotted path, list indexes in brackets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from preemption.eligibility import parse_int64
from preemption.model import (
    NodeAffinity,
    NodeSelectorRequirement,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)

__all__ = [
    "FieldError",
    "affinity_json",
    "read_affinity",
    "read_labels",
    "read_taints",
    "read_tolerations",
    "taints_json",
    "tolerations_json",
]

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_EFFECTS = ", ".join(effect.value for effect in TaintEffect)
_TAINT_KEYS = {"key", "value", "effect"}
_TOLERATION_KEYS = {"key", "operator", "value", "effect"}
_REQUIREMENT_KEYS = {"key", "operator", "values"}


class FieldError(ValueError):
    """A refused eligibility field: ``field`` is its dotted path, ``message`` says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _text(value: object, field: str, *, yaml_scalars: bool) -> str:
    """A text value. From YAML a ``true`` or ``3`` is the text ``"true"``, ``"3"`` (SPEC 3.3:
    label and toleration values are text); JSON must send strings."""
    if isinstance(value, str):
        return value
    if yaml_scalars and isinstance(value, bool):
        return "true" if value else "false"
    if yaml_scalars and isinstance(value, int | float):
        return str(value)
    raise FieldError(field, "must be a string")


def _key(value: object, field: str, *, yaml_scalars: bool) -> str:
    """A label, taint or expression key: a Kubernetes qualified name (``prefix/name``)."""
    key = _text(value, field, yaml_scalars=yaml_scalars)
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        raise FieldError(field, f"{key!r} has an invalid prefix (a DNS subdomain, then '/')")
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise FieldError(
            field,
            f"{key!r} is not a valid key (at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit, optionally after a prefix and '/')",
        )
    return key


def _value(value: object, field: str, *, yaml_scalars: bool) -> str:
    """A label or taint value: empty, or at most 63 characters as a label value allows."""
    text = _text(value, field, yaml_scalars=yaml_scalars)
    if text and (len(text) > 63 or not _NAME.fullmatch(text)):
        raise FieldError(
            field,
            f"{text!r} is not a valid value (at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit)",
        )
    return text


def _mapping(value: object, field: str, keys: set[str] | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise FieldError(field, "must be a mapping")
    for key in value:
        if keys is not None and key not in keys:
            raise FieldError(f"{field}.{key}", "unknown field")
    return value


def _list(value: object, field: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise FieldError(field, "must be a list")
    return list(value)


def read_labels(value: object, field: str, *, yaml_scalars: bool = False) -> dict[str, str]:
    """Node ``labels`` or an ask's ``node_selector``: key -> value (None: empty)."""
    if value is None:
        return {}
    labels: dict[str, str] = {}
    for raw_key, raw_value in _mapping(value, field).items():
        key = _key(raw_key, field, yaml_scalars=yaml_scalars)
        labels[key] = _value(raw_value, f"{field}.{key}", yaml_scalars=yaml_scalars)
    return labels


def _effect(value: object, field: str) -> TaintEffect:
    if value not in {effect.value for effect in TaintEffect}:
        raise FieldError(field, f"must be one of {_EFFECTS}")
    return TaintEffect(str(value))


def read_taints(value: object, field: str, *, yaml_scalars: bool = False) -> tuple[Taint, ...]:
    """Node ``taints``: ``{key, value, effect}``, value optional (empty)."""
    if value is None:
        return ()
    taints = []
    for index, raw in enumerate(_list(value, field)):
        at = f"{field}[{index}]"
        item = _mapping(raw, at, _TAINT_KEYS)
        if "key" not in item:
            raise FieldError(f"{at}.key", "is required")
        if "effect" not in item:
            raise FieldError(f"{at}.effect", f"is required: one of {_EFFECTS}")
        taints.append(
            Taint(
                key=_key(item["key"], f"{at}.key", yaml_scalars=yaml_scalars),
                value=_value(item.get("value", ""), f"{at}.value", yaml_scalars=yaml_scalars),
                effect=_effect(item["effect"], f"{at}.effect"),
            )
        )
    return tuple(taints)


def read_tolerations(
    value: object, field: str, *, yaml_scalars: bool = False
) -> tuple[Toleration, ...]:
    """An ask's ``tolerations``: ``{key, operator, value, effect}``, each optional."""
    if value is None:
        return ()
    tolerations = []
    operators = [operator.value for operator in TolerationOperator]
    for index, raw in enumerate(_list(value, field)):
        at = f"{field}[{index}]"
        item = _mapping(raw, at, _TOLERATION_KEYS)
        key = item.get("key") or ""
        if key:
            key = _key(key, f"{at}.key", yaml_scalars=yaml_scalars)
        operator = item.get("operator") or TolerationOperator.EQUAL.value
        if operator not in operators:
            raise FieldError(f"{at}.operator", "must be Equal or Exists")
        tolerated = _value(item.get("value") or "", f"{at}.value", yaml_scalars=yaml_scalars)
        if operator == TolerationOperator.EXISTS and tolerated:
            raise FieldError(f"{at}.value", "must be empty when the operator is Exists")
        if not key and operator != TolerationOperator.EXISTS:
            raise FieldError(f"{at}.operator", "must be Exists when the key is empty")
        effect = item.get("effect") or None
        tolerations.append(
            Toleration(
                key=key,
                operator=TolerationOperator(operator),
                value=tolerated,
                effect=None if effect is None else _effect(effect, f"{at}.effect"),
            )
        )
    return tuple(tolerations)


def read_affinity(value: object, field: str, *, yaml_scalars: bool = False) -> NodeAffinity:
    """An ask's required ``node_affinity``: a list of terms, each a list of
    ``{key, operator, values}``."""
    if value is None:
        return ()
    terms = []
    for term_index, raw_term in enumerate(_list(value, field)):
        at_term = f"{field}[{term_index}]"
        terms.append(
            tuple(
                _requirement(raw, f"{at_term}[{index}]", yaml_scalars=yaml_scalars)
                for index, raw in enumerate(_list(raw_term, at_term))
            )
        )
    return tuple(terms)


def _requirement(raw: object, at: str, *, yaml_scalars: bool) -> NodeSelectorRequirement:
    item = _mapping(raw, at, _REQUIREMENT_KEYS)
    if "key" not in item:
        raise FieldError(f"{at}.key", "is required")
    key = _key(item["key"], f"{at}.key", yaml_scalars=yaml_scalars)
    operators = [operator.value for operator in SelectorOperator]
    if item.get("operator") not in operators:
        raise FieldError(f"{at}.operator", f"must be one of {', '.join(operators)}")
    operator = SelectorOperator(str(item["operator"]))
    values = tuple(
        _text(raw_value, f"{at}.values[{index}]", yaml_scalars=yaml_scalars)
        for index, raw_value in enumerate(_list(item.get("values") or [], f"{at}.values"))
    )
    if operator in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not values:
        raise FieldError(f"{at}.values", f"must not be empty for {operator}")
    if operator in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST) and values:
        raise FieldError(f"{at}.values", f"must be empty for {operator}")
    if operator in (SelectorOperator.GT, SelectorOperator.LT) and (
        len(values) != 1 or parse_int64(values[0]) is None
    ):
        raise FieldError(f"{at}.values", f"must be one integer for {operator}")
    return NodeSelectorRequirement(key=key, operator=operator, values=values)


# The stored (JSON) form of each field: what the readers read back to the same values.


def taints_json(taints: tuple[Taint, ...]) -> list[dict[str, str]]:
    return [{"key": t.key, "value": t.value, "effect": str(t.effect)} for t in taints]


def tolerations_json(tolerations: tuple[Toleration, ...]) -> list[dict[str, str]]:
    return [
        {
            "key": t.key,
            "operator": str(t.operator),
            "value": t.value,
            "effect": "" if t.effect is None else str(t.effect),
        }
        for t in tolerations
    ]


def affinity_json(affinity: NodeAffinity) -> list[list[dict[str, Any]]]:
    return [
        [{"key": r.key, "operator": str(r.operator), "values": list(r.values)} for r in term]
        for term in affinity
    ]
