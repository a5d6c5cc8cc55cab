"""What the queue page shows about one queue's settings: each effective value with where it comes
from, and the usage / guaranteed / max bars.

The engine's ``Hierarchy`` already resolves the policy and the delays with their source queue;
only the effective max has no source there (it is a per-type minimum along the path), so that one
is computed here by walking the path from root.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from preemption import resources
from preemption.config import PROPERTY_DELAY, PROPERTY_POLICY, PROPERTY_QUOTA_DELAY
from preemption.hierarchy import PARENT_DELAY_WARNING, Effective, Hierarchy, config_notices
from scheduler_admin.web.common import human_quantity


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


def effective_max_sources(hierarchy: Hierarchy, path: str) -> dict[str, tuple[int, str]]:
    """For every limited type: (effective max, the queue on the path whose max sets it).

    The nearest queue wins a tie, because that is where an admin would change it."""
    result: dict[str, tuple[int, str]] = {}
    for step in hierarchy.path_from_root(path):
        for name, value in hierarchy.queues[step].max.items():
            if name not in result or value <= result[name][0]:
                result[name] = (value, step)
    return dict(sorted(result.items()))


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
    value = (
        hierarchy.duration_text(quota, PROPERTY_QUOTA_DELAY)
        if seconds
        else "0 (quota preemption off for this queue)"
    )
    rows.append(SettingRow(PROPERTY_QUOTA_DELAY, value, words, link, note))

    for name, (limit, step) in effective_max_sources(hierarchy, path).items():
        exact = resources.format_quantity(limit, resource=name)
        words = "own value" if step == path else f"inherited from {step}"
        rows.append(SettingRow(f"max {name}", exact, words, "" if step == path else step))
    if not hierarchy.effective_max(path):
        rows.append(SettingRow("max", "unlimited", "no queue on the path sets a max"))
    return rows


# --------------------------------------------------------------------------------------------
# The bar chart (server-rendered SVG) and its table of numbers
# --------------------------------------------------------------------------------------------

#: Geometry of the chart, in SVG user units.
LABEL_WIDTH = 150
BAR_WIDTH = 420
ROW_HEIGHT = 34
BAR_HEIGHT = 16
VALUE_WIDTH = 260


@dataclass(frozen=True)
class ChartRow:
    """One resource of the chart: the numbers (exact and short) and the bar geometry."""

    resource: str
    usage: int
    guaranteed: int | None
    max: int | None
    pending: int
    usage_text: str
    guaranteed_text: str
    max_text: str
    pending_text: str
    y: int
    text_y: int
    usage_width: float
    guaranteed_x: float | None
    max_x: float | None
    state: str  # "within" the guarantee, "over_guarantee", "over_max"

    @property
    def top(self) -> int:
        return self.y - 4

    @property
    def bottom(self) -> int:
        return self.y + BAR_HEIGHT + 4

    @property
    def summary(self) -> str:
        parts = [f"{self.resource}: usage {self.usage_text}"]
        parts.append(f"guaranteed {self.guaranteed_text}" if self.guaranteed is not None else "")
        parts.append(f"max {self.max_text}" if self.max is not None else "no max")
        return ", ".join(p for p in parts if p)


def chart_rows(
    usage: Mapping[str, int],
    guaranteed: Mapping[str, int],
    limit: Mapping[str, int],
    pending: Mapping[str, int],
) -> list[ChartRow]:
    """A bar per resource type that the queue uses, guarantees or limits. Each bar is scaled to
    the largest of its own numbers (so one huge memory value does not flatten the GPU bar);
    guaranteed and max are drawn as marker lines."""
    names = sorted(set(usage) | set(guaranteed) | set(limit) | set(pending))
    rows: list[ChartRow] = []
    for index, name in enumerate(names):
        used = usage.get(name, 0)
        guarantee = guaranteed.get(name)
        maximum = limit.get(name)
        scale = max(used, guarantee or 0, maximum or 0, 1)

        def x(value: int | None, scale: int = scale) -> float | None:
            return None if value is None else round(LABEL_WIDTH + BAR_WIDTH * value / scale, 1)

        # A type missing from the guarantee is guaranteed 0 (SPEC 3.1): any use is above it.
        if maximum is not None and used > maximum:
            state = "over_max"
        elif used > (guarantee or 0):
            state = "over_guarantee"
        else:
            state = "within"
        y = 8 + index * ROW_HEIGHT
        rows.append(
            ChartRow(
                resource=name,
                usage=used,
                guaranteed=guarantee,
                max=maximum,
                pending=pending.get(name, 0),
                usage_text=human_quantity(used, name),
                guaranteed_text=human_quantity(guarantee, name) if guarantee is not None else "",
                max_text=human_quantity(maximum, name) if maximum is not None else "",
                pending_text=human_quantity(pending.get(name, 0), name),
                y=y,
                text_y=y + BAR_HEIGHT - 3,
                usage_width=round(BAR_WIDTH * used / scale, 1),
                guaranteed_x=x(guarantee),
                max_x=x(maximum),
                state=state,
            )
        )
    return rows


def chart_geometry(rows: list[ChartRow]) -> dict[str, int]:
    """Sizes the template needs (it cannot do arithmetic)."""
    return {
        "width": LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH,
        "height": 16 + len(rows) * ROW_HEIGHT,
        "label_width": LABEL_WIDTH,
        "bar_width": BAR_WIDTH,
        "bar_height": BAR_HEIGHT,
        "value_x": LABEL_WIDTH + BAR_WIDTH + 10,
    }
