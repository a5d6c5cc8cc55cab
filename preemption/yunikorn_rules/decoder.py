"""The Go types of the kept keys, read the way YuniKorn's strict YAML decoder (go-yaml v3 with
``KnownFields``) reads them into its structs: bool, uint64, string, struct, slice, name list and
resource quantities. ``Decoder`` is the base of every rule family: it holds the config being
checked and collects the errors and warnings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from preemption import resources
from preemption.config import PartitionConfig
from preemption.errors import ConfigError
from preemption.yunikorn_rules.parsed import ParsedQueue
from preemption.yunikorn_rules.wording import joined, listed, shown

#: Largest ``uint64`` (maxapplications, application.unschedasks.backoff).
UINT64_MAX = 2**64 - 1
#: YuniKorn's quantity grammar: digits, optional blanks, an optional suffix (after trimming).
_QUANTITY = re.compile(r"([0-9]+)[\t\n\f\r ]*([mkKMGTPE]i?)?")
_QUANTITY_SUFFIXES = ("", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


class Decoder:
    """Reads the kept keys' types and collects what is wrong; the rule families add the rules."""

    def __init__(self, config: PartitionConfig) -> None:
        self.config = config
        self.errors: list[ConfigError] = []
        self.warnings: list[ConfigError] = []
        self.queues: dict[str, ParsedQueue] = {}
        self.children: dict[str, list[str]] = {}

    def error(self, owner: str | None, at: str, message: str) -> None:
        self.errors.append(ConfigError(owner, at, message))

    def warn(self, owner: str | None, at: str, message: str) -> None:
        self.warnings.append(ConfigError(owner, at, message))

    def _flag(self, owner: str | None, at: str, value: object) -> bool | None:
        """A Go ``bool``: true or false (absent or null is false).

        Stricter than go-yaml, which also reads the strings ``yes``/``on``/``y`` (and their
        opposites) into a bool: a quoted word is text, and saying so is clearer than guessing.
        """
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        self.error(owner, at, f"must be true or false, not {shown(value)}")
        return None

    def _count(self, owner: str | None, at: str, value: object) -> int | None:
        """A Go ``uint64`` (absent or null is 0).

        Stricter than go-yaml, which truncates a float such as 2.5 to 2: a count is written as a
        whole number.
        """
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX:
            return value
        self.error(owner, at, f"must be a whole number from 0 to {UINT64_MAX}, not {shown(value)}")
        return None

    def _text(self, owner: str | None, at: str, value: object) -> str | None:
        """A Go ``string`` (absent or null is "").

        go-yaml turns any scalar into text, but the text it gets is the one in the file, and the
        product only has what PyYAML made of it: ``yes`` became True and ``1.50`` became 1.5. An
        export would write ``true`` and ``1.5``, which YuniKorn reads differently, so a boolean
        or a float where text belongs is refused with a hint to quote it. A whole number is
        accepted as its digits (``name: 2024`` is common and reads the same to both).
        """
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
            return str(value)
        if isinstance(value, bool | int | float):
            self.error(owner, at, f"must be text, not {shown(value)}: put it in quotes")
        else:
            self.error(owner, at, f"must be text, not {shown(value)}")
        return None

    def _fields(
        self, owner: str | None, at: str, value: object, keys: tuple[str, ...], what: str
    ) -> Mapping[str, Any] | None:
        """A Go struct: a mapping with only the struct's keys (absent or null is empty)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(
                owner,
                at,
                f"{what} must be a mapping with the keys {listed(keys)}, not {shown(value)}",
            )
            return None
        for key in value:
            if not isinstance(key, str):
                self.error(owner, at, f"{what} keys must be text, not {shown(key)}")
            elif key not in keys:
                hint = (
                    f" (keys are case-sensitive: write {key.lower()!r})"
                    if key.lower() in keys
                    else ""
                )
                self.error(
                    owner,
                    joined(at, key),
                    f"unknown key {shown(key)} in {what}; allowed: {listed(keys)}{hint}",
                )
        return value

    def _list(self, owner: str | None, at: str, value: object, what: str) -> list[Any] | None:
        """A Go slice: a list (absent or null is empty)."""
        if value is None:
            return []
        if isinstance(value, list | tuple):
            return list(value)
        self.error(owner, at, f"must be a list of {what}, not {shown(value)}")
        return None

    def _name_list(
        self, owner: str | None, at: str, value: object, what: str
    ) -> list[tuple[str, str]]:
        """A Go ``[]string`` of names: each text entry with its own field.

        go-yaml silently drops a null entry; it is refused here as the slip it almost always is.
        """
        items = self._list(owner, at, value, what)
        names: list[tuple[str, str]] = []
        for index, item in enumerate(items or []):
            where = f"{at}[{index}]"
            if item is None:
                self.error(owner, where, f"is empty: each entry must be one of the {what}")
                continue
            text = self._text(owner, where, item)
            if text is not None:
                names.append((text, where))
        return names

    def _quantities(self, owner: str | None, at: str, value: object) -> dict[str, int] | None:
        """A Go ``map[string]string`` of resource quantities, parsed to canonical units.

        The text must follow YuniKorn's grammar, which is narrower than the product's for queue
        resources (whole numbers only, ``m`` only for vcore) because it is exported verbatim.
        None when any entry is wrong (each is reported).
        """
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(
                owner,
                at,
                f"must be a mapping of resource name to quantity, not {shown(value)}",
            )
            return None
        parsed: dict[str, int] = {}
        sound = True
        for name, quantity in value.items():
            if not isinstance(name, str) or not name:
                self.error(owner, at, f"resource names must be non-empty text, not {shown(name)}")
                sound = False
                continue
            where = joined(at, name)
            amount, problem = _kept_quantity(quantity, name)
            if problem is not None:
                self.error(owner, where, problem)
                sound = False
            elif amount is not None:
                parsed[name] = amount
        return parsed if sound else None


def _kept_quantity(value: object, resource: str) -> tuple[int | None, str | None]:
    """``(canonical amount, None)`` or ``(None, why not)`` for one quantity kept verbatim.

    The text must match YuniKorn's grammar (``10``, ``10Gi``, ``10 Gi``, ``500m`` for vcore); the
    number itself is then computed by ``preemption.resources``.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        return (
            None,
            f"{shown(value)} is not a quantity; use a whole number such as 10 or '10Gi'",
        )
    if isinstance(value, int):
        if value < 0:
            return None, f"{shown(value)} must not be negative"
        if value > resources.MAX_QUANTITY:
            return None, f"{shown(value)} is too large (maximum is {resources.MAX_QUANTITY})"
    text = str(value).strip()
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None, (
            f"{shown(value)} is not a quantity YuniKorn reads: a whole number with an optional "
            "suffix (k M G T P E, Ki Mi Gi Ti Pi Ei; m for vcore only), e.g. '10Gi'"
        )
    number, suffix = match.group(1).lstrip("0") or "0", match.group(2) or ""
    if suffix not in _QUANTITY_SUFFIXES and not (suffix == "m" and resource == resources.VCORE):
        return (
            None,
            f"unknown suffix {shown(suffix)} in {shown(value)}; allowed: k M G T P E, "
            "Ki Mi Gi Ti Pi Ei (and m for vcore)",
        )
    try:
        amount = resources.parse_quantity(number + suffix, resource=resource, field=resource)
    except resources.QuantityError as exc:
        return None, exc.message
    return amount, None
