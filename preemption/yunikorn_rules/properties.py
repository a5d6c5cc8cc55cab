"""The queue properties YuniKorn parses when it applies a queue: ``application.sort.policy``,
``application.sort.priority``, ``priority.policy``, ``priority.offset`` and
``application.unschedasks.backoff``. YuniKorn logs a bad value and falls back to its default; an
admin console says no instead. The duration properties and ``preemption.policy`` are the
product's own and checked in ``preemption.hierarchy``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from preemption.yunikorn_rules.decoder import UINT64_MAX, Decoder
from preemption.yunikorn_rules.wording import case_hint, shown

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PROPERTY_SORT_POLICY = "application.sort.policy"
PROPERTY_SORT_PRIORITY = "application.sort.priority"
PROPERTY_PRIORITY_POLICY = "priority.policy"
PROPERTY_PRIORITY_OFFSET = "priority.offset"
PROPERTY_BACKOFF = "application.unschedasks.backoff"
SORT_POLICIES = ("fifo", "fair")
DEPRECATED_SORT_POLICY = "stateaware"
#: ``strconv.ParseInt(s, 10, 32)`` and ``ParseUint(s, 10, 64)``: ASCII digits, a sign only for
#: the signed one, no blanks or underscores.
_SIGNED_DIGITS = re.compile(r"[+-]?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")


class PropertyRules(Decoder):
    """The recognised property values of a queue (and of a child template)."""

    def _properties(self, owner: str, prefix: str, properties: Mapping[str, Any]) -> None:
        """The recognised property values YuniKorn parses when it applies a queue (it logs a bad
        value and falls back to the default; an admin console says no instead)."""
        if not isinstance(properties, Mapping):
            return
        for key, check in PROPERTY_CHECKS.items():
            value = properties.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
                value = str(value)  # a template's whole number reads as its digits
            if not isinstance(value, str):
                continue  # absent, or a type error reported where the properties are parsed
            problem = check(value)
            if problem is not None:
                self.error(owner, f"{prefix}.{key}", problem)
            elif key == PROPERTY_SORT_POLICY and value == DEPRECATED_SORT_POLICY:
                self.warn(
                    owner,
                    f"{prefix}.{key}",
                    "'stateaware' is deprecated: YuniKorn sorts applications as 'fifo' instead",
                )


def _sort_policy_problem(value: str) -> str | None:
    """``fifo``, ``fair`` or the deprecated ``stateaware``, compared case-sensitively ("" is the
    default): YuniKorn falls back to fifo on anything else, e.g. ``FAIR``."""
    if value in ("", *SORT_POLICIES, DEPRECATED_SORT_POLICY):
        return None
    hint = case_hint(value, SORT_POLICIES)
    return f"{shown(value)} is not an application sort policy: use fifo or fair{hint}"


def _sort_priority_problem(value: str) -> str | None:
    if value.lower() in ("enabled", "disabled"):
        return None
    return f"{shown(value)} must be enabled or disabled"


def _priority_policy_problem(value: str) -> str | None:
    if value.lower() in ("", "default", "fence"):
        return None
    return f"{shown(value)} is not a priority policy: use default or fence"


def _priority_offset_problem(value: str) -> str | None:
    # The length guard keeps int() away from huge digit strings (it refuses past 4300 digits).
    digits = value.lstrip("+-").lstrip("0")
    if (
        _SIGNED_DIGITS.fullmatch(value)
        and len(digits) <= 10
        and INT32_MIN <= int(value) <= INT32_MAX
    ):
        return None
    return f"{shown(value)} must be a whole number from {INT32_MIN} to {INT32_MAX}"


def _backoff_problem(value: str) -> str | None:
    if _DIGITS.fullmatch(value) and len(value.lstrip("0")) <= 20 and int(value) <= UINT64_MAX:
        return None
    return f"{shown(value)} must be a whole number from 0 to {UINT64_MAX}"


PROPERTY_CHECKS = {
    PROPERTY_SORT_POLICY: _sort_policy_problem,
    PROPERTY_SORT_PRIORITY: _sort_priority_problem,
    PROPERTY_PRIORITY_POLICY: _priority_policy_problem,
    PROPERTY_PRIORITY_OFFSET: _priority_offset_problem,
    PROPERTY_BACKOFF: _backoff_problem,
}
