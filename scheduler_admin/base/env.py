"""Typed reading of environment variables.

Settings come only from the environment (STYLE.md habit 9). Every reader parses into a type and
raises ``ImproperlyConfigured`` naming the variable when the value cannot be parsed, so a typo in a
deployment fails at start-up instead of silently falling back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class Env:
    """Reads typed values from a mapping (``os.environ`` by default; tests pass their own)."""

    def __init__(self, source: Mapping[str, str] | None = None) -> None:
        self._source = os.environ if source is None else source

    def raw(self, name: str) -> str | None:
        """The stripped value, or None when unset or blank (blank means "use the default")."""
        value = self._source.get(name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def str(self, name: str, default: str) -> str:
        value = self.raw(name)
        return default if value is None else value

    def required_str(self, name: str) -> str:
        value = self.raw(name)
        if value is None:
            raise ImproperlyConfigured(f"{name} must be set in the environment")
        return value

    def bool(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true or false)")

    def int(self, name: str, default: int, *, minimum: int | None = None) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
        return number

    def list(self, name: str, default: list[str]) -> list[str]:
        """A comma-separated list; empty items are dropped."""
        value = self.raw(name)
        if value is None:
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.str(name, default)
        if value not in choices:
            raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}")
        return value
