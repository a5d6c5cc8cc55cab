"""The partition's settings: its name, the delays and switches, the engine tunables kept as
settings (SPEC 4.3), and the kept YuniKorn keys of the partition and its queues, which must be
storable JSON data."""

from __future__ import annotations

from collections.abc import Mapping

from preemption.config import (
    APPROVAL_MODES,
    ASK_POLICIES,
    ENFORCEMENT_MODES,
    MAX_DEVIATION_PERCENT,
    MAX_EVICTIONS_PER_MINUTE_LIMIT,
    MAX_VICTIMS_LIMIT,
    VICTIM_STRATEGIES,
    PartitionSettings,
    plain_data_problems,
)
from preemption.durations import MAX_DURATION
from preemption.errors import ConfigError
from preemption.hierarchy.structure import NAME_PATTERN


def settings_errors(settings: PartitionSettings) -> list[ConfigError]:
    errors: list[ConfigError] = []
    if not isinstance(settings.name, str) or not NAME_PATTERN.fullmatch(settings.name):
        errors.append(ConfigError(None, "name", f"{settings.name!r} is not a valid name"))
    if not is_int(settings.miss_percent) or not 0 <= settings.miss_percent <= 100:
        errors.append(ConfigError(None, "miss_percent", "must be an integer from 0 to 100"))
    for key in ("default_preemption_delay", "daemonset_preemption_delay"):
        value = getattr(settings, key)
        if not is_int(value) or not 0 <= value <= MAX_DURATION:
            errors.append(
                ConfigError(
                    None,
                    key,
                    f"must be a whole number of seconds >= 0 and <= {MAX_DURATION} "
                    "(about 68 years)",
                )
            )
    if settings.ask_policy not in ASK_POLICIES:
        errors.append(ConfigError(None, "ask_policy", f"must be one of {', '.join(ASK_POLICIES)}"))
    if settings.enforcement not in ENFORCEMENT_MODES:
        errors.append(
            ConfigError(None, "enforcement", f"must be one of {', '.join(ENFORCEMENT_MODES)}")
        )
    if settings.approval not in APPROVAL_MODES:
        errors.append(ConfigError(None, "approval", f"must be one of {', '.join(APPROVAL_MODES)}"))
    pace = settings.max_evictions_per_minute
    if not is_int(pace) or not 0 <= pace <= MAX_EVICTIONS_PER_MINUTE_LIMIT:
        errors.append(
            ConfigError(
                None,
                "max_evictions_per_minute",
                f"must be an integer from 0 (unlimited) to {MAX_EVICTIONS_PER_MINUTE_LIMIT}",
            )
        )
    for key in ("preemption_enabled", "quota_preemption_enabled", "soft_eviction"):
        if not isinstance(getattr(settings, key), bool):
            errors.append(ConfigError(None, key, "must be true or false"))
    errors.extend(_option_errors(settings))
    errors.extend(extra_errors(None, settings.extra))
    return errors


def _option_errors(settings: PartitionSettings) -> list[ConfigError]:
    """The engine tunables kept as settings (SPEC 4.3): a non-empty list of distinct
    strategies, and counts in their ranges."""
    errors: list[ConfigError] = []
    strategies = settings.victim_strategy
    if not isinstance(strategies, tuple) or not strategies:
        errors.append(
            ConfigError(
                None,
                "victim_strategy",
                f"must be a non-empty list of {', '.join(VICTIM_STRATEGIES)}",
            )
        )
    else:
        for i, strategy in enumerate(strategies):
            if strategy not in VICTIM_STRATEGIES:
                errors.append(
                    ConfigError(
                        None,
                        f"victim_strategy[{i}]",
                        f"must be one of {', '.join(VICTIM_STRATEGIES)}",
                    )
                )
        if len(set(map(repr, strategies))) != len(strategies):
            errors.append(ConfigError(None, "victim_strategy", "lists a strategy twice"))
    if not is_int(settings.deviation_percent) or not (
        0 <= settings.deviation_percent <= MAX_DEVIATION_PERCENT
    ):
        errors.append(
            ConfigError(
                None, "deviation_percent", f"must be an integer from 0 to {MAX_DEVIATION_PERCENT}"
            )
        )
    if not is_int(settings.max_victims) or not 1 <= settings.max_victims <= MAX_VICTIMS_LIMIT:
        errors.append(
            ConfigError(None, "max_victims", f"must be an integer from 1 to {MAX_VICTIMS_LIMIT}")
        )
    return errors


def extra_errors(queue: str | None, extra: Mapping[str, object]) -> list[ConfigError]:
    """Kept YuniKorn keys must be storable JSON data (``config.plain_data_problems``)."""
    if type(extra) is dict and not extra:
        return []  # most queues keep nothing
    return [
        ConfigError(queue, where, message)
        for where, message in plain_data_problems(dict(extra), "extra")
    ]


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
