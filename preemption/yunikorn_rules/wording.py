"""How the rules word a value in a message: shown briefly and safely, joined into a field path,
with a hint when only the case is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preemption import resources

SHOWN_MAX = 80


def case_hint(value: str, allowed: tuple[str, ...]) -> str:
    """A hint when ``value`` only differs from an allowed value in case (YuniKorn compares
    these case-sensitively)."""
    lowered = value.lower()
    if lowered != value and lowered in allowed:
        return f" (YuniKorn compares it case-sensitively: write {lowered!r})"
    return ""


def as_mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def joined(at: str, key: str) -> str:
    return f"{at}.{key}"


def listed(values: tuple[str, ...]) -> str:
    return ", ".join(values)


def shown(value: object) -> str:
    """``repr(value)``, shortened so a huge input cannot flood a message (``repr`` of an int
    past 4300 digits raises, so such ints are described instead)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 3] + "..."


def quantity_text(name: str, amount: int) -> str:
    return f"{name}={resources.format_quantity(amount, resource=name)}"


def resources_text(amounts: Mapping[str, Any], names: Mapping[str, Any]) -> str:
    """``memory=10Gi, vcore=2`` for the types in ``names`` that ``amounts`` sets."""
    return ", ".join(
        quantity_text(name, amounts[name])
        for name in sorted(names)
        if isinstance(amounts.get(name), int)
    )
