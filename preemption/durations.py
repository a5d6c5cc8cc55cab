"""Durations as YuniKorn reads them: Go's ``time.ParseDuration`` syntax, plus plain seconds.

YuniKorn reads every delay property (``preemption.delay``, ``quota.preemption.delay``, ...) with
Go's ``time.ParseDuration``: an optional sign, then one or more ``<decimal><unit>`` parts in any
order, units ``ns us µs ms s m h`` (``"50ms"``, ``"1.5m"``, ``"1h0m30s"``, ``"30m1h"``). A number
without a unit (``"60"``) is an error to Go, and YuniKorn then silently falls back to the default
(for ``quota.preemption.delay``: 0, quota preemption off). This product also accepts integer
seconds, the spelling of seed 001, and **stores and exports every duration property with a unit**
(``duration_spelling``: ``60`` becomes ``"60s"``; a Go duration is kept as the admin wrote it), so
an export means to YuniKorn exactly what it means here.

Values are exact: ``parse_go_duration`` returns nanoseconds, computed as Go computes them
(fractions go through a float64 exactly as in Go, so both sides agree to the nanosecond).
Timers work in whole seconds and round a sub-second remainder up (``parse_duration``): a
``50ms`` delay waits one second, never zero.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_DURATION",
    "NANOSECONDS_PER_SECOND",
    "DurationError",
    "duration_spelling",
    "format_duration",
    "parse_duration",
    "parse_go_duration",
    "parse_whole_seconds",
]

MAX_DURATION = 2**31 - 1
"""Largest accepted duration in seconds (about 68 years): delays are stored in PostgreSQL
``integer`` columns and added to timestamps, so a longer one would overflow the column or the
date arithmetic. It mirrors ``scheduler_admin.base.limits.DURATION_MAX_SECONDS``. Go itself allows
up to about 292 years; a delay that long is refused here (a deliberate difference)."""

NANOSECONDS_PER_SECOND = 10**9

_UNIT_NANOSECONDS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": NANOSECONDS_PER_SECOND,
    "m": 60 * NANOSECONDS_PER_SECOND,
    "h": 3600 * NANOSECONDS_PER_SECOND,
}
_UNITS_TEXT = "ns, us, µs, ms, s, m or h"

_MAX_NANOSECONDS = MAX_DURATION * NANOSECONDS_PER_SECOND
_MAX_DIGITS = 40
"""Longest digit run converted; anything longer is far beyond ``MAX_DURATION`` in any unit, and
refusing it before ``int()`` keeps a hostile input from costing quadratic time."""

_INTEGER_SECONDS_RE = re.compile(r"[+-]?[0-9]+")
_GO_INT64_LIMIT = 1 << 63
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


def parse_go_duration(value: object, *, field: str) -> int:
    """Parse a duration into signed nanoseconds.

    Accepts an ``int`` (seconds), a string of digits (seconds, optionally signed) or Go's
    duration syntax. ``bool`` and ``float`` are refused because they are almost certainly config
    mistakes (``1.5`` seconds is written ``"1.5s"``). Raises ``DurationError`` naming ``field``.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DurationError(
            field,
            f"{_quote(value)} is not a duration; "
            "use whole seconds (e.g. 90) or a Go duration such as '90s', '1h30m' or '500ms'",
        )
    if isinstance(value, int):
        return _check_range(value * NANOSECONDS_PER_SECOND, value, field)
    text = value.strip()
    if not text:
        raise DurationError(field, f"{_quote(value)} is not a duration: the value is empty")
    if _INTEGER_SECONDS_RE.fullmatch(text):
        digits = text.lstrip("+-")
        seconds = _to_int(digits, value, field) * (-1 if text.startswith("-") else 1)
        return _check_range(seconds * NANOSECONDS_PER_SECOND, value, field)
    return _check_range(_parse_go_syntax(text, value, field), value, field)


