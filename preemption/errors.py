"""The engine's answer to a config it refuses: one ``ConfigError`` per broken rule, and
``ConfigErrors`` raised with all of them at once.

Its own module because every checker reports with it (the tree's rules, YuniKorn's rules of the
kept keys, unknown resource types) and the services, the API and the console read it: each
imports it from here, so no checker has to import another only for its error type.
"""

from __future__ import annotations

from dataclasses import dataclass

from preemption.config import shown

__all__ = ["ConfigError", "ConfigErrors"]


@dataclass(frozen=True)
class ConfigError:
    """One broken rule. ``queue`` is the queue's path (None for partition settings) and ``field``
    names the value inside it (``max.memory``, ``properties.preemption.policy``, ``name``)."""

    queue: str | None
    field: str
    message: str
    #: A full location that replaces the computed one, e.g. a YAML path from an import.
    at: str | None = None

    @property
    def location(self) -> str:
        """Where the error is, with NUL and surrogates escaped (``config.shown``): a refused
        name may hold them, and they cannot be written into a response or a page."""
        if self.at is not None:
            return shown(self.at)
        if self.queue is None:
            return shown(f"partition.{self.field}" if self.field else "partition")
        queue = f"queues[{self.queue}]"
        return shown(f"{queue}.{self.field}" if self.field else queue)

    def __str__(self) -> str:
        return f"{self.location}: {shown(self.message)}"


class ConfigErrors(ValueError):
    """A config was refused; ``errors`` lists every problem found (never empty)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        super().__init__("; ".join(str(error) for error in errors))
        self.errors = errors
