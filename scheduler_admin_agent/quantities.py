"""Kubernetes resource quantities as exact integers in the product's units.

Kubernetes writes quantities as ``<sign><number><suffix>``: a decimal number (``1``, ``1.5``,
``.5``), then a binary suffix (``Ki Mi Gi Ti Pi Ei``), a decimal suffix (``n u m k M G T P E``),
or an exponent (``e3``, ``E-2``). Values are exact here (``Fraction``) and rounded up to whole
units the way ``resource.Quantity.Value()`` / ``MilliValue()`` round, so ``0.5`` memory is 1 byte
and ``1.0001`` CPU is 1001 millicores. The product counts CPU as ``vcore`` millicores and
everything else in whole units.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity (``"1.5Gi"`` -> 1610612736, ``"250m"`` -> 1/4)."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {text!r}")
    value = Fraction(match["number"])
    if match["binary"]:
        value *= _BINARY[match["binary"]]
    elif match["exponent"] is not None:
        value *= Fraction(10) ** int(match["exponent"])
    else:
        value *= _DECIMAL[match["decimal"] or ""]
    return -value if match["sign"] == "-" else value


#: Kubernetes resource name -> the product's name (everything else keeps its name).
PRODUCT_NAMES = {"cpu": "vcore"}


def product_amount(resource: str, value: Fraction) -> int:
    """The product's integer for ``value`` of Kubernetes resource ``resource``: CPU in
    millicores, everything else in whole units, rounded up; never below 0."""
    if resource == "cpu":
        value *= 1000
    return max(0, math.ceil(value))


def product_resources(values: dict[str, Fraction]) -> dict[str, int | str]:
    """A Kubernetes resource list (exact values) as the product's API reads it: its names,
    ``vcore`` as millicores written ``"1500m"`` (a bare integer would be whole cores there),
    everything else as an integer; zero amounts are left out (a missing type is 0 for a task
    and for a node's capacity)."""
    result: dict[str, int | str] = {}
    for name, value in values.items():
        amount = product_amount(name, value)
        if amount:
            result[PRODUCT_NAMES.get(name, name)] = f"{amount}m" if name == "cpu" else amount
    return result
