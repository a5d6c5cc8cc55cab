"""A queue's property values the product reads: ``preemption.policy`` and the duration
properties, and properties that can be stored as text."""

from __future__ import annotations

from preemption.config import (
    DURATION_PROPERTIES,
    PREEMPTION_POLICIES,
    PROPERTY_MAX_LENGTH,
    PROPERTY_POLICY,
    PROPERTY_QUOTA_DELAY,
    QueueConfig,
    shown,
    text_problem,
)
from preemption.durations import DurationError, parse_go_duration
from preemption.errors import ConfigError


def property_errors(queue: QueueConfig) -> list[ConfigError]:
    """Properties that cannot be stored (not text, too long, NUL or surrogates) and invalid
    values of the recognised ones (policy, delays) of one queue."""
    errors: list[ConfigError] = []
    for key, value in queue.properties.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            name = shown(key) if isinstance(key, str) else type(key).__name__
            errors.append(ConfigError(queue.path, f"properties.{name}", "must be a string"))
            continue
        for what, text in (("name", key), ("value", value)):
            problem = text_problem(text)
            if problem is None and len(text) > PROPERTY_MAX_LENGTH:
                problem = f"must be at most {PROPERTY_MAX_LENGTH} characters"
            if problem:
                errors.append(
                    ConfigError(queue.path, f"properties.{shown(key)}", f"the {what} {problem}")
                )
    policy = queue.properties.get(PROPERTY_POLICY)
    if isinstance(policy, str) and policy.strip().lower() not in PREEMPTION_POLICIES:
        errors.append(
            ConfigError(
                queue.path,
                f"properties.{PROPERTY_POLICY}",
                f"{policy!r} is not one of {', '.join(PREEMPTION_POLICIES)}",
            )
        )
    for key in DURATION_PROPERTIES:
        value = queue.properties.get(key)
        if not isinstance(value, str):
            continue
        try:
            nanoseconds = parse_go_duration(value, field=key)
        except DurationError as exc:
            errors.append(ConfigError(queue.path, f"properties.{key}", exc.message))
            continue
        # YuniKorn refuses a delay <= 0 and falls back to its default; 0 is how a queue turns
        # quota preemption off, so only that one may be 0.
        if nanoseconds < 0:
            errors.append(
                ConfigError(queue.path, f"properties.{key}", f"{value!r} must not be negative")
            )
        elif nanoseconds == 0 and key != PROPERTY_QUOTA_DELAY:
            errors.append(
                ConfigError(queue.path, f"properties.{key}", f"{value!r}: must be more than 0s")
            )
    return errors