def parse_duration(value: object, *, field: str) -> int:
    """Parse a non-negative duration into whole seconds, a sub-second remainder rounded up
    (what timers use: ``"1.2s"`` waits 2 s, ``"50ms"`` 1 s)."""
    nanoseconds = parse_go_duration(value, field=field)
    if nanoseconds < 0:
        raise DurationError(field, f"{_quote(value)} must not be negative")
    return -(-nanoseconds // NANOSECONDS_PER_SECOND)  # integer ceiling division


#: The product's own delay settings (partition defaults) are whole seconds, written as seconds
#: or as whole h, m and s in that order; queue properties take Go's full duration syntax.
WHOLE_SECONDS_PATTERN = r"^\s*[0-9]+(h|m|s|h[0-9]+m|h[0-9]+s|m[0-9]+s|h[0-9]+m[0-9]+s)?\s*$"


def parse_whole_seconds(value: object, *, field: str) -> int:
    """A whole-second setting (API and console): an integer, or text matching
    ``WHOLE_SECONDS_PATTERN`` (``90``, ``90s``, ``1h30m``); no fractions and no ms."""
    seconds = parse_duration(value, field=field)
    if isinstance(value, str) and not re.fullmatch(WHOLE_SECONDS_PATTERN, value):
        raise DurationError(
            field,
            f"{value!r}: this setting is whole seconds: write e.g. 90, '90s' or '1h30m' "
            "(units h, m, s in that order)",
        )
    return seconds


def duration_spelling(value: object, *, field: str) -> str:
    """The spelling a duration is stored, shown and exported in: always with a unit.

    Integer seconds (``60``, ``"60"``) become ``"60s"``; a Go duration is kept as written (minus
    surrounding blanks), since Go reads it exactly as this product does and the admin's
    ``"1h30m"`` reads better than any rewrite. Raises ``DurationError`` when ``value`` is not a
    duration at all.
    """
    parse_go_duration(value, field=field)
    if isinstance(value, int):
        return f"{value}s"
    text = str(value).strip()
    if _INTEGER_SECONDS_RE.fullmatch(text):
        sign = "-" if text.startswith("-") else ""
        return f"{sign}{int(text.lstrip('+-'))}s"
    return text


def _parse_go_syntax(text: str, original: str, field: str) -> int:
    """``[-+]?([0-9]*(\\.[0-9]*)?[a-zµμ]+)+`` with Go's arithmetic (see ``time.ParseDuration``)."""
    negative = text[0] == "-"
    rest = text[1:] if text[0] in "+-" else text
    if rest == "0":
        return 0
    if not rest:
        raise DurationError(field, f"{_quote(original)} is not a duration")
    total = 0
    while rest:
        if not (rest[0] == "." or (rest[0].isascii() and rest[0].isdigit())):
            raise DurationError(
                field,
                f"{_quote(original)} is not a duration; use e.g. '90s', '1h30m', '1.5m' or '500ms'",
            )
        whole_digits, rest = _leading_digits(rest)
        fraction_digits = ""
        if rest.startswith("."):
            fraction_digits, rest = _leading_digits(rest[1:])
        if not whole_digits and not fraction_digits:
            raise DurationError(field, f"{_quote(original)}: a '.' without digits")
        unit_end = 0
        while unit_end < len(rest) and not (
            rest[unit_end] == "." or (rest[unit_end].isascii() and rest[unit_end].isdigit())
        ):
            unit_end += 1
        unit, rest = rest[:unit_end], rest[unit_end:]
        if not unit:
            number = whole_digits + (f".{fraction_digits}" if fraction_digits else "")
            raise DurationError(
                field, f"{_quote(original)}: the number {number} has no unit ({_UNITS_TEXT})"
            )
        scale = _UNIT_NANOSECONDS.get(unit)
        if scale is None:
            raise DurationError(
                field, f"{_quote(original)}: unknown unit {_quote(unit)}; use {_UNITS_TEXT}"
            )
        total += _to_int(whole_digits or "0", original, field) * scale
        total += _fraction_nanoseconds(fraction_digits, scale)
        if total > _MAX_NANOSECONDS:
            raise DurationError(field, f"{_quote(original)} is too large ({_MAXIMUM})")
    return -total if negative else total


def _leading_digits(text: str) -> tuple[str, str]:
    end = 0
    while end < len(text) and text[end].isascii() and text[end].isdigit():
        end += 1
    return text[:end], text[end:]


def _fraction_nanoseconds(digits: str, scale: int) -> int:
    """The fraction's share of one unit, as Go computes it: the digits as an integer (digits
    past int64's range ignored), times ``unit / 10**len`` in float64, truncated."""
    value, divisor = 0, 1.0
    for char in digits:
        following = value * 10 + int(char)
        if following > _GO_INT64_LIMIT or value > (_GO_INT64_LIMIT - 1) // 10:
            break
        value, divisor = following, divisor * 10
    return int(float(value) * (float(scale) / divisor)) if value else 0


def _to_int(digits: str, original: object, field: str) -> int:
    """Convert a digit string, refusing huge ones before ``int()`` has to deal with them."""
    if len(digits.lstrip("0")) > _MAX_DIGITS:
        raise DurationError(field, f"{_quote(original)} is too large ({_MAXIMUM})")
    return int(digits)


def _check_range(nanoseconds: int, original: object, field: str) -> int:
    if abs(nanoseconds) > _MAX_NANOSECONDS:
        raise DurationError(field, f"{_quote(original)} is too large ({_MAXIMUM})")
    return nanoseconds


def _quote(value: object) -> str:
    """``repr(value)`` for messages, shortened so a huge input cannot flood or break them.

    ``repr`` of an int with more than 4300 digits raises, so such ints are described instead.
    """
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."


def format_duration(seconds: int) -> str:
    """Format whole seconds as a Go duration without zero parts ("1h30m", "45s", "0s").

    Used for the product's own whole-second settings and timer texts. The result is valid Go
    syntax, accepted by ``parse_duration``, and gives back the same number of seconds.
    """
    if seconds < 0:
        raise ValueError(f"cannot format a negative duration: {seconds}")
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{amount}{unit}" for amount, unit in parts if amount)
