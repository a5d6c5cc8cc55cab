"""Numeric query parameters: ASCII digits only, within the range of what they name.

``str.isdigit`` is true for ``"²"`` and other Unicode digits that ``int`` cannot convert (a
``ValueError``, once a 500), and ``int`` itself accepts Arabic-Indic digits, signs, spaces and
underscores. A parameter is a whole number when it matches ``[0-9]+`` and nothing else.
"""

from __future__ import annotations

import re

from rest_framework.exceptions import ValidationError

_DIGITS = re.compile(r"[0-9]+")


def is_whole_number(raw: str) -> bool:
    """True for plain ASCII digits (no sign, space or Unicode digits)."""
    return _DIGITS.fullmatch(raw) is not None


def whole_number(raw: str, *, minimum: int, maximum: int) -> int | None:
    """``raw`` as an int within ``minimum..maximum``, or None when it is not one."""
    if not is_whole_number(raw) or len(raw.lstrip("0")) > len(str(maximum)):
        return None
    value = int(raw)
    return value if minimum <= value <= maximum else None


def int_param(raw: str | None, name: str, *, minimum: int, maximum: int) -> int | None:
    """An optional numeric parameter (None when absent or empty); anything else but a whole
    number in range is a 400 naming ``name``."""
    if raw is None or raw == "":
        return None
    value = whole_number(raw, minimum=minimum, maximum=maximum)
    if value is None:
        raise ValidationError({name: [f"must be a whole number from {minimum} to {maximum}"]})
    return value
