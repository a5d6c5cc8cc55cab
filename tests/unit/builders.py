"""Terse builders for partition configs in unit tests.

``queue("root.a.b", max={"memory": 10 * GI})`` derives parent and name from the path;
``config(queue("root.a"), miss_percent=5)`` adds the root queue unless one is given and passes
the keywords on to ``PartitionSettings`` (the partition name defaults to ``default``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preemption.config import ROOT, PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import ConfigError

KI = 1024
MI = 1024**2
GI = 1024**3


def queue(
    path: str,
    *,
    guaranteed: Mapping[str, int] | None = None,
    max: Mapping[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> QueueConfig:
    parent, _, name = path.rpartition(".")
    return QueueConfig(
        path=path,
        parent=parent or None,
        name=name,
        guaranteed=dict(guaranteed or {}),
        max=dict(max or {}),
        properties=dict(properties or {}),
        extra=dict(extra or {}),
    )


def config(*queues: QueueConfig, name: str = "default", **settings: Any) -> PartitionConfig:
    if not any(q.path == ROOT for q in queues):
        queues = (queue(ROOT), *queues)
    return PartitionConfig(settings=PartitionSettings(name=name, **settings), queues=queues)


def locations(errors: list[ConfigError]) -> list[str]:
    return sorted(error.location for error in errors)


def only_error(errors: list[ConfigError]) -> ConfigError:
    """The single error of ``errors``; fails with the whole list otherwise."""
    assert len(errors) == 1, [str(error) for error in errors]
    return errors[0]
