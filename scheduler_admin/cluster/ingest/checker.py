"""Reading typed values out of a pushed cluster-state body, every problem kept with its path.

``Checker`` is the parser's toolbox (``parsing`` says which field is read how): texts bounded by
the ``scheduler_admin.base.limits`` constant of their column and free of NUL and lone surrogates,
integers within their column's range, ISO 8601 times kept in UTC, resource sets parsed once per
distinct shape. What it accepts always fits its column, so a checked body always writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from preemption import resources as quantities
from preemption.model import DEFAULT_CREATED_AT
from scheduler_admin.base.limits import CLUSTER_ID_MAX_LENGTH, RESOURCE_NAME_MAX_LENGTH

#: Longest ISO 8601 time worth parsing (``2026-01-01T12:00:00.123456+05:30`` is 32).
_TIME_MAX_LENGTH = 64
#: Longest key or value quoted in an error message or shown in an error path.
_QUOTE_MAX_LENGTH = 80


def quote(value: object) -> str:
    """``repr`` of a value for a message, shortened: never echoes a NUL, a lone surrogate or a
    megabyte of text into an error body (``repr`` escapes the first two)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        text = f"an integer of {value.bit_length()} bits"  # repr fails past 4,300 digits
    elif isinstance(value, str | int | float | bool):
        text = repr(value)
    else:
        text = type(value).__name__
    return text if len(text) <= _QUOTE_MAX_LENGTH else text[: _QUOTE_MAX_LENGTH - 3] + "..."


def text_problem(value: str, limit: int) -> str | None:
    """Why ``value`` cannot be stored as text of at most ``limit`` characters, or None.

    PostgreSQL text and jsonb refuse NUL, and a lone surrogate (``"\\ud800"``, which JSON can
    spell) cannot be encoded in UTF-8: both would fail in the database, half-way through a
    write, rather than here.
    """
    if len(value) > limit:
        return f"must be at most {limit} characters"
    if "\x00" in value:
        return "must not contain NUL characters"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode text (it holds a lone surrogate)"
    return None


def is_plain(value: object, limit: int) -> bool:
    """True for a non-empty str that is stored as is: the checker's fast path."""
    return (
        type(value) is str and 0 < len(value) <= limit and value.isascii() and "\x00" not in value
    )


