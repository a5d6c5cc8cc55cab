"""A config as it is saved: each duration property spelt one way, so equal values compare
equal and an export reads the same to YuniKorn."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache

from preemption.config import DURATION_PROPERTIES, PartitionConfig, QueueConfig
from preemption.durations import DurationError, duration_spelling


def normalized_config(config: PartitionConfig) -> PartitionConfig:
    """``config`` with every duration property in its stored spelling (``duration_spelling``:
    integer seconds get their unit, ``60`` -> ``60s``), so what is saved, shown and exported
    means the same to YuniKorn as to this product. Values that are not durations are left for
    validation to report."""
    queues = tuple(_normalized_queue(queue) for queue in config.queues)
    if all(map(operator.is_, queues, config.queues)):
        return config
    return replace(config, queues=queues)


def _normalized_queue(queue: QueueConfig) -> QueueConfig:
    properties = normalized_properties(queue.properties)
    return queue if properties is queue.properties else replace(queue, properties=properties)


def normalized_properties(properties: Mapping[str, str]) -> Mapping[str, str]:
    """``properties`` with each duration property given its unit (see ``normalized_config``);
    ``properties`` itself when every one already has it."""
    changed: dict[str, str] | None = None
    for key in DURATION_PROPERTIES:
        value = properties.get(key)
        if isinstance(value, str):
            spelled = _spelling(value, key)
            if spelled is not None and spelled != value:
                if changed is None:
                    changed = dict(properties)
                changed[key] = spelled
    return properties if changed is None else changed


@lru_cache(maxsize=4096)
def _spelling(value: str, key: str) -> str | None:
    """``duration_spelling`` of a text value (None: not a duration), remembered like
    ``_duration_seconds``."""
    try:
        return duration_spelling(value, field=key)
    except DurationError:
        return None
