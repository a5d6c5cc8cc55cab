"""Resource quantities and resource sets, modelled on Apache YuniKorn's ``resources`` package.

A *resource set* maps a resource name to a non-negative ``int`` in canonical units:

* ``vcore`` is kept in millicores, so fractional cores ("0.5", "500m") stay exact integers;
* every other type (``memory`` in bytes, ``pods``, ``nvidia.com/gpu``, ...) is kept in plain units.

Integers are used everywhere so that comparisons and sums are exact; parsing goes through
``fractions.Fraction`` and never through ``float``.

Missing-type rules
------------------
A resource set does not have to list every type, and what a missing type means depends on the
role of the set -- the same rules YuniKorn applies:

* In a **limit** (a queue's ``max``), a missing type is **unlimited**. ``fits`` and ``over`` only
  look at the types the limit lists, and ``limit_min`` keeps a type that only one side limits.
* In a **guarantee, usage or requested amount**, a missing type is **zero**. ``add``,
  ``subtract`` and ``shares_type`` treat absent types as 0.
* ``sub_only_existing`` keeps exactly the types of its first argument, so that subtracting a
  usage from a guarantee never invents a guarantee for a type that was not guaranteed.

Functions never mutate their arguments and always return a new plain ``dict`` with sorted keys,
so results are deterministic when displayed or serialised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import TypeAlias

__all__ = [
    "MAX_QUANTITY",
    "VCORE",
    "QuantityError",
    "ResourceErrors",
    "Resources",
    "add",
    "fits",
    "format_quantity",
    "format_resources",
    "is_zero",
    "limit_min",
    "over",
    "parse_quantity",
    "parse_resources",
    "positive_part",
    "shares_type",
    "sub_only_existing",
    "subtract",
]

Resources: TypeAlias = Mapping[str, int]
"""A read-only view of a resource set; every function below returns a plain ``dict``."""

VCORE = "vcore"
"""The only resource whose canonical unit (millicores) differs from its written unit (cores)."""

MAX_QUANTITY = 2**63 - 1
"""Largest accepted value: the int64 range used by YuniKorn and Kubernetes."""

_MAX_DIGITS = 64
"""Longest accepted number; longer strings are rejected before any big-number arithmetic."""

_DECIMAL_SUFFIXES: dict[str, int] = {
    "k": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
    "P": 1000**5,
    "E": 1000**6,
}
_BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
_MULTIPLIERS: dict[str, Fraction] = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    **{suffix: Fraction(factor) for suffix, factor in _DECIMAL_SUFFIXES.items()},
    **{suffix: Fraction(factor) for suffix, factor in _BINARY_SUFFIXES.items()},
}
_ALLOWED_SUFFIXES = ", ".join([*_DECIMAL_SUFFIXES, *_BINARY_SUFFIXES, "m"])
_NOT_A_MAPPING = "must be a mapping of resource name to quantity"
_MAX_QUOTE = 80
"""Longest quoted input in an error message."""

# An optional '-' (only so that negatives get their own message), a plain decimal number,
# and whatever follows it, which must then be one of the known suffixes.
_QUANTITY_RE = re.compile(r"(?P<sign>-?)(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<suffix>.*)", re.DOTALL)


class QuantityError(ValueError):
    """A quantity that cannot be parsed.

    ``field`` says where the value came from (e.g. ``resources.max.memory``) so that an admin
    form or a config loader can attach the message to the right input.
    """

    field: str
    message: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[QuantityError], tuple[str, str]]:
        # Rebuild from (field, message), so the error survives pickling (e.g. by task queues).
        return (type(self), (self.field, self.message))


class ResourceErrors(ValueError):
    """Every problem found in one resource set, so a user can fix them all in one go."""

    errors: list[QuantityError]

    def __init__(self, errors: list[QuantityError]) -> None:
        if not errors:
            raise ValueError("ResourceErrors needs at least one QuantityError")
        super().__init__("; ".join(str(error) for error in errors))
        self.errors = list(errors)

    def __reduce__(self) -> tuple[type[ResourceErrors], tuple[list[QuantityError]]]:
        # Rebuild from the error list, so the error survives pickling (e.g. by task queues).
        return (type(self), (self.errors,))


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def parse_quantity(value: object, *, resource: str, field: str, yunikorn: bool = False) -> int:
    """Parse one quantity of ``resource`` into its canonical integer unit.

    ``value`` is an ``int`` (as YAML or JSON deliver bare numbers) or a string such as
    ``"10Gi"``, ``"1.5G"`` or ``"500m"``. For ``vcore`` a bare number means cores and the result
    is in millicores. ``bool`` and ``float`` are rejected: ``True`` is almost certainly a
    mistake, and a float may already have lost precision before it reached us.

    Blanks between the number and the suffix are allowed (``"10 Gi"``), as YuniKorn allows
    them. With ``yunikorn`` the text must also follow YuniKorn's own quantity grammar, which is
    stricter than Kubernetes': whole numbers only (``"1.5G"`` is refused) and ``m`` only for
    ``vcore``; a ``queues.yaml`` is read this way so that nothing YuniKorn refuses is imported.

    Raises ``QuantityError`` naming ``field`` when the value is not an exact, non-negative
    integer amount of the canonical unit, or exceeds ``MAX_QUANTITY``.
    """
    if value is None:
        raise QuantityError(field, "empty value; write a quantity such as 10 or '10Gi'")
    if isinstance(value, bool):
        raise QuantityError(
            field, f"{_quote(value)} is not a quantity; use a number such as 10 or '10Gi'"
        )
    if isinstance(value, int):
        return _check_range(_scale(Fraction(value), resource, value, field), value, field)
    if isinstance(value, float):
        raise QuantityError(
            field,
            f"{_quote(value)} is a floating-point number; write it as a string (e.g. '{value}') "
            "so that it is parsed exactly",
        )
    if isinstance(value, str):
        known = _parsed_text(value, resource, yunikorn)
        if known is not None:
            return known
        return _check_range(_parse_text(value, resource, field, yunikorn), value, field)
    raise QuantityError(
        field, f"{_quote(value)} is not a quantity; expected an integer or a string such as '10Gi'"
    )


@lru_cache(maxsize=4096)
def _parsed_text(text: str, resource: str, yunikorn: bool) -> int | None:
    """A valid quantity text's amount, remembered (a config of 5,000 queues spells the same few
    quantities over and over); None when it is not valid (the caller raises with its field)."""
    if type(text) is not str:
        return None
    try:
        return _check_range(_parse_text(text, resource, "", yunikorn), text, "")
    except QuantityError:
        return None


def _parse_text(text: str, resource: str, field: str, yunikorn: bool) -> int:
    """Parse the string form of a quantity (number plus optional suffix) exactly."""
    stripped = text.strip()
    if not stripped:
        raise QuantityError(field, f"{_quote(text)} is not a number: the value is empty")
    match = _QUANTITY_RE.fullmatch(stripped)
    if match is None:
        raise QuantityError(field, f"{_quote(text)} is not a number")
    number, suffix = match["number"], match["suffix"].lstrip(" \t")
    if match["sign"]:
        raise QuantityError(field, f"{_quote(text)} must not be negative")
    if yunikorn and "." in number:
        example = _whole_example(number, suffix, resource)
        raise QuantityError(
            field,
            f"{_quote(text)}: YuniKorn takes whole numbers only (no decimal point)"
            + (f"; write {example!r}" if example else ""),
        )
    if yunikorn and suffix == "m" and resource != VCORE:
        raise QuantityError(
            field, f"{_quote(text)}: the suffix 'm' (milli) is only allowed for vcore"
        )
    if suffix not in _MULTIPLIERS:
        hint = (
            "; spaces are not allowed inside a suffix" if any(c.isspace() for c in suffix) else ""
        )
        raise QuantityError(
            field,
            f"unknown suffix {_quote(suffix)} in {_quote(text)}; "
            f"allowed suffixes: {_ALLOWED_SUFFIXES}{hint}",
        )
    if len(number) > _MAX_DIGITS:
        raise QuantityError(field, f"{_quote(text)} has more than {_MAX_DIGITS} digits")
    return _scale(Fraction(number) * _MULTIPLIERS[suffix], resource, text, field)


def _whole_example(number: str, suffix: str, resource: str) -> str | None:
    """The same amount as a whole number with a smaller suffix ("1.5Gi" -> "1536Mi", a vcore
    "0.5" -> "500m"), or None when it is not a whole number of the unit at all."""
    amount = Fraction(number) * _MULTIPLIERS.get(suffix, Fraction(1))
    if resource == VCORE:
        millicores = amount * 1000
        return f"{int(millicores)}m" if millicores.denominator == 1 else None
    if amount.denominator != 1:
        return None
    for smaller in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki", "E", "P", "T", "G", "M", "k"):
        factor = _MULTIPLIERS[smaller]
        if amount >= factor and (amount / factor).denominator == 1:
            return f"{int(amount / factor)}{smaller}"
    return str(int(amount))


def _scale(amount: Fraction, resource: str, original: object, field: str) -> int:
    """Convert an amount in written units to the canonical integer unit of ``resource``."""
    if amount < 0:
        raise QuantityError(field, f"{_quote(original)} must not be negative")
    if resource == VCORE:
        millicores = amount * 1000
        if millicores.denominator != 1:
            raise QuantityError(field, f"{_quote(original)} must be a whole number of millicores")
        return int(millicores)
    if amount.denominator != 1:
        raise QuantityError(
            field,
            f"fractional quantities are not allowed: {_quote(original)} is not a whole number "
            f"for {resource!r}",
        )
    return int(amount)


def _check_range(result: int, original: object, field: str) -> int:
    """Reject values outside the int64 range that schedulers store."""
    if result > MAX_QUANTITY:
        raise QuantityError(field, f"{_quote(original)} is too large (maximum is {MAX_QUANTITY})")
    return result


def _quote(value: object) -> str:
    """``repr(value)`` for messages, shortened so a huge input cannot flood or break them.

    ``repr`` of an int with more than 4300 digits raises, so such ints are described instead.
    """
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."


def parse_resources(raw: object, *, field: str, yunikorn: bool = False) -> dict[str, int]:
    """Parse a mapping of resource name to quantity, e.g. a queue's ``resources.max``.

    ``None`` (an absent section) is an empty resource set. All problems are collected and
    raised together as ``ResourceErrors`` so that a form can show every bad entry at once;
    each entry's field is ``f"{field}.{name}"``.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ResourceErrors([QuantityError(field, _NOT_A_MAPPING)])
    result: dict[str, int] = {}
    errors: list[QuantityError] = []
    for name, value in raw.items():
        if not isinstance(name, str) or not name:
            errors.append(
                QuantityError(field, f"{_NOT_A_MAPPING}; {_quote(name)} is not a resource name")
            )
            continue
        try:
            result[name] = parse_quantity(
                value, resource=name, field=f"{field}.{name}", yunikorn=yunikorn
            )
        except QuantityError as error:
            errors.append(error)
    if errors:
        raise ResourceErrors(errors)
    return dict(sorted(result.items()))


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def format_quantity(value: int, *, resource: str) -> str:
    """Format a canonical quantity as the shortest exact string ``parse_quantity`` accepts.

    ``vcore`` is shown as whole cores ("10") when possible, otherwise in millicores ("1500m").
    Other types use the shortest of the plain digits and every suffix that divides the value
    exactly (ties: plain digits, then decimal, then binary suffix), so "10G" and "10Gi" both
    read naturally and nothing is rounded. Negative values (e.g. from ``subtract``) are shown
    with a leading '-' for display only; ``parse_quantity`` rejects them.
    """
    if value < 0:
        return "-" + format_quantity(-value, resource=resource)
    if resource == VCORE:
        if value % 1000 == 0:
            return str(value // 1000)
        return f"{value}m"
    candidates = [str(value)]
    if value != 0:
        for suffix, factor in [*_DECIMAL_SUFFIXES.items(), *_BINARY_SUFFIXES.items()]:
            if value % factor == 0:
                candidates.append(f"{value // factor}{suffix}")
    # min() keeps the first of equally short candidates, which encodes the tie preference.
    return min(candidates, key=len)


def format_resources(resources: Resources) -> dict[str, str]:
    """Format every quantity of a resource set, keys sorted by resource name."""
    return {name: format_quantity(resources[name], resource=name) for name in sorted(resources)}


# --------------------------------------------------------------------------------------------
# Arithmetic and comparisons (see the module docstring for the missing-type rules)
# --------------------------------------------------------------------------------------------


def fits(amount: Resources, within: Resources) -> bool:
    """Whether ``amount`` fits in the limit ``within``.

    Only the limit's types are checked: a type the limit does not list is unlimited, and a type
    the amount does not list counts as 0.
    """
    return all(amount.get(name, 0) <= limit for name, limit in within.items())


def over(usage: Resources, limit: Resources) -> dict[str, int]:
    """By how much ``usage`` exceeds ``limit``, for the limited types that are exceeded.

    An empty result means the usage is within the limit (the same answer as ``fits``).
    """
    return {
        name: usage.get(name, 0) - limit[name]
        for name in sorted(limit)
        if usage.get(name, 0) > limit[name]
    }


def sub_only_existing(base: Resources, delta: Resources) -> dict[str, int]:
    """``base - delta`` restricted to ``base``'s types; the result may be negative.

    Used e.g. for "guarantee minus usage": a type that is not guaranteed must not appear in the
    result as a negative guarantee.
    """
    return {name: base[name] - delta.get(name, 0) for name in sorted(base)}


def add(a: Resources, b: Resources) -> dict[str, int]:
    """Component-wise sum over the union of types (a missing type counts as 0)."""
    return {name: a.get(name, 0) + b.get(name, 0) for name in _union(a, b)}


def subtract(a: Resources, b: Resources) -> dict[str, int]:
    """Component-wise ``a - b`` over the union of types; values may go negative."""
    return {name: a.get(name, 0) - b.get(name, 0) for name in _union(a, b)}


def positive_part(a: Resources) -> dict[str, int]:
    """Only the types with a value above 0, e.g. to clamp a ``subtract`` result."""
    return {name: a[name] for name in sorted(a) if a[name] > 0}


def limit_min(a: Resources, b: Resources) -> dict[str, int]:
    """The tighter of two limits, per type.

    A type missing from one limit is unlimited there, so the other limit's value applies and
    the result has the union of types.
    """
    result: dict[str, int] = {}
    for name in _union(a, b):
        if name in a and name in b:
            result[name] = min(a[name], b[name])
        elif name in a:
            result[name] = a[name]
        else:
            result[name] = b[name]
    return result


def shares_type(a: Resources, b: Resources) -> bool:
    """Whether some type is above 0 in both sets.

    Preempting a victim only helps a request when they compete for at least one resource.
    """
    return any(value > 0 and b.get(name, 0) > 0 for name, value in a.items())


def is_zero(a: Resources) -> bool:
    """Whether every listed quantity is 0; the empty set is zero."""
    return all(value == 0 for value in a.values())


def _union(a: Resources, b: Resources) -> list[str]:
    """All type names of ``a`` and ``b``, sorted for deterministic results."""
    return sorted(set(a) | set(b))
