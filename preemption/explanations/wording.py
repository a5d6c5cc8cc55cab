"""How an explanation writes its numbers: amounts with their units, ordinals, percentages and
moments, the same on every page, export and API answer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache

from preemption import resources

_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{_SUFFIXES.get(number % 10, 'th')}"


def amounts(values: Mapping[str, int]) -> str:
    """``memory 580Gi, vcore 1500m``: exact quantities, types by name; ``nothing`` when empty."""
    parts = [f"{name} {quantity(name, values[name])}" for name in sorted(values)]
    return ", ".join(parts) if parts else "nothing"


@lru_cache(maxsize=65_536)
def quantity(kind: str, value: int) -> str:
    """``resources.format_quantity``, remembered: a big plan repeats the same few sizes and
    remaining amounts many thousands of times."""
    return resources.format_quantity(value, resource=kind)


def when(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, as the API writes times."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def percent(value: Fraction) -> str:
    """An exact percentage: ``25%``, or one decimal (``33.3%``) when it is not whole."""
    hundred = value * 100
    if hundred.denominator == 1:
        return f"{hundred.numerator}%"
    return f"{float(hundred):.1f}%"