class Checker:
    """Reads typed values out of the body, collecting every error with its path.

    Every text is bounded by the ``scheduler_admin.base.limits`` constant its column uses and free
    of NUL and lone surrogates; every integer is within its column's range; so a body the
    checker accepts always writes (the columns use the same constants).
    """

    def __init__(self, leaves: set[str] | None = None, nodes: set[str] | None = None) -> None:
        self.errors: dict[str, list[str]] = {}
        #: The partition's leaf queues and the nodes an item may name (stored or in the body).
        self.leaves = leaves or set()
        self.nodes = nodes or set()
        # Thousands of tasks share a handful of shapes ({"memory": "2Gi", "vcore": "500m"}):
        # parse each shape once. Only valid shapes are kept (errors carry each item's path).
        self._parsed: dict[tuple[tuple[object, object], ...], dict[str, int]] = {}
        # Tasks of one job are created in the same second: parse each time text once.
        self._times: dict[str, datetime] = {}

    @cached_property
    def leaf_spelling(self) -> dict[str, str]:
        """YuniKorn reports queue paths lower-cased (``root.queuea`` for a configured
        ``root.queueA``); names are unique regardless of case, so the match is unambiguous.
        Built on the first path that is not a leaf as spelt: most pushes never need it."""
        return {leaf.lower(): leaf for leaf in self.leaves}

    def fail(self, path: str, message: str) -> None:
        self.errors.setdefault(path or "non_field_errors", []).append(message)

    def mapping(self, value: object, path: str, keys: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, "must be an object")
            return {}
        if not keys.issuperset(value):
            for key in value:
                if key not in keys:
                    self._unknown(key, path)
        return value

    def _unknown(self, key: object, path: str) -> None:
        if isinstance(key, str) and is_plain(key, _QUOTE_MAX_LENGTH):
            self.fail(f"{path}.{key}" if path else key, "unknown field")
        else:  # not showable as a path: named (escaped, shortened) in the parent's message
            self.fail(path, f"unknown field {quote(key)}")

    def items(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, "must be a list")
            return []
        return value

    def text(
        self,
        value: object,
        path: str,
        *,
        required: bool = True,
        limit: int = CLUSTER_ID_MAX_LENGTH,
    ) -> str:
        if is_plain(value, limit):
            return value  # type: ignore[return-value]
        if value is None or value == "":
            if required:
                self.fail(path, "is required")
            return ""
        if not isinstance(value, str):
            self.fail(path, "must be a string")
            return ""
        problem = text_problem(value, limit)
        if problem:
            self.fail(path, problem)
            return ""
        return value

    def integer(self, value: object, path: str, default: int, minimum: int, maximum: int) -> int:
        if value is None:
            return default
        if type(value) is not int:  # bool is an int subclass; floats may have lost digits
            self.fail(path, "must be an integer")
            return default
        if not minimum <= value <= maximum:
            self.fail(path, f"must be an integer from {minimum} to {maximum}")
            return default
        return value

    def boolean(self, value: object, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, "must be true or false")
            return default
        return value

    def known_resources(self, value: object) -> dict[str, int] | None:
        """The parsed resource set of a shape already seen (a copy), else None: the fast path
        of ``resources``, which needs no path."""
        shape = _shape(value)
        if shape is not None and shape in self._parsed:
            return dict(self._parsed[shape])
        return None

    def resources(self, value: object, path: str) -> dict[str, int]:
        shape = _shape(value)
        if shape is not None and shape in self._parsed:
            return dict(self._parsed[shape])
        if isinstance(value, Mapping) and not self._resource_names(value, path):
            return {}
        try:
            parsed = quantities.parse_resources(value, field=path)
        except quantities.ResourceErrors as exc:
            for error in exc.errors:
                self.fail(error.field, error.message)
            return {}
        if shape is not None:
            self._parsed[shape] = dict(parsed)
        return parsed

    def _resource_names(self, value: Mapping[object, object], path: str) -> bool:
        """Resource names are stored as JSON keys: text within the limit, no NUL, no lone
        surrogate. A bad name is reported at the mapping's path (it cannot be a path itself)."""
        good = True
        for name in value:
            if isinstance(name, str) and is_plain(name, RESOURCE_NAME_MAX_LENGTH):
                continue
            if not isinstance(name, str) or not name:
                problem = "must be a non-empty string"
            else:
                problem = text_problem(name, RESOURCE_NAME_MAX_LENGTH)
                if problem is None:
                    continue
            self.fail(path, f"resource name {quote(name)} {problem}")
            good = False
        return good

    def known_time(self, value: object) -> datetime | None:
        """The time a text already read stands for, else None: the fast path of ``time``."""
        return self._times.get(value) if type(value) is str else None

    def time(self, value: object, path: str) -> datetime:
        if value is None:
            return DEFAULT_CREATED_AT
        known = self.known_time(value)
        if known is not None:
            return known
        # fromisoformat stops at a NUL ("...00Z\x00junk" would parse): refuse such text first.
        if isinstance(value, str) and text_problem(value, _TIME_MAX_LENGTH) is None:
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                pass
            else:
                try:  # PostgreSQL stores offsets up to ±15:59 only: keep every time in UTC
                    if moment.tzinfo is None:
                        moment = moment.replace(tzinfo=UTC)
                    else:
                        moment = moment.astimezone(UTC)
                except (OverflowError, ValueError):
                    self.fail(path, "is out of the supported time range")
                    return DEFAULT_CREATED_AT
                self._times[value] = moment
                return moment
        self.fail(path, "must be an ISO 8601 time such as 2026-01-01T12:00:00Z")
        return DEFAULT_CREATED_AT

    def choice(self, value: object, path: str, choices: list[str], default: str) -> str:
        if value is None:
            return default
        if not isinstance(value, str) or value not in choices:
            self.fail(path, f"must be one of {', '.join(choices)}")
            return default
        return value


def _shape(value: object) -> tuple[tuple[object, object], ...] | None:
    """A hashable key for a resource mapping of plain strings and integers, else None."""
    if type(value) is not dict and not isinstance(value, Mapping):  # a dict: no ABC check
        return None
    items = tuple(value.items())
    for name, amount in items:
        if type(name) is not str or (type(amount) is not str and type(amount) is not int):
            return None
    return items
