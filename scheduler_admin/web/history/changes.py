"""Config diffs laid out for reading: partition settings, queues added and removed, and the
changed fields of each queue with old -> new values.

The differences themselves come from ``preemption.config.diff_configs``, the same function the
revisions API and the audit log use; this module only groups and formats them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from preemption import resources
from preemption.config import FieldChange, PartitionConfig, QueueConfig, diff_configs
from preemption.durations import format_duration
from scheduler_admin.queues.models import ConfigRevision

_RESOURCE_FIELDS = ("guaranteed", "max")


@dataclass(frozen=True)
class FieldRow:
    """One changed field: old and new as exact text; for a resource field also the resource
    and the canonical values, which pages show humanised (``|quantity``)."""

    field: str
    old: str
    new: str
    resource: str = ""
    old_value: int | None = None
    new_value: int | None = None


@dataclass(frozen=True)
class QueueSummary:
    """An added or removed queue with the values it had, so a reader sees what came or went."""

    path: str
    guaranteed: dict[str, int]
    max: dict[str, int]
    properties: dict[str, str]


@dataclass
class Changes:
    settings: list[FieldRow] = field(default_factory=list)
    added: list[QueueSummary] = field(default_factory=list)
    removed: list[QueueSummary] = field(default_factory=list)
    queues: dict[str, list[FieldRow]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return (
            len(self.settings)
            + len(self.added)
            + len(self.removed)
            + sum(len(rows) for rows in self.queues.values())
        )


def compare(old: PartitionConfig, new: PartitionConfig) -> Changes:
    """What changes from ``old`` to ``new``, grouped for the page."""
    return group(diff_configs(old, new), old, new)


def against_previous(revision: ConfigRevision) -> tuple[ConfigRevision | None, Changes]:
    """A revision's changes against the one before it; the first revision is compared with an
    empty tree (every queue added), as the revisions API does."""
    base = (
        ConfigRevision.objects.filter(partition=revision.partition, number__lt=revision.number)
        .order_by("-number")
        .first()
    )
    config = revision.config()
    before = base.config() if base else replace(config, queues=())
    return base, compare(before, config)


def group(changes: list[FieldChange], old: PartitionConfig, new: PartitionConfig) -> Changes:
    grouped = Changes()
    old_queues, new_queues = old.queues_by_path(), new.queues_by_path()
    for change in changes:
        if change.queue is None:
            grouped.settings.append(_field_row(change))
        elif change.field == "queue" and change.old is None:
            grouped.added.append(_summary(new_queues[change.queue]))
        elif change.field == "queue":
            grouped.removed.append(_summary(old_queues[change.queue]))
        else:
            grouped.queues.setdefault(change.queue, []).append(_field_row(change))
    return grouped


def _summary(queue: QueueConfig) -> QueueSummary:
    return QueueSummary(queue.path, dict(queue.guaranteed), dict(queue.max), dict(queue.properties))


def _field_row(change: FieldChange) -> FieldRow:
    kind, _, resource = change.field.partition(".")
    row = FieldRow(change.field, show_field(change.field, change.old),
                   show_field(change.field, change.new))  # fmt: skip
    if kind in _RESOURCE_FIELDS and resource:
        return replace(row, resource=resource, old_value=_int_or_none(change.old),
                       new_value=_int_or_none(change.new))  # fmt: skip
    return row


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def show_field(name: str, value: Any) -> str:
    """A field's value as text: resource values in their exact quantity form ("400Gi",
    "1500m"), the partition's delays (whole seconds) as durations ("1m30s"), the rest by
    ``show``."""
    kind, _, resource = name.partition(".")
    number = _int_or_none(value)
    if kind in _RESOURCE_FIELDS and number is not None:
        return resources.format_quantity(number, resource=resource)
    if name.endswith("_delay") and number is not None and number >= 0:
        return format_duration(number)
    return show(value)


def show(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)
