"""What the queue page shows about one queue's settings: each effective value with where it comes
from.

The engine's ``Hierarchy`` already resolves the policy and the delays with their source queue;
only the effective max has no source there (it is a per-type minimum along the path), so that one
comes from ``bars.effective_max_sources``, which walks the path from root.
"""

from __future__ import annotations

from dataclasses import dataclass

from preemption import resources
from preemption.config import PROPERTY_DELAY, PROPERTY_POLICY, PROPERTY_QUOTA_DELAY
from preemption.hierarchy import PARENT_DELAY_WARNING, Effective, Hierarchy, config_notices
from scheduler_admin.web.bars import effective_max_sources


def exact_quantity(value: int | None, name: str) -> str:
    """The exact written form of a canonical quantity ("" for none), as forms and tables show."""
    return "" if value is None else resources.format_quantity(value, resource=name)


@dataclass(frozen=True)
class SettingRow:
    """One line of the "Effective settings" table."""

    name: str
    value: str
    source: str
    #: Path of the queue the value comes from when it is another queue (for a link), else "".
    source_queue: str = ""
    note: str = ""
    #: A quantity (with ``resource``), shown humanised with the exact ``value`` on hover.
    quantity: int | None = None
    resource: str = ""


def source_words(effective: Effective, path: str, *, default: str) -> tuple[str, str]:
    """(words, queue to link) for an ``Effective.source``: the queue itself, an ancestor, the
    partition, or the built-in default named by ``default``."""
    if effective.source == path:
        return "own value", ""
    if effective.source == "partition":
        return "partition default", ""
    if effective.source is None:
        return default, ""
    return f"inherited from {effective.source}", str(effective.source)


def setting_rows(hierarchy: Hierarchy, path: str, quota_enabled: bool) -> list[SettingRow]:
    """Effective preemption policy, delays and max of ``path``, each with its source."""
    rows: list[SettingRow] = []
    policy = hierarchy.effective_policy(path)
    words, link = source_words(policy, path, default="built-in default")
    rows.append(SettingRow(PROPERTY_POLICY, str(policy.value), words, link))

    delay = hierarchy.preemption_delay(path)
    words, link = source_words(delay, path, default="partition default")
    note = ""
    if any(n.queue == path for n in config_notices(hierarchy.config)):
        note = PARENT_DELAY_WARNING[0].upper() + PARENT_DELAY_WARNING[1:] + "."
    rows.append(
        SettingRow(
            PROPERTY_DELAY, hierarchy.duration_text(delay, PROPERTY_DELAY), words, link, note
        )
    )

    quota = hierarchy.effective_quota_delay(path)
    words, link = source_words(quota, path, default="not set anywhere on the path")
    seconds = int(quota.value or 0)
    note = ""
    if seconds and not quota_enabled:
        note = "Quota preemption is switched off for the partition, so no timer starts."
    elif not seconds:
        note = "Quota preemption is off for this queue: lowering its max starts no timer."
    value = hierarchy.duration_text(quota, PROPERTY_QUOTA_DELAY) if seconds else "off"
    rows.append(SettingRow(PROPERTY_QUOTA_DELAY, value, words, link, note))

    for name, (limit, step) in effective_max_sources(hierarchy, path).items():
        exact = resources.format_quantity(limit, resource=name)
        words = "own value" if step == path else f"inherited from {step}"
        link = "" if step == path else step
        rows.append(SettingRow(f"max {name}", exact, words, link, quantity=limit, resource=name))
    if not hierarchy.effective_max(path):
        rows.append(SettingRow("max", "no max", "no queue on the path sets a max"))
    return rows
