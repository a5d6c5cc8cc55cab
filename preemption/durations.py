"""Durations in whole seconds, written as plain seconds or Go-style strings such as "1h30m".

Preemption delays and priority windows are configured in seconds; sub-second precision would
suggest a timing accuracy the scheduler does not have, so only the units ``h``, ``m`` and ``s``
are accepted, each at most once and in that order. ``format_duration`` produces the canonical
form, and ``parse_duration(format_duration(x)) == x`` for every non-negative ``x``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DURATION", "DurationError", "format_duration", "parse_duration"]

MAX_DURATION = 2**31 - 1
"""Largest accepted number of seconds (about 68 years): delays are stored in PostgreSQL
``integer`` columns and added to timestamps, so a longer one would overflow the column or the
date arithmetic. It mirrors ``scheduler_admin.limits.DURATION_MAX_SECONDS``."""

_UNIT_SECONDS: dict[str, int] = {"h": 3600, "m": 60, "s": 1}
"""Accepted units in the order they must appear."""

_SUB_SECOND_UNITS = frozenset({"ms", "us", "µs", "μs", "ns"})
_MAX_PART_DIGITS = 19
"""Longest number converted in one part; longer ones exceed ``MAX_DURATION`` anyway."""

_DIGITS_RE = re.compile(r"[0-9]+")
# One "<int><unit>" part. The unit is any run of non-digits so that unknown or badly spaced
# units are reported by name instead of as a generic syntax error.
_PART_RE = re.compile(r"([0-9]+)([^0-9]*)")
_MAX_QUOTE = 80
"""Longest quoted input in an error message."""
_MAXIMUM = f"maximum is {MAX_DURATION} seconds, about 68 years"


class DurationError(ValueError):
    """A duration that cannot be parsed; ``field`` names the config entry it came from."""

    field: str
    message: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[DurationError], tuple[str, str]]:
        # Rebuild from (field, message), so the error survives pickling (e.g. by task queues).
        return (type(self), (self.field, self.message))


def parse_duration(value: object, *, field: str) -> int:
    """Parse a duration into whole seconds.

    Accepts an ``int`` (seconds), a string of digits (seconds) or a Go-style string like
    ``"1h30m"``. ``bool`` and ``float`` are rejected because they are almost certainly config
    mistakes. Raises ``DurationError`` naming ``field`` on anything else.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DurationError(
            field,
            f"{_quote(value)} is not a duration; "
            "use whole seconds (e.g. 90) or a string like '1h30m'",
        )
    if isinstance(value, int):
        return _check_seconds(value, value, field)
    return _check_seconds(_parse_text(value, field), value, field)


def _parse_text(text: str, field: str) -> int:
    """Parse the string form: plain seconds or ``<int><unit>`` parts in h, m, s order."""
    stripped = text.strip()
    if not stripped:
        raise DurationError(field, f"{_quote(text)} is not a duration: the value is empty")
    if stripped.startswith("-"):
        raise DurationError(field, f"{_quote(text)} must not be negative")
    if _DIGITS_RE.fullmatch(stripped):
        return _to_int(stripped, text, field)
    if "." in stripped:
        raise DurationError(field, f"{_quote(text)}: fractional durations are not allowed")
    if _DIGITS_RE.match(stripped) is None:
        raise DurationError(
            field, f"{_quote(text)} is not a duration; use e.g. '90', '30s' or '1h30m'"
        )
    return _sum_parts(stripped, text, field)


def _sum_parts(stripped: str, text: str, field: str) -> int:
    """Add up the parts of a Go-style duration, checking units, order and repetition."""
    total = 0
    previous_rank = -1
    units = list(_UNIT_SECONDS)
    for number, unit in _PART_RE.findall(stripped):
        if unit == "":
            raise DurationError(
                field, f"{_quote(text)}: the number {number} has no unit (h, m or s)"
            )
        if unit in _SUB_SECOND_UNITS:
            raise DurationError(
                field,
                f"{_quote(text)}: unit {_quote(unit)} is not supported; "
                "durations are whole seconds",
            )
        if unit not in _UNIT_SECONDS:
            raise DurationError(
                field, f"{_quote(text)}: unknown unit {_quote(unit)}; use h, m or s"
            )
        rank = units.index(unit)
        if rank == previous_rank:
            raise DurationError(
                field, f"{_quote(text)}: unit {_quote(unit)} appears more than once"
            )
        if rank < previous_rank:
            raise DurationError(field, f"{_quote(text)}: units must appear in the order h, m, s")
        previous_rank = rank
        total += _to_int(number, text, field) * _UNIT_SECONDS[unit]
    return total


def _to_int(digits: str, text: str, field: str) -> int:
    """Convert a digit string, refusing huge ones before ``int()`` has to deal with them."""
    if len(digits.lstrip("0")) > _MAX_PART_DIGITS:
        raise DurationError(field, f"{_quote(text)} is too large ({_MAXIMUM})")
    return int(digits)


def _check_seconds(seconds: int, original: object, field: str) -> int:
    """Reject negative and out-of-range totals."""
    if seconds < 0:
        raise DurationError(field, f"{_quote(original)} must not be negative")
    if seconds > MAX_DURATION:
        raise DurationError(field, f"{_quote(original)} is too large ({_MAXIMUM})")
    return seconds


def _quote(value: object) -> str:
    """``repr(value)`` for messages, shortened so a huge input cannot flood or break them.

    ``repr`` of an int with more than 4300 digits raises, so such ints are described instead.
    """
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."


def format_duration(seconds: int) -> str:
    """Format seconds canonically ("1h30m", "45s", "0s"), omitting zero parts.

    The result is accepted by ``parse_duration`` and gives back the same number of seconds.
    """
    if seconds < 0:
        raise ValueError(f"cannot format a negative duration: {seconds}")
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{amount}{unit}" for amount, unit in parts if amount)
