"""The engine's copies of the limits agree with ``scheduler_admin.limits`` (the engine may not
import Django, so it mirrors them; a config it accepts must fit the columns it is stored in)."""

from __future__ import annotations

from preemption import config, durations, hierarchy
from scheduler_admin import limits


def test_the_engine_mirrors_the_column_limits() -> None:
    assert config.QUEUE_PATH_MAX_LENGTH == limits.QUEUE_PATH_MAX_LENGTH
    assert config.PROPERTY_MAX_LENGTH == limits.PROPERTY_MAX_LENGTH
    assert config.RESOURCE_NAME_MAX_LENGTH == limits.RESOURCE_NAME_MAX_LENGTH
    assert config.DOCUMENT_MAX_DEPTH == limits.DOCUMENT_MAX_DEPTH
    assert durations.MAX_DURATION == limits.DURATION_MAX_SECONDS == limits.POSITIVE_INT_MAX


def test_queue_names_are_as_long_as_their_column() -> None:
    longest = "q" * limits.QUEUE_NAME_MAX_LENGTH
    assert hierarchy.NAME_PATTERN.fullmatch(longest)
    assert not hierarchy.NAME_PATTERN.fullmatch(longest + "q")
